"""The growth benchmark's results: per-configuration statistics, growth factors, JSON and Markdown."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.growth_explain import ExplainedQuery
from harness.bench.growth_graph import GrowthConfig


def _join(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (p99 of 30 samples is the maximum)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def stats(values: Sequence[float]) -> dict[str, float]:
    """p50, p99, mean, min, max (ms, rounded) and the sample count."""
    return {
        "p50": round(percentile(values, 50), 3),
        "p99": round(percentile(values, 99), 3),
        "mean": round(statistics.fmean(values), 3) if values else math.nan,
        "min": round(min(values), 3) if values else math.nan,
        "max": round(max(values), 3) if values else math.nan,
        "n": len(values),
    }


@dataclass
class ConfigResult:
    """Measurements of one configuration."""

    config: GrowthConfig
    counts: dict[str, int]
    lineage_depth: int
    lineage_artifacts: int
    payload_bytes: int
    load_seconds: float
    assembly: dict[str, dict[str, float]]
    """``{"assemble_ms" | "graph_query_ms" | "policy_ms" | "serialise_ms" | "end_to_end_ms": stats}``;
    ``assemble_ms`` = graph query + policy + serialisation; end-to-end adds
    rehydration and persisting the assembly record."""
    candidates: dict[str, int]
    assembled_tokens: int
    legacy_tokens_recorded: int
    replay: dict[str, dict[str, float]]
    """``{"total_ms" | "load_ms" | "build_ms" | "count_ms": stats}``."""
    replay_tokens: int
    replay_messages: int
    explain: list[ExplainedQuery] = field(default_factory=list)


@dataclass
class GrowthReport:
    """The outcome of :func:`run_growth`."""

    results: list[ConfigResult]
    sizes: tuple[int, ...]
    branches: tuple[int, ...]
    participants: tuple[int, ...]
    samples: int
    started_at: str
    run_seconds: float
    precompute_seconds: float
    limits: dict[str, int]
    notes: list[str] = field(default_factory=list)

    # ---- derived numbers

    def result(self, size: int, branches: int, participants: int) -> ConfigResult | None:
        for r in self.results:
            if (r.config.size, r.config.branches, r.config.participants) == (size, branches, participants):
                return r
        return None

    def growth_factors(self, low: int = 1_000, high: int = 100_000) -> list[dict[str, Any]]:
        """p50 assembly time at ``high`` over ``low``, per (branches, participants)."""
        out = []
        for b in self.branches:
            for p in self.participants:
                lo, hi = self.result(low, b, p), self.result(high, b, p)
                if lo is None or hi is None:
                    continue
                f_asm = hi.assembly["assemble_ms"]["p50"] / lo.assembly["assemble_ms"]["p50"]
                f_e2e = hi.assembly["end_to_end_ms"]["p50"] / lo.assembly["end_to_end_ms"]["p50"]
                f_rep = hi.replay["total_ms"]["p50"] / lo.replay["total_ms"]["p50"]
                out.append({"branches": b, "participants": p, "from": low, "to": high,
                            "assemble_p50_factor": round(f_asm, 2), "end_to_end_p50_factor": round(f_e2e, 2),
                            "replay_p50_factor": round(f_rep, 2),
                            "replay_runs": [lo.replay["total_ms"]["n"], hi.replay["total_ms"]["n"]]})
        return out

    def replay_runs(self) -> dict[int, list[int]]:
        """How many times replay was timed, per size (sorted, one entry per configuration)."""
        runs: dict[int, list[int]] = {}
        for r in self.results:
            runs.setdefault(r.config.size, []).append(int(r.replay["total_ms"]["n"]))
        return {size: sorted(ns) for size, ns in sorted(runs.items())}

    def replay_note(self) -> str:
        """What the replay figures are: the median of a few runs (the run itself when there is one)."""
        groups: dict[str, list[int]] = {}
        for size, ns in self.replay_runs().items():
            label = str(ns[0]) if ns[0] == ns[-1] else f"{ns[0]}-{ns[-1]}"
            groups.setdefault(label, []).append(size)
        parts = [f"{label} {'run' if label == '1' else 'runs'} per configuration at "
                 f"{_join([f'{s:,}' for s in sizes])} artifacts" for label, sizes in groups.items()]
        return (f"Replay is timed far fewer times than assembly ({self.samples} samples): {'; '.join(parts)} "
                "(a replay stops being repeated once the configuration has spent its replay time budget). Its "
                "figures are the median of those runs, the run itself where there is one: not a p50 of "
                f"{self.samples}, and the growth factors divide one such figure by another.")

    def plot_data(self) -> dict[str, Any]:
        """Series for plots: p50/p99 vs size per (branches, participants), and the stacked split."""
        series = []
        for b in self.branches:
            for p in self.participants:
                rows = sorted((r for r in self.results if (r.config.branches, r.config.participants) == (b, p)),
                              key=lambda r: r.config.size)
                if not rows:
                    continue
                series.append({
                    "label": f"{b} branch(es), {p} participants",
                    "branches": b,
                    "participants": p,
                    "size": [r.config.size for r in rows],
                    "assemble_p50_ms": [r.assembly["assemble_ms"]["p50"] for r in rows],
                    "assemble_p99_ms": [r.assembly["assemble_ms"]["p99"] for r in rows],
                    "end_to_end_p50_ms": [r.assembly["end_to_end_ms"]["p50"] for r in rows],
                    "replay_p50_ms": [r.replay["total_ms"]["p50"] for r in rows],
                    "replay_runs": [r.replay["total_ms"]["n"] for r in rows],
                    "split_p50_ms": {
                        key: [r.assembly[key]["p50"] for r in rows]
                        for key in ("graph_query_ms", "policy_ms", "serialise_ms")
                    },
                })
        return {"x": "tool artifacts in the conversation", "y": "milliseconds", "series": series}

    def to_json(self) -> str:
        data = {
            "benchmark": "growth",
            "sizes": self.sizes, "branches": self.branches, "participants": self.participants,
            "samples": self.samples, "started_at": self.started_at, "run_seconds": round(self.run_seconds, 1),
            "precompute_seconds": round(self.precompute_seconds, 1), "limits": self.limits, "notes": self.notes,
            "growth_factors": self.growth_factors(),
            "results": [
                {**{k: v for k, v in asdict(r).items() if k != "explain"},
                 "explain": [{**asdict(q), "verdict": q.verdict} for q in r.explain]}
                for r in self.results
            ],
            "plot_data": self.plot_data(),
        }
        return json.dumps(data, indent=2, default=str)

    def to_markdown(self) -> str:
        lines = ["# Cost as the graph grows", ""]
        lines += [f"- {note}" for note in self.notes]
        lines += [
            f"- Grid: sizes {list(self.sizes)} x branches {list(self.branches)} x participants "
            f"{list(self.participants)}; {self.samples} timed assemblies per configuration (after warm-up); "
            f"started {self.started_at}, ran {self.run_seconds:.0f} s "
            f"(of which {self.precompute_seconds:.0f} s deriving/token-counting the synthetic results once).",
            f"- Candidate limits: {self.limits}.",
            "",
            "## Assembly vs replay",
            "",
            "Times in ms. *assemble* = graph query + policy + serialisation (the timings "
            "`assemble_context` returns); *e2e* adds persisting the assembly record. *replay* = load the "
            "whole lineage transcript with every tool call and raw payload, build the legacy replay, count "
            "its tokens.",
            "",
            self.replay_note(),
            "",
            "| artifacts | branches | participants | lineage depth | setup s | assemble p50 | assemble p99 "
            "| graph p50 | policy p50 | serialise p50 | e2e p50 | e2e p99 | replay, median of n runs "
            "(load/build/count; n) | assembled tok | replay tok |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
        ]
        for r in sorted(self.results, key=lambda r: (r.config.branches, r.config.participants, r.config.size)):
            a, rp = r.assembly, r.replay
            lines.append(
                f"| {r.config.size:,} | {r.config.branches} | {r.config.participants} | {r.lineage_depth} "
                f"| {r.load_seconds:.1f} | {a['assemble_ms']['p50']:.1f} | {a['assemble_ms']['p99']:.1f} "
                f"| {a['graph_query_ms']['p50']:.1f} | {a['policy_ms']['p50']:.1f} | {a['serialise_ms']['p50']:.1f} "
                f"| {a['end_to_end_ms']['p50']:.1f} | {a['end_to_end_ms']['p99']:.1f} "
                f"| {rp['total_ms']['p50']:,.0f} ({rp['load_ms']['p50']:,.0f}/{rp['build_ms']['p50']:,.0f}/"
                f"{rp['count_ms']['p50']:,.0f}; n={rp['total_ms']['n']}) "
                f"| {r.assembled_tokens:,} | {r.replay_tokens:,} |"
            )
        factors = self.growth_factors()
        if factors:
            lines += ["", "## Growth factor, 1k → 100k artifacts", "",
                      f"Assembly and e2e: p50 of {self.samples} samples at each end. Replay: the median of n runs "
                      "at each end (n at 1k → n at 100k in brackets).", "",
                      "| branches | participants | assemble p50 | e2e p50 | replay (runs) |",
                      "|---:|---:|---:|---:|---:|"]
            lines += [f"| {f['branches']} | {f['participants']} | x{f['assemble_p50_factor']} "
                      f"| x{f['end_to_end_p50_factor']} | x{f['replay_p50_factor']} "
                      f"({f['replay_runs'][0]} → {f['replay_runs'][1]}) |" for f in factors]
        explained = [r for r in self.results if r.explain]
        if explained:
            lines += ["", "## EXPLAIN (ANALYZE, BUFFERS) of the candidate queries", ""]
            for r in explained:
                lines += [f"### {r.config.size:,} artifacts, {r.config.branches} branch(es), "
                          f"{r.config.participants} participants", "",
                          "| query | verdict | index nodes | seq-scanned tables | exec ms | buffers hit/read |",
                          "|---|---|---:|---|---:|---|"]
                for q in r.explain:
                    indexes = sorted({s.split(" using ")[1].split(" on ")[0] for s in q.index_scans})
                    lines.append(f"| {q.label} | {q.verdict} | {len(q.index_scans)} ({', '.join(indexes)}) "
                                 f"| {', '.join(q.seq_scans) or '-'} | {q.execution_ms:.2f} "
                                 f"| {q.shared_hit}/{q.shared_read} |")
                lines.append("")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_json(cls, text: str) -> GrowthReport:
        """A report back from its :meth:`to_json` (to rewrite the Markdown and plots without re-running)."""
        data = json.loads(text)
        results = []
        for r in data["results"]:
            fields = {k: v for k, v in r.items() if k not in ("config", "explain")}
            explain = [ExplainedQuery(**{k: v for k, v in q.items() if k != "verdict"}) for q in r["explain"]]
            results.append(ConfigResult(config=GrowthConfig(**r["config"]), explain=explain, **fields))
        return cls(
            results=results, sizes=tuple(data["sizes"]), branches=tuple(data["branches"]),
            participants=tuple(data["participants"]), samples=data["samples"], started_at=data["started_at"],
            run_seconds=data["run_seconds"], precompute_seconds=data["precompute_seconds"], limits=data["limits"],
            notes=list(data["notes"]),
        )

    def write_plots(self, directory: Path) -> list[Path]:
        """PNG plots (p50/p99 vs size; stacked split at each size), if matplotlib is installed."""
        from harness.bench.growth_plots import write_plots

        return write_plots(self.plot_data(), directory)
