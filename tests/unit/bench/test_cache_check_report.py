"""The cache check's summary: shares from call 2, the processed-token ratio, the worst call, the exact count."""

from __future__ import annotations

import argparse

import pytest

from harness.bench.cache_check import _interleave
from harness.bench.cache_check_report import CacheCheckReport, Sent
from harness.commands.bench_cache import register_cache_check


def _sent(strategy: str, call: int, bench: int, predicted: int, server: int, cached: int, rule: int | None = None,
          any_earlier: int | None = None) -> Sent:
    rule = cached if rule is None else rule
    return Sent("t1", strategy, call, [], bench_tokens=bench, predicted_cached=predicted, server_tokens=server,
                server_cached=cached, server_evaluated=server - cached, rule_cached=rule,
                rule_any_cached=rule if any_earlier is None else any_earlier, tokenized=server)


REPORT = CacheCheckReport([
    # First calls: the slot held the previous sequence's prompt; not compared with the per-participant prediction.
    _sent("full_replay", 0, 100, 0, 120, 30, rule=0, any_earlier=30),
    _sent("full_replay", 1, 200, 100, 240, 120),
    _sent("full_replay", 2, 300, 200, 360, 240),
    _sent("dossier", 0, 100, 0, 120, 119),
    _sent("dossier", 1, 150, 100, 180, 60, rule=119),
    _sent("dossier", 2, 200, 150, 240, 180),
])


def test_shares_and_processed_tokens_are_from_the_second_call_on() -> None:
    replay = REPORT.strategy_summary("full_replay")
    assert replay["calls_compared"] == 2
    assert replay["cached_share_observed"] == pytest.approx(360 / 600, abs=1e-4)
    assert replay["cached_share_predicted"] == pytest.approx(300 / 500, abs=1e-4)
    assert (replay["processed_observed"], replay["processed_predicted"]) == (240, 200)
    assert (replay["first_calls_cached_observed"], replay["first_calls_prompt_tokens_observed"]) == (30, 120)


def test_summary_names_the_worst_call_and_every_rule_mismatch() -> None:
    summary = REPORT.summary()
    ratio = summary["dossier_over_replay_processed"]
    assert ratio == {"observed": pytest.approx(180 / 240, abs=1e-4), "predicted": pytest.approx(100 / 200, abs=1e-4)}
    worst = summary["largest_disagreement"]
    assert (worst["strategy"], worst["call"]) == ("dossier", 1)  # observed 1/3, predicted 2/3
    rule = summary["rule_on_server_tokens"]
    assert (rule["calls"], rule["exact"]) == (6, 4)
    assert rule["mismatches"] == [
        {"trajectory": "t1", "strategy": "full_replay", "call": 0, "rule": 0, "any_earlier_prompt": 30, "cache_n": 30},
        {"trajectory": "t1", "strategy": "dossier", "call": 1, "rule": 119, "any_earlier_prompt": 119, "cache_n": 60}]
    assert rule["mismatches_explained_by_an_earlier_prompt"] == 1
    assert "4 of 6 requests (3 of 4 from call 2); of the 2 others, 1 are" in REPORT.to_markdown()
    assert REPORT.to_json()["calls"][0]["server_cached"] == 30


def test_interleave_takes_one_of_each_in_turn() -> None:
    assert _interleave([[1, 2, 3], [10], [20, 21]]) == [1, 10, 20, 2, 21, 3]


def test_the_command_refuses_a_non_positive_sample(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    register_cache_check(parser.add_subparsers())
    args = parser.parse_args(["cache-check", "--trajectories", "0"])
    assert args.handler(args) == 2
    assert "must be positive" in capsys.readouterr().err
