"""`dossier bench all`: every benchmark part, as Markdown tables, JSON and PNG plots in one folder.

Parts (numbered as in the benchmark issue):

1+2. ``traces``: real trajectories through full replay, the peers' own code
     (LangChain, OpenAI Agents SDK, Anthropic context editing) and Dossier;
     ``traces-coding``: the same on real coding-agent runs (shell commands, results of 5-15k tokens);
     ``ablations``: Dossier alone on a sample of them, one policy knob changed at a time;
3.   ``scenarios``: the seventeen seed scenarios through every strategy;
4.   ``growth``: assembly cost on Postgres as the graph grows to 100k artifacts;
5.   ``orchestration``: Temporal overhead and workflow history size.

Each part writes ``<part>.md`` and ``<part>.json`` (plus its plots) into the
output folder, and ``README.md`` there indexes them with the machine they
ran on. Benchmarks measure; nothing here asserts a timing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.machine import describe_machine, machine_markdown
from dossier.runtime import open_graph
from dossier.settings import Settings

PARTS = ("traces", "traces-coding", "ablations", "scenarios", "growth", "orchestration")
DEFAULT_OUT = Path("bench-results")

Progress = Callable[[str], None]


@dataclass
class PartResult:
    """What one part wrote, and how long it took."""

    name: str
    title: str
    seconds: float
    files: list[Path] = field(default_factory=list)


def _write(out: Path, name: str, markdown: str, data: Any) -> list[Path]:
    md, js = out / f"{name}.md", out / f"{name}.json"
    md.write_text(markdown.rstrip() + "\n")
    js.write_text(data if isinstance(data, str) else json.dumps(data, indent=2, default=str))
    return [md, js]


async def _scenarios(settings: Settings, out: Path, quick: bool) -> list[Path]:
    from harness.bench.peers import peer_strategies
    from harness.bench.scenario_matrix import run_matrix

    async with open_graph(settings, inline_max_bytes=0) as deps:
        report = await run_matrix(deps, peer_strategies(deps.counter),
                                  names=["retry_critical_errors", "branch_isolation"] if quick else None)
    files = _write(out, "scenarios", report.to_markdown(), report.to_json())
    files += _plot_scenarios(report, out)
    return files


def _plot_scenarios(report: Any, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = report.strategies
    tokens = [sum(row[n].tokens for row in report.rows.values()) for n in names]
    leaked = [sum(len(row[n].forbidden_present) for row in report.rows.values()) for n in names]
    missing = [sum(len(row[n].required_missing) for row in report.rows.values()) for n in names]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    axes[0].barh(names, tokens, color="#4C72B0")
    axes[0].set_xlabel("prompt tokens, all scenarios")
    axes[0].invert_yaxis()
    axes[1].barh([f"{n}" for n in names], leaked, color="#C44E52", label="forbidden facts leaked")
    axes[1].barh(names, missing, left=leaked, color="#DD8452", label="required facts missing")
    axes[1].set_xlabel("facts")
    axes[1].invert_yaxis()
    axes[1].legend(loc="lower right")
    fig.suptitle("Seed scenarios: tokens and fact fidelity per strategy")
    fig.tight_layout()
    path = out / "scenarios.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]


async def _traces(settings: Settings, out: Path, quick: bool, traces: str | None) -> list[Path]:
    from harness.bench.traces import DEFAULT_TRACES, run_traces

    report = await run_traces(settings, traces or str(DEFAULT_TRACES), 12 if quick else None)
    files = _write(out, "traces", report.to_markdown(), report.to_json())
    from harness.bench.traces_plots import write_plots

    return files + write_plots(report, out)


async def _coding_traces(settings: Settings, out: Path, quick: bool) -> list[Path]:
    from harness.bench.traces import DEFAULT_CODING_TRACES, run_traces
    from harness.bench.traces_plots import write_plots

    report = await run_traces(settings, str(DEFAULT_CODING_TRACES), 4 if quick else None)
    files = _write(out, "traces-coding", report.to_markdown(), report.to_json())
    return files + write_plots(report, out, prefix="traces-coding")


async def _ablations(settings: Settings, out: Path, quick: bool, traces: str | None) -> list[Path]:
    from harness.bench.ablations import ABLATIONS, run_ablations
    from harness.bench.traces import DEFAULT_TRACES

    report = await run_ablations(settings, traces or str(DEFAULT_TRACES), limit=3 if quick else None,
                                 ablations=ABLATIONS[:2] if quick else ABLATIONS)
    return _write(out, "ablations", report.to_markdown(), report.to_json())


async def _growth(settings: Settings, out: Path, quick: bool) -> list[Path]:
    from harness.bench.growth import run_growth, run_quick

    report = await (run_quick(settings=settings) if quick else run_growth(settings))
    files = _write(out, "growth", report.to_markdown(), report.to_json())
    return files + list(report.write_plots(out))


async def _orchestration(settings: Settings, out: Path, quick: bool) -> list[Path]:
    from harness.bench.orchestration import run_orchestration

    from harness.bench.orchestration_plots import write_plots

    report = await run_orchestration(settings, quick=quick)
    files = _write(out, "orchestration", report.to_markdown(), report.to_json())
    return files + write_plots(report, out)


TITLES = {
    "traces": "1–2. Real trajectories: Dossier vs full replay vs the peers' own code",
    "traces-coding": "1–2c. Real coding-agent runs: Dossier vs full replay vs the peers' own code",
    "ablations": "1–2b. Real trajectories: Dossier with one policy knob changed at a time",
    "scenarios": "3. Seed scenarios through every strategy",
    "growth": "4. Assembly cost as the graph grows",
    "orchestration": "5. Temporal overhead and workflow history size",
}


async def run_suite(settings: Settings, out: Path = DEFAULT_OUT, *, parts: Sequence[str] = PARTS,
                    quick: bool = False, traces: str | None = None, progress: Progress | None = None
                    ) -> list[PartResult]:
    """Run the chosen parts and write their results and an index into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    runners = {
        "traces": lambda: _traces(settings, out, quick, traces),
        "traces-coding": lambda: _coding_traces(settings, out, quick),
        "ablations": lambda: _ablations(settings, out, quick, traces),
        "scenarios": lambda: _scenarios(settings, out, quick),
        "growth": lambda: _growth(settings, out, quick),
        "orchestration": lambda: _orchestration(settings, out, quick),
    }
    results: list[PartResult] = []
    for name in parts:
        if progress:
            progress(f"{name}: running")
        began = time.perf_counter()
        files = await runners[name]()
        results.append(PartResult(name, TITLES[name], time.perf_counter() - began, files))
        if progress:
            progress(f"{name}: done in {results[-1].seconds:.0f} s")
    write_index(out, results, quick=quick)
    return results


def write_index(out: Path, results: Sequence[PartResult], *, quick: bool = False) -> Path:
    """``README.md`` in ``out``: the machine, then every part found there (run now or earlier)."""
    runs_file = out / "runs.json"
    runs: dict[str, Any] = json.loads(runs_file.read_text()) if runs_file.exists() else {}
    machine = describe_machine()
    for result in results:
        runs[result.name] = {"seconds": round(result.seconds, 1), "files": [p.name for p in result.files],
                             "machine": machine, "quick": quick}
    runs_file.write_text(json.dumps(runs, indent=2))
    lines = ["# Dossier benchmark results", ""]
    for name in PARTS:
        run = runs.get(name)
        if run is None or not (out / f"{name}.md").exists():
            continue
        lines += [f"## {TITLES[name]}", ""]
        if run.get("quick"):
            lines += ["**Quick mode: tiny inputs, for checking that the benchmark runs. Not results.**", ""]
        lines += [machine_markdown(run["machine"]), "",
                  f"Ran in {run['seconds']:.0f} s. Files: " + ", ".join(f"[{f}]({f})" for f in run["files"]), "",
                  (out / f"{name}.md").read_text().rstrip(), ""]
        lines += [f"![{Path(f).stem}]({f})" for f in run["files"] if f.endswith(".png")]
        lines.append("")
    index = out / "README.md"
    index.write_text("\n".join(lines))
    return index
