"""The traces benchmark's account of Dossier's billed cost by epoch decision (harness/bench/traces_report.py)."""

from __future__ import annotations

import pytest

from harness.bench.billing import Bill
from harness.bench.traces_report import CallRow, StrategyCall, epoch_class, epoch_costs
from policy.epochs import prefix_change


@pytest.mark.parametrize("started, reason, expected", [
    (False, "continued", "continued"),
    (True, "first call of the participant on this branch", "first call of the participant on this branch"),
    (True, "prefix changed (changed: memory:3f2a, memory:77; new: message:9)", "prefix changed: changed memory"),
    (True, "prefix changed (new: tool_call:1 ...)", "prefix changed: new tool_call"),
    (True, "prefix changed (order)", "prefix changed: order"),
    (True, "the context would reach 9001 tokens (budget 8192)", "budget"),
    (True, "the appended events reached 2100 tokens (epoch_growth_tokens 2000)", "epoch_growth_tokens"),
    (True, "provider route changed from openai", "provider route changed"),
    (True, "a result appended as pending has arrived (tool_call:abc)", "a result appended as pending has arrived"),
    (True, "policy changed from dossier-default/6#5d7d1b10a1b8", "policy changed"),
])
def test_an_epoch_reason_reads_as_its_class_without_ids_or_sizes(started, reason, expected):
    assert epoch_class(started, reason) == expected


def _row(epoch: str | None, cost: float, written: int, tokens: int, calls: int = 20) -> CallRow:
    row = CallRow(trajectory="t", source="s", call=0, calls_in_trajectory=calls)
    row.strategies["dossier"] = StrategyCall(tokens, tokens, [], {"anthropic": Bill(tokens, 0, written, cost)},
                                             epoch=epoch)
    return row


def test_epoch_costs_split_the_billed_cost_and_the_writes_by_class_largest_first():
    rows = [_row("continued", 10.0, 0, 100), _row("continued", 20.0, 10, 300), _row("budget", 70.0, 90, 900)]
    costs = epoch_costs(rows, "dossier")
    assert list(costs) == ["budget", "continued"]
    assert costs["budget"] == {"calls": 1, "cost_share": 0.7, "written_share": 0.9, "tokens_per_call_mean": 900.0}
    assert costs["continued"]["calls"] == 2 and costs["continued"]["tokens_per_call_mean"] == 200.0
    assert epoch_costs([_row(None, 1.0, 0, 10)], "dossier") == {}  # a strategy without epochs


def test_the_classes_follow_the_reasons_the_policy_writes():
    """Built by the policy's own functions, not copied: a reworded reason would fall out of its class."""
    reason = prefix_change(["memory:a#1", "message:b#2"], ["memory:a#9", "message:b#2"])
    assert epoch_class(True, reason) == "prefix changed: changed memory"
