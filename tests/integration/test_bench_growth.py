"""The growth benchmark (part 4): its history as the store writes it, and a quick run end to end (no timings)."""

from __future__ import annotations

import json

import pytest

from activities.deps import GraphDeps
from harness.bench.growth import QUICK_BRANCHES, QUICK_PARTICIPANTS, run_growth
from harness.bench.growth_data import ResultCache
from harness.bench.growth_graph import GrowthConfig, delete_history, load_history
from store import graph
from store.errors import NotFoundError

pytestmark = pytest.mark.slow  # the full tier only: runs a benchmark


async def test_growth_quick_mode_reports_every_size(graph_deps: GraphDeps) -> None:
    report = await run_growth(
        None, (20, 60), QUICK_BRANCHES, QUICK_PARTICIPANTS, samples=3, deps=graph_deps, warmup=1, replay_samples=1
    )

    for size in (20, 60):
        rows = [r for r in report.results if r.config.size == size]
        assert len(rows) == len(QUICK_BRANCHES) * len(QUICK_PARTICIPANTS)
        for row in rows:
            assert row.counts["artifacts"] == size
            assert row.counts["tool_calls"] == size
            assert row.counts["memories"] == size
            for key in ("assemble_ms", "graph_query_ms", "policy_ms", "end_to_end_ms"):
                assert row.assembly[key]["n"] == 3
                assert row.assembly[key]["p50"] > 0
                assert row.assembly[key]["p99"] >= row.assembly[key]["p50"]
            assert row.replay["total_ms"]["p50"] > 0
            assert row.replay_tokens > row.assembled_tokens > 0

    explained = [r for r in report.results if r.explain]
    assert explained and all(r.config.size == 60 for r in explained)
    labels = {q.label for q in explained[0].explain}
    assert {"messages: recent", "tool_calls: recent", "tool_memories: live", "tool_artifacts: recent"} <= labels
    assert all("Execution Time" in q.plan for q in explained[0].explain)

    markdown = report.to_markdown()
    assert "bulk loader" in markdown and "EXPLAIN (ANALYZE, BUFFERS)" in markdown
    data = json.loads(report.to_json())
    assert {s["branches"] for s in data["plot_data"]["series"]} == set(QUICK_BRANCHES)
    assert len(data["results"]) == 2 * len(QUICK_BRANCHES) * len(QUICK_PARTICIPANTS)


async def test_the_history_is_written_through_the_store_as_the_copy_loader_wrote_it(graph_deps: GraphDeps) -> None:
    loaded = await load_history(graph_deps, GrowthConfig(size=200, branches=3, participants=5),
                                ResultCache(graph_deps.counter, seed=7))
    try:
        async with graph_deps.sessions() as s:
            conversation = await graph.get_conversation(s, loaded.account_id, loaded.conversation_id)
            branches = await graph.list_branches(s, loaded.account_id, loaded.conversation_id)
        # The numbers the former COPY loader wrote for this configuration (seed 7).
        assert loaded.counts == {"messages": 330, "tool_calls": 200, "artifacts": 200, "memories": 200,
                                 "superseded_memories": 39, "model_runs": 110}
        assert (loaded.lineage_depth, loaded.lineage_artifacts, loaded.payload_bytes) == (3, 175, 332600)
        # Every node took its seq from the conversation: messages, tool calls and their final
        # updates, artifacts, memories, then 4 skill states and 1 checkpoint.
        c = loaded.counts
        assert conversation.snapshot_seq == c["messages"] + 2 * c["tool_calls"] + c["artifacts"] + c["memories"] + 5
        assert len(branches) == 3
    finally:
        await delete_history(graph_deps, loaded.account_id)
    async with graph_deps.sessions() as s:
        with pytest.raises(NotFoundError):
            await graph.get_account(s, loaded.account_id)
