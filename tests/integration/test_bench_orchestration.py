"""The orchestration benchmark runs end to end on a tiny input (no timing assertions).

Uses the session's Temporal dev server and graph dependencies; the
benchmark brings its own worker (bench tool and scripted model registered
through build_worker's factory parameters) on a fresh task queue.
"""

from __future__ import annotations

import json

from temporalio.testing import WorkflowEnvironment

from activities.deps import GraphDeps
from harness.bench.orchestration import OrchestrationReport, run_orchestration
from harness.bench.orchestration_agent import MODEL_CALLS_PER_TURN, TOOL_CALLS_PER_TURN, blob_payload

import pytest

pytestmark = pytest.mark.slow  # the full tier only: runs a benchmark


def test_the_bench_blob_is_deterministic_and_about_the_requested_size() -> None:
    payload = blob_payload(3, 2, 16)
    assert payload == blob_payload(3, 2, 16) != blob_payload(3, 1, 16)
    assert 16 * 1024 <= len(payload) < 17 * 1024
    assert json.loads(payload)["rows"]


async def test_quick_orchestration_bench_reports_throughput_split_and_history_per_call(
    temporal_env: WorkflowEnvironment, graph_deps: GraphDeps
) -> None:
    report = await run_orchestration(env=temporal_env, deps=graph_deps, quick=True)
    assert isinstance(report, OrchestrationReport)

    # (a) both modes at every concurrency level, every turn answered after exactly 3 tool calls.
    levels = report.parameters["concurrency"]
    assert {(row.mode, row.concurrency) for row in report.throughput} == {
        (mode, level) for mode in ("temporal", "in_process") for level in levels}
    for row in report.throughput:
        assert row.answered == row.turns and row.turns_per_s > 0
        assert set(row.split_mean_ms) >= {"temporal", "postgres", "s3", "assembly", "other"}
    for sample in report.samples:
        assert sample.status == "answered"
        assert (sample.model_calls, sample.tool_calls) == (MODEL_CALLS_PER_TURN, TOOL_CALLS_PER_TURN)
        assert sample.postgres_statements > 0
    temporal_samples = [s for s in report.samples if s.mode == "temporal"]
    # Every activity of the workflow was timed by the interceptor: 3 per model call + 1 per tool call.
    assert all(s.activity_count == 3 * MODEL_CALLS_PER_TURN + TOOL_CALLS_PER_TURN for s in temporal_samples)
    assert set(report.ratios) == set(levels)

    # (b) one history point per model call, each with its turn's measured history and the counterfactual.
    calls = report.parameters["history_calls"]
    assert [point.call for point in report.history] == list(range(1, calls + 1))
    assert all(point.history_bytes > 0 and point.history_events > 0 for point in report.history)
    inputs = [point.cf_input_bytes for point in report.history]
    assert inputs == sorted(inputs) and inputs[-1] > inputs[0]  # the transcript only grows
    # Ids only: no single event in a turn's history holds a tool result.
    result_bytes = report.parameters["result_kb"] * 1024
    assert all(point.max_event_bytes < result_bytes for point in report.history)
    assert {crossing.quantity for crossing in report.crossings} == {
        "activity input (one payload)", "history, one workflow per turn", "history, one workflow per conversation"}

    # Output: Markdown tables, JSON with plot data.
    markdown = report.to_markdown()
    assert "Turns per second" in markdown and "counterfactual" in markdown.lower()
    data = json.loads(json.dumps(report.to_json()))
    assert len(data["plots"]["history"]["x_call"]) == calls
    assert data["plots"]["history"]["y_scale"] == "log"
    assert set(data["plots"]["throughput"]["series"]) == {"temporal", "in_process"}
    # The same conversation, billed: every price model, Dossier's stored requests against replay of its transcript.
    assert set(data["billed"]) == {"anthropic", "anthropic-1h", "openai-gpt5", "openai-gpt5-24h", "openai-4o", "gemini",
                                   "uncached"}
    assert all(row["cost_ratio_vs_cached_replay"] > 0 for row in data["billed"].values())
    assert "Billed input cost of the same conversation" in markdown
