"""The orchestration benchmark's results: samples, throughput rows, history points, JSON and Markdown."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harness.bench.orchestration_agent import MODEL_CALLS_PER_TURN, TOOL_CALLS_PER_TURN

PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024
"""Temporal's default per-payload error limit (``limit.blobSize.error``)."""
HISTORY_LIMIT_BYTES = 50 * 1024 * 1024
"""Temporal's default workflow history size error limit (``limit.historySize.error``)."""
HISTORY_REPORT_CALLS = (1, 50, 100, 200)


@dataclass(frozen=True)
class TurnSample:
    """One measured turn."""

    mode: str
    """``temporal`` or ``in_process``."""
    concurrency: int
    total_ms: float
    activities_ms: float
    temporal_ms: float
    postgres_ms: float
    s3_ms: float
    assembly_ms: float
    """Policy + render time of the turn's assemblies (stored ContextAssembly timings)."""
    assembly_graph_ms: float
    """Graph-query phase of the assemblies (Postgres; already inside ``postgres_ms``)."""
    other_ms: float
    activity_count: int
    postgres_statements: int
    s3_calls: int
    model_calls: int
    tool_calls: int
    status: str
    activity_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ThroughputRow:
    """Turns per second of one mode at one concurrency, and its mean latency split."""

    mode: str
    concurrency: int
    turns: int
    wall_s: float
    turns_per_s: float
    latency_mean_ms: float
    latency_p50_ms: float
    latency_p95_ms: float
    split_mean_ms: dict[str, float]
    """temporal, postgres, s3, assembly, other (and activities, assembly_graph)."""
    activity_mean_ms: dict[str, float]
    """Mean per-turn time in each activity type."""
    answered: int


@dataclass(frozen=True)
class HistoryPoint:
    """One model call of the growing conversation."""

    call: int
    """1-based model call number in the conversation."""
    turn: int
    workflow_id: str
    history_bytes: int
    """Protobuf size of that turn's whole workflow history (what Temporal's limit counts)."""
    history_json_bytes: int
    """Size of ``fetch_history().to_json()``."""
    history_events: int
    max_event_bytes: int
    """Largest single event of the turn's history (bounds any payload in it)."""
    history_bytes_per_call: float
    """``history_bytes`` / model calls in that turn."""
    legacy_tokens: int
    assembled_tokens: int
    cf_input_bytes: int
    """Counterfactual: the transcript (JSON messages) a framework would pass into this model-call activity."""
    cf_history_conversation_bytes: int
    """Counterfactual: activity payloads in the history after this call's step (its transcript input, the
    model's output, its tool calls' arguments and raw results), when one workflow runs the whole conversation."""
    cf_history_turn_bytes: int
    """Counterfactual: the same, counted within this turn's own workflow (one workflow per turn)."""


@dataclass(frozen=True)
class Crossing:
    """The first model call at which a counterfactual quantity exceeds a limit."""

    quantity: str
    limit_bytes: int
    call: int | None
    """``None``: not crossed within ``horizon`` calls."""
    extrapolated: bool
    """The crossing lies past the measured calls and was extrapolated from the measured growth."""
    horizon: int


@dataclass(frozen=True)
class OrchestrationReport:
    """Everything ``run_orchestration`` measured."""

    parameters: dict[str, Any]
    throughput: tuple[ThroughputRow, ...]
    samples: tuple[TurnSample, ...]
    ratios: dict[int, dict[str, float]]
    """Per concurrency: temporal and in-process turns/s and mean latency, and their ratios."""
    history: tuple[HistoryPoint, ...]
    crossings: tuple[Crossing, ...]
    history_turns: int
    run_seconds: float
    billed: dict[str, dict[str, float]] = field(default_factory=dict)
    """Part (b)'s conversation billed per price model: Dossier's sent assemblies over full replay of its transcript."""

    # ------------------------------------------------------------------ output

    def history_at(self, call: int) -> HistoryPoint | None:
        """The history point of model call ``call``, if measured."""
        for point in self.history:
            if point.call == call:
                return point
        return None

    def to_json(self) -> dict[str, Any]:
        """Everything as JSON-ready data (plot data included)."""
        return {
            "benchmark": "orchestration",
            "parameters": self.parameters,
            "run_seconds": round(self.run_seconds, 2),
            "throughput": [asdict(row) for row in self.throughput],
            "ratios": {str(key): value for key, value in self.ratios.items()},
            "samples": [asdict(sample) for sample in self.samples],
            "history": [asdict(point) for point in self.history],
            "history_turns": self.history_turns,
            "crossings": [asdict(crossing) for crossing in self.crossings],
            "billed": self.billed,
            "counterfactual_note": COUNTERFACTUAL_NOTE,
            "plots": self.plot_data(),
        }

    def plot_data(self) -> dict[str, Any]:
        """Series for the two plots: history per call vs counterfactual (log y), turns/s bars."""
        return {
            "history": {
                "x_call": [p.call for p in self.history],
                "dossier_turn_history_bytes": [p.history_bytes for p in self.history],
                "counterfactual_activity_input_bytes": [p.cf_input_bytes for p in self.history],
                "counterfactual_conversation_workflow_history_bytes":
                    [p.cf_history_conversation_bytes for p in self.history],
                "counterfactual_turn_workflow_history_bytes": [p.cf_history_turn_bytes for p in self.history],
                "payload_limit_bytes": PAYLOAD_LIMIT_BYTES,
                "history_limit_bytes": HISTORY_LIMIT_BYTES,
                "y_scale": "log",
            },
            "throughput": {
                "concurrency": sorted({row.concurrency for row in self.throughput}),
                "series": {
                    mode: [row.turns_per_s for row in sorted(self.throughput, key=lambda r: r.concurrency)
                           if row.mode == mode]
                    for mode in ("temporal", "in_process")
                },
            },
        }

    def to_markdown(self) -> str:
        """Tables: throughput, latency split, ratio, history per call, counterfactual crossings."""
        p = self.parameters
        lines = [
            "## Orchestration overhead and workflow history",
            "",
            f"One worker, real Temporal dev server, embedded Postgres + S3. A turn = {MODEL_CALLS_PER_TURN} model "
            f"calls + {TOOL_CALLS_PER_TURN} tool calls ({p.get('turn_result_kb')} KiB results), "
            f"{p.get('turns')} turns per level; run took {self.run_seconds:.1f} s.",
            "",
            "### Turns per second and latency split (mean ms per turn)",
            "",
            "| mode | concurrency | turns/s | p50 ms | p95 ms | temporal | postgres | s3 | assembly | other | "
            "(graph query) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in self.throughput:
            s = row.split_mean_ms
            lines.append(
                f"| {row.mode} | {row.concurrency} | {row.turns_per_s:.2f} | {row.latency_p50_ms:.1f} | "
                f"{row.latency_p95_ms:.1f} | {s['temporal']:.1f} | {s['postgres']:.1f} | {s['s3']:.1f} | "
                f"{s['assembly']:.1f} | {s['other']:.1f} | {s['assembly_graph']:.1f} |"
            )
        lines += [
            "",
            "temporal = turn wall time minus time inside activities; postgres = time in SQL statements; "
            "s3 = time in S3 calls; assembly = policy + render; other = rest of activity time; "
            "(graph query) = assembly's Postgres phase, part of postgres.",
            "",
            "### Temporal vs the same turn in-process",
            "",
            "| concurrency | temporal turns/s | in-process turns/s | in-process / temporal | "
            "temporal latency / in-process latency |",
            "|---:|---:|---:|---:|---:|",
        ]
        for level, ratio in sorted(self.ratios.items()):
            lines.append(
                f"| {level} | {ratio['temporal_turns_per_s']:.2f} | {ratio['in_process_turns_per_s']:.2f} | "
                f"{ratio['throughput_ratio']:.2f}x | {ratio['latency_ratio']:.2f}x |"
            )
        if self.history:
            wanted = sorted({c for c in (*HISTORY_REPORT_CALLS, self.history[-1].call) if self.history_at(c)})
            lines += [
                "",
                f"### Workflow history per model call ({p.get('result_kb')} KiB tool results, "
                f"{len(self.history)} calls, {self.history_turns} turns)",
                "",
                "| call | Dossier turn history | per model call | events | largest event | "
                "CF activity input | CF history (workflow per turn) | CF history (workflow per conversation) |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|",
            ]
            for call in wanted:
                h = self.history_at(call)
                assert h is not None
                lines.append(
                    f"| {h.call} | {size_text(h.history_bytes)} | {size_text(h.history_bytes_per_call)} | "
                    f"{h.history_events} | {size_text(h.max_event_bytes)} | {size_text(h.cf_input_bytes)} | "
                    f"{size_text(h.cf_history_turn_bytes)} | {size_text(h.cf_history_conversation_bytes)} |"
                )
            sizes = [h.history_bytes for h in self.history]
            lines += [
                "",
                f"Dossier turn history: min {size_text(min(sizes))}, max {size_text(max(sizes))} "
                "over the conversation.",
                "",
                "Counterfactual crossing points (model call number):",
                "",
                "| quantity | limit | crossed at call |",
                "|---|---:|---:|",
            ]
            for crossing in self.crossings:
                where = ("not within " + str(crossing.horizon)) if crossing.call is None else (
                    f"~{crossing.call} (extrapolated)" if crossing.extrapolated else str(crossing.call))
                lines.append(f"| {crossing.quantity} | {size_text(crossing.limit_bytes)} | {where} |")
            lines += ["", f"CF = counterfactual. {COUNTERFACTUAL_NOTE}"]
        if self.billed:
            lines += [
                "",
                f"### Billed input cost of the same conversation ({len(self.history)} model calls, "
                "computed from the price models)",
                "",
                "Dossier's assembled requests (as stored, with their cache breakpoints) against full replay of "
                "the same transcript, billed under each price model (`harness/bench/billing.py`).",
                "",
                "| price model | Dossier / cached full replay | Dossier cache hit rate | replay cache hit rate |",
                "|---|---:|---:|---:|",
            ]
            for name, row in self.billed.items():
                lines.append(f"| {name} | {row['cost_ratio_vs_cached_replay']:.3f} | {row['cache_hit_rate']:.1%} | "
                             f"{row['replay_cache_hit_rate']:.1%} |")
        return "\n".join(lines) + "\n"


COUNTERFACTUAL_NOTE = (
    "The counterfactual is computed from this run's own transcript sizes (stored messages and raw tool results, "
    "as JSON-encoded OpenAI messages), not by running another framework: it is what a framework that passes the "
    "transcript through each model-call activity input (and returns raw tool results as activity results) would "
    "put into the workflow history. Event framing overhead is not counted, so it is a lower bound."
)


def size_text(n: float) -> str:
    """Bytes as B, KiB or MiB."""
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n:.0f} B"

