"""PNG plots of the traces benchmark (matplotlib, Agg): billed cost by trajectory length and by call index,
history tokens by call, and tokens vs. recall."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.bench.traces_report import TracesReport

MAIN = ("full_replay", "langchain_trim", "langchain_clear_tool_uses", "openai_tool_output_trimmer",
        "anthropic_clear_tool_uses@budget", "dossier", "dossier@32k")
MIN_AT_INDEX = 10
"""A per-call-index point is drawn where at least this many trajectories reach the index."""


def _billed_plot(report: TracesReport, directory: Path, plt, prefix: str) -> Path | None:
    """``traces-billed-by-length.png``: cost / cached full replay by trajectory length, one panel per price model."""
    from harness.bench.billing import PRICE_MODELS
    from harness.bench.traces_report import LENGTH_BUCKETS, length_bucket

    if not report.rows or not report.rows[0].strategies["full_replay"].bills:
        return None
    names = [n for n in (*MAIN, "dossier-no-epochs") if n in report.strategies and n != "full_replay"]
    models = list(PRICE_MODELS)
    fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 4), sharey=True)
    labels = [label for label, _, _ in LENGTH_BUCKETS
              if any(length_bucket(r.calls_in_trajectory) == label for r in report.rows)]
    for ax, model in zip(axes, models, strict=True):
        for name in names:
            ratios = []
            for label in labels:
                rows = [r for r in report.rows if length_bucket(r.calls_in_trajectory) == label]
                replay = sum(r.strategies["full_replay"].bills[model].cost for r in rows)
                cost = sum(r.strategies[name].bills[model].cost for r in rows)
                ratios.append(cost / replay if replay else float("nan"))
            ax.plot(labels, ratios, marker=".", label=name, linewidth=2.5 if name == "dossier" else 1)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_title(model)
        ax.set_xlabel("model calls in the trajectory")
    axes[0].set_ylabel("billed input cost / cached full replay")
    axes[-1].legend(fontsize=6)
    path = directory / f"{prefix}-billed-by-length.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _billed_by_call_plot(report: TracesReport, directory: Path, plt, prefix: str) -> Path | None:
    """``<prefix>-billed-by-call.png``: mean billed input cost of model call *k* at Anthropic prices, in units
    of one uncached input token, for replay, the peers and Dossier."""
    if not report.rows or "anthropic" not in report.rows[0].strategies["full_replay"].bills:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for name in [n for n in MAIN if n in report.strategies]:
        by_call: dict[int, list[float]] = defaultdict(list)
        for row in report.rows:
            by_call[row.call].append(row.strategies[name].bills["anthropic"].cost)
        calls = sorted(k for k, v in by_call.items() if len(v) >= MIN_AT_INDEX)
        ax.plot([k + 1 for k in calls], [statistics.fmean(by_call[k]) for k in calls], marker=".", label=name,
                linewidth=2.5 if name == "dossier" else 1)
    ax.set_xlabel(f"model call (trajectories with at least {MIN_AT_INDEX} calls at that index)")
    ax.set_ylabel("billed input cost, mean (Anthropic prices, uncached-token units)")
    ax.legend(fontsize=7)
    path = directory / f"{prefix}-billed-by-call.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def write_plots(report: TracesReport, directory: Path, prefix: str = "traces") -> list[Path]:
    """``<prefix>-billed-by-length.png``, ``-billed-by-call.png``, ``-history-by-call.png`` and
    ``-tokens-vs-recall.png``; none without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from harness.bench.traces_report import summarise

    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for plot in (_billed_plot, _billed_by_call_plot):
        made = plot(report, directory, plt, prefix)
        if made is not None:
            paths.append(made)
    names = [n for n in report.strategies if n in MAIN] or report.strategies

    fig, ax = plt.subplots(figsize=(8, 5))
    for name in names:
        by_call: dict[int, list[int]] = defaultdict(list)
        for row in report.rows:
            by_call[row.call].append(row.strategies[name].history_tokens)
        calls = sorted(k for k, v in by_call.items() if len(v) >= MIN_AT_INDEX)
        ax.plot([k + 1 for k in calls], [statistics.median(by_call[k]) for k in calls], marker=".", label=name)
    ax.set_xlabel("model call (trajectories with at least 10 calls at that index)")
    ax.set_ylabel("history tokens, median (prompt minus system prompt)")
    ax.legend(fontsize=7)
    path = directory / f"{prefix}-history-by-call.png"
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
    path = directory / f"{prefix}-tokens-vs-recall.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    paths.append(path)
    return paths
