"""The growth report says what its replay figures are: the median of a few runs, not a p50 of 30.

Runs on the committed ``bench-results/growth.json`` (no services): the report is rebuilt from it,
so ``python -m harness.bench.growth --from-json`` rewrites the Markdown and plots without the
25-minute run, and a regenerated table keeps the labels.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.bench.growth_report import GrowthReport

STORED = Path(__file__).resolve().parents[3] / "bench-results" / "growth.json"


def test_the_report_round_trips_through_its_json():
    text = STORED.read_text()
    assert GrowthReport.from_json(text).to_json() == text


def test_the_replay_column_is_labelled_by_what_was_measured():
    report = GrowthReport.from_json(STORED.read_text())
    markdown = report.to_markdown()
    assert "replay p50" not in markdown
    assert "| replay, median of n runs (load/build/count; n) |" in markdown
    runs = report.replay_runs()
    # The committed run: 3 replays per configuration up to 10k artifacts, 1 at 100k.
    assert {size: set(ns) for size, ns in runs.items()} == {100: {3}, 1_000: {3}, 10_000: {3}, 100_000: {1}}
    assert ("3 runs per configuration at 100, 1,000 and 10,000 artifacts; "
            "1 run per configuration at 100,000 artifacts") in markdown
    # A factor says which run counts it divides: every replay factor row, 3 runs at 1k over 1 at 100k.
    factors = re.findall(r"\| x[\d.]+ \((\d+) → (\d+)\) \|", markdown)
    assert len(factors) == 6 and set(factors) == {("3", "1")}


def test_the_committed_markdown_is_what_the_report_writes():
    report = GrowthReport.from_json(STORED.read_text())
    assert (STORED.parent / "growth.md").read_text() == report.to_markdown().rstrip() + "\n"
