"""The growth benchmark (part 4) runs end to end in quick mode; no timing assertions."""

from __future__ import annotations

import json

from activities.deps import GraphDeps
from harness.bench.growth import QUICK_BRANCHES, QUICK_PARTICIPANTS, run_growth


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
