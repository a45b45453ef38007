"""Which knob moved which number: the traces benchmark for Dossier alone, one policy change at a time.

Every setting runs the same deterministic sample of the trajectory file (every
``SAMPLE_EVERY``-th trajectory) through :func:`harness.bench.traces.run_trace`,
the live import and assembly path of part 1–2, with the default policy changed
in one knob. Reported for each: billed input cost against cached full replay
under every price model (all calls, and trajectories of 16 calls or more),
carried and user recall, and the last-call history ratio, overall and on
τ-bench alone.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from activities.deps import GraphDeps
from activities.tokens import token_encoder
from dossier.runtime import open_graph
from dossier.settings import Settings
from harness.bench.billing import Encode
from harness.bench.machine import repo_relative
from harness.bench.traces import DEFAULT_TRACES, load_traces, run_trace
from harness.bench.traces_report import CallRow, summarise
from store import conversations

SAMPLE_EVERY = 4
"""Every 4th trajectory of the file (239 of the 956 shared ones)."""

ABLATIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("default policy", {}),
    ("own step text kept (own_step_text_chars=None)", {"own_step_text_chars": None}),
    ("raw result text, not compact (native_compact=false)", {"native_compact": False}),
    ("results as their summaries (native_result_bytes=0)", {"native_result_bytes": 0}),
    ("4,096-token budget (default_token_budget=4096)", {"default_token_budget": 4096}),
    ("appended part capped at 2,000 tokens (epoch_growth_tokens=2000)", {"epoch_growth_tokens": 2000}),
    ("every call assembled afresh (epochs=false)", {"epochs": False}),
)
"""Each setting: a label and the knobs it changes on the default policy."""

TAU = "sierra-research/tau-bench"


@dataclass(frozen=True)
class Ablation:
    """One setting's results."""

    label: str
    knobs: dict[str, Any]
    policy: str
    overall: dict[str, Any]
    tau_bench: dict[str, Any]


@dataclass(frozen=True)
class AblationReport:
    """Every setting on the same sample."""

    path: str
    trajectories: int
    sample_every: int
    settings: tuple[Ablation, ...]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "trajectories": self.trajectories, "sample_every": self.sample_every,
                "seconds": round(self.seconds, 1),
                "settings": [{"label": a.label, "knobs": a.knobs, "policy": a.policy, "overall": a.overall,
                              "tau_bench": a.tau_bench} for a in self.settings]}

    def to_markdown(self) -> str:
        lines = [
            f"Dossier alone on every {self.sample_every}th trajectory of `{self.path}` ({self.trajectories} "
            f"trajectories), one policy knob changed at a time; run took {self.seconds:.0f} s. Billed cost is a "
            "ratio to cached full replay under the same price model (computed from the price models).",
            "",
            "| setting | anthropic | openai-gpt5 | openai-4o | gemini | uncached | anthropic 16+ | openai-gpt5 16+ "
            "| carried recall | strict | user recall | last-call history | τ-bench carried recall | τ-bench anthropic |",
            "|---|" + "---:|" * 13,
        ]
        for a in self.settings:
            b, t = a.overall["billed"], a.tau_bench
            tau_anthropic = (t.get("billed") or {}).get("anthropic", {}).get("cost_ratio_vs_cached_replay")
            cost = [b[m]["cost_ratio_vs_cached_replay"] for m in ("anthropic", "openai-gpt5", "openai-4o", "gemini",
                                                                   "uncached")]
            long = [b[m]["cost_ratio_vs_cached_replay_16plus"] for m in ("anthropic", "openai-gpt5")]
            lines.append(
                f"| {a.label} | " + " | ".join(_num(v) for v in (*cost, *long)) + " | "
                + " | ".join(_pct(a.overall[k]) for k in ("tool_ref_recall", "tool_ref_recall_strict",
                                                         "user_ref_recall", "last_call_history_token_ratio_median"))
                + f" | {_pct(t.get('tool_ref_recall'))} | {_num(tau_anthropic)} |")
        return "\n".join(lines) + "\n"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


async def run_ablations(settings: Settings, path: str | Path = DEFAULT_TRACES, *, every: int = SAMPLE_EVERY,
                        ablations: tuple[tuple[str, dict[str, Any]], ...] = ABLATIONS,
                        limit: int | None = None, concurrency: int = 4) -> AblationReport:
    """Run every setting on every ``every``-th trajectory (the first ``limit`` of those)."""
    async with open_graph(settings) as deps:
        return await run_ablations_with(deps, path, token_encoder(settings.tiktoken_encoding), every=every,
                                        ablations=ablations, limit=limit, concurrency=concurrency)


async def run_ablations_with(base: GraphDeps, path: str | Path, encode: Encode, *, every: int = SAMPLE_EVERY,
                             ablations: tuple[tuple[str, dict[str, Any]], ...] = ABLATIONS,
                             limit: int | None = None, concurrency: int = 4) -> AblationReport:
    """:func:`run_ablations` on existing graph dependencies (one fresh account per setting)."""
    traces = load_traces(path)[::every][:limit]
    started = time.perf_counter()
    results: list[Ablation] = []
    counted = replace(base, counter=lru_cache(maxsize=262_144)(base.counter))
    for label, knobs in ablations:
        deps = replace(counted, policy=counted.policy.model_copy(update=knobs))
        async with deps.sessions() as session, session.begin():
            account = await conversations.create_account(session, name=f"bench ablation {label}")
        rows: list[list[CallRow]] = [[] for _ in traces]
        queue = list(range(len(traces)))

        async def worker() -> None:
            while queue:
                i = queue.pop()
                rows[i] = await run_trace(deps, account, traces[i], [], encode)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        flat = [row for trace_rows in rows for row in trace_rows]
        results.append(Ablation(label, knobs, deps.policy.version_tag, summarise(flat, "dossier"),
                                summarise([r for r in flat if r.source == TAU], "dossier")))
    return AblationReport(repo_relative(path), len(traces), every, tuple(results), time.perf_counter() - started)


__all__ = ["ABLATIONS", "SAMPLE_EVERY", "AblationReport", "run_ablations", "run_ablations_with"]
