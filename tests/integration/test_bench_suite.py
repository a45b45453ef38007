"""The benchmark suite runs end to end on a tiny input and writes its tables, JSON, plots and index.

No timing is asserted: benchmarks measure, tests only check that they run.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.bench.suite import run_suite
from dossier.settings import Settings

import pytest

pytestmark = pytest.mark.slow  # the full tier only: runs a benchmark


async def test_the_suite_writes_tables_plots_and_an_index(tmp_path: Path, endpoints) -> None:
    results = await run_suite(Settings(), tmp_path, parts=["scenarios"], quick=True)
    assert [r.name for r in results] == ["scenarios"]
    for name in ("scenarios.md", "scenarios.json", "scenarios.png", "README.md", "runs.json"):
        assert (tmp_path / name).stat().st_size > 0
    data = json.loads((tmp_path / "scenarios.json").read_text())
    assert set(data["scenarios"]) == {"retry_critical_errors", "branch_isolation"}
    strategies = set(data["scenarios"]["branch_isolation"])
    assert {"dossier", "full_replay", "langchain_trim", "openai_tool_output_trimmer"} <= strategies
    # Dossier alone, scored on every fact (its record-id facts too), against legacy replay.
    alone = data["dossier_reduction"]["retry_critical_errors"]
    assert alone["required_missing"] == [] and alone["forbidden_present"] == []
    assert alone["required_total"] > data["scenarios"]["retry_critical_errors"]["dossier"]["required_total"]
    assert alone["reduction"] == round(1 - alone["assembled_tokens"] / alone["legacy_tokens"], 4)
    assert "| retry_critical_errors | 1," in (tmp_path / "scenarios.md").read_text()
    index = (tmp_path / "README.md").read_text()
    assert "Quick mode" in index and "![scenarios](scenarios.png)" in index
    assert (tmp_path / "scenarios.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
