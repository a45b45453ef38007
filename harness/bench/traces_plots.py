"""PNG plots of the traces benchmark (matplotlib, Agg): token ratio by call, and tokens vs. recall."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.bench.traces_report import TracesReport

MAIN = ("full_replay", "langchain_trim", "langchain_clear_tool_uses", "openai_tool_output_trimmer",
        "anthropic_clear_tool_uses@budget", "dossier")


def write_plots(report: TracesReport, directory: Path) -> list[Path]:
    """``traces-history-by-call.png`` and ``traces-tokens-vs-recall.png``; none without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from harness.bench.traces_report import summarise

    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    names = [n for n in report.strategies if n in MAIN] or report.strategies

    fig, ax = plt.subplots(figsize=(8, 5))
    for name in names:
        by_call: dict[int, list[int]] = defaultdict(list)
        for row in report.rows:
            by_call[row.call].append(row.strategies[name].history_tokens)
        calls = sorted(k for k, v in by_call.items() if len(v) >= 10)
        ax.plot([k + 1 for k in calls], [statistics.median(by_call[k]) for k in calls], marker=".", label=name)
    ax.set_xlabel("model call (trajectories with at least 10 calls at that index)")
    ax.set_ylabel("history tokens, median (prompt minus system prompt)")
    ax.legend(fontsize=7)
    path = directory / "traces-history-by-call.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    paths.append(path)

    fig, ax = plt.subplots(figsize=(8, 5))
    for name in report.strategies:
        s = summarise(report.rows, name)
        if s["tool_ref_recall"] is None:
            continue
        ax.scatter(s["prompt_tokens_total_ratio"], s["tool_ref_recall"], marker="o" if name in MAIN else "x")
        ax.annotate(name, (s["prompt_tokens_total_ratio"], s["tool_ref_recall"]), fontsize=6)
    ax.set_xlabel("prompt tokens summed over all calls / full replay")
    ax.set_ylabel("carried-reference recall")
    path = directory / "traces-tokens-vs-recall.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    paths.append(path)
    return paths
