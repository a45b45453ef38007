"""`dossier bench traces` on a two-trajectory fixture, on real Postgres and S3."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.bench.traces_plots import write_plots
from harness.bench.traces import run_traces_with
from harness.commands.bench_traces import register_traces
from store.assemblies import get_context_assembly

FIXTURE = Path(__file__).parent / "data" / "bench_traces_fixture.jsonl"
KEYS = {"calls", "tool_refs", "tool_ref_recall", "tool_ref_recall_strict", "user_refs", "user_ref_recall",
        "history_token_ratio_median", "last_call_history_token_ratio_median", "last_call_prompt_token_ratio_median"}


async def test_bench_traces_report(graph_deps, tmp_path) -> None:
    report = await run_traces_with(graph_deps, FIXTURE, concurrency=2)
    data = report.to_json()
    assert {"full_replay", "dossier", "langchain_trim", "langchain_clear_tool_uses", "openai_tool_output_trimmer",
            "anthropic_clear_tool_uses", "anthropic_clear_tool_uses@budget",
            "dossier@langchain_trim"} <= set(data)
    for name, entry in data.items():
        assert KEYS <= set(entry), name
        assert entry["calls"] == 9  # 6 + 3 assistant messages
        for key in ("tool_ref_recall", "tool_ref_recall_strict", "user_ref_recall"):
            assert entry[key] is None or 0.0 <= entry[key] <= 1.0, (name, key)
    assert data["full_replay"]["tool_ref_recall"] == 1.0
    assert data["full_replay"]["tool_refs"] == 4  # NO6JO3, QQ77X1, credit_card_4421486, 00000146
    assert data["full_replay"]["user_refs"] == 3
    assert "| dossier |" in report.to_markdown()
    assert len(report.per_call()) == 9
    assert all(path.exists() for path in write_plots(report, tmp_path))


async def test_call_k_arguments_never_reach_call_k(graph_deps) -> None:
    """QQ77X1 first appears in call 3's own arguments: it is no carried reference there, and
    Dossier's context for call 3 (assembled before call 3 was written) does not contain it."""
    report = await run_traces_with(graph_deps, FIXTURE, limit=1)
    rows = {row.call: row for row in report.rows}
    assert "QQ77X1" not in {r.value for r in rows[3].strategies["dossier"].refs}
    assert ("QQ77X1", "tool") in {(r.value, r.kind) for r in rows[4].strategies["dossier"].refs}
    async with graph_deps.sessions() as session:
        at_3 = await get_context_assembly(session, report.account_id, rows[3].assembly_id, with_messages=True)
        at_4 = await get_context_assembly(session, report.account_id, rows[4].assembly_id, with_messages=True)
    assert "QQ77X1" not in str(at_3.messages)
    assert "QQ77X1" in str(at_4.messages)
    # Full replay before call 3 holds only what came before it, too.
    assert rows[3].strategies["full_replay"].prompt_tokens < rows[4].strategies["full_replay"].prompt_tokens
    # The trajectory's system prompt reaches Dossier's context unchanged.
    assert "You are an airline agent. Today is 2024-05-15." in str(at_3.messages)


def test_register_traces_adds_the_action() -> None:
    parser = argparse.ArgumentParser()
    actions = parser.add_subparsers()
    register_traces(actions)
    args = parser.parse_args(["traces", "--traces", "x.jsonl", "--json", "--limit", "2"])
    assert (args.traces, args.json, args.limit) == ("x.jsonl", True, 2)
    assert parser.parse_args(["traces"]).traces.endswith("traces.jsonl")


async def test_a_reused_tool_call_id_still_gets_its_result(graph_deps, tmp_path) -> None:
    """τ-bench's recorded trajectories reuse a tool-call id for a later call; each call's result must
    still be ingested, or Dossier would show the later call as pending and lose what it returned."""
    def call(value: str) -> dict:
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": "call_same", "name": "get_reservation_details",
                                "arguments": {"reservation_id": value}}]}

    def result(body: dict) -> dict:
        return {"role": "tool", "tool_call_id": "call_same", "name": "get_reservation_details",
                "content": json.dumps(body)}

    trace = {"source": "test/reused-ids", "id": "fixture/reused-ids", "license": "test", "messages": [
        {"role": "system", "content": "You are an airline agent."},
        {"role": "user", "content": "Check reservations AB12CD and EF34GH."},
        call("AB12CD"), result({"reservation_id": "AB12CD", "origin": "CLT"}),
        call("EF34GH"), result({"reservation_id": "EF34GH", "origin": "MCO", "payment": "gift_card_7711903"}),
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_pay", "name": "update_payment", "arguments": {"payment_id": "gift_card_7711903"}}]},
    ]}
    path = tmp_path / "reused.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    report = await run_traces_with(graph_deps, path)
    last = max(report.rows, key=lambda row: row.call)
    refs = {r.value: r.kept for r in last.strategies["dossier"].refs}
    assert refs == {"gift_card_7711903": True}
    async with graph_deps.sessions() as session:
        assembly = await get_context_assembly(session, report.account_id, last.assembly_id, with_messages=True)
    assert "pending" not in str(assembly.messages)


async def test_ablations_change_one_knob_each(graph_deps) -> None:
    from activities.tokens import token_encoder
    from harness.bench.ablations import ABLATIONS, run_ablations_with

    settings = [ABLATIONS[0], next(a for a in ABLATIONS if a[1] == {"epochs": False})]
    report = await run_ablations_with(graph_deps, FIXTURE, token_encoder(), every=1,
                                      ablations=tuple(settings))
    default, afresh = report.settings
    assert default.knobs == {} and afresh.knobs == {"epochs": False}
    assert default.policy != afresh.policy  # the version tag covers the knob
    assert default.overall["calls"] == afresh.overall["calls"] == 9
    # The knob reaches the assemblies: what Dossier sends differs from the default's.
    assert default.overall["prompt_tokens_total_ratio"] != afresh.overall["prompt_tokens_total_ratio"]
    table = report.to_markdown()
    assert table.count("\n| ") == 3 and "| every call assembled afresh (epochs=false) |" in table
    header, rule = table.splitlines()[2:4]
    assert header.count("|") == rule.count("|")


async def test_a_timestamped_trajectory_runs_on_its_own_clock(graph_deps, tmp_path) -> None:
    """A user who answers 10 minutes later finds every 5-minute cache cold: Dossier starts a smaller epoch
    (its reason says why) and full replay is billed the cold cache too; the 24-hour tier keeps it warm."""
    from activities.tokens import token_encoder

    listing = "\n".join(f"src/module_{n}.py: def handler_{n}(request): return {n * 13}" for n in range(400))
    trace = {"source": "test/timed", "id": "fixture/timed", "license": "test", "messages": [
        {"role": "system", "content": "You are a coding agent.", "timestamp": "2026-05-01T10:00:00+00:00"},
        {"role": "user", "content": "Find the handler that returns 390.", "timestamp": "2026-05-01T10:00:05+00:00"},
        {"role": "assistant", "content": None, "timestamp": "2026-05-01T10:00:10+00:00",
         "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "grep -rn handler src"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": listing,
         "timestamp": "2026-05-01T10:00:12+00:00"},
        {"role": "assistant", "content": "handler_30 in src/module_30.py.", "timestamp": "2026-05-01T10:00:20+00:00"},
        {"role": "user", "content": "And the one returning 13?", "timestamp": "2026-05-01T10:10:20+00:00"},
        {"role": "assistant", "content": "handler_1.", "timestamp": "2026-05-01T10:10:25+00:00"},
    ]}
    path = tmp_path / "timed.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    report = await run_traces_with(graph_deps, path, encode=token_encoder())
    last = max(report.rows, key=lambda row: row.call)
    assert last.strategies["dossier"].epoch == "cold cache"
    assert max(report.rows, key=lambda row: -row.call).strategies["dossier"].epoch != "cold cache"
    replay = last.strategies["full_replay"].bills
    assert replay["anthropic"].read == 0 and replay["openai-gpt5"].read == 0
    assert replay["anthropic-1h"].read > 0 and replay["openai-gpt5-24h"].read > 0
    async with graph_deps.sessions() as session:
        assembly = await get_context_assembly(session, report.account_id, last.assembly_id)
    assert assembly.record.epoch.reason.startswith("cold cache: 605 s since the previous call")
    # The previous call's time is stored with it: recomputing the assembly decides the same.
    from activities.replay import recompute_assembly

    again = await recompute_assembly(graph_deps, report.account_id, last.assembly_id)
    assert again.identical and again.result.record.epoch == assembly.record.epoch
