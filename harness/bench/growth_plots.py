"""The growth benchmark's plots: latency vs size, and the p50 split at each size."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_plots(data: dict[str, Any], directory: Path) -> list[Path]:
    """PNG plots of :meth:`GrowthReport.plot_data`, if matplotlib is installed; returns the files written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(8, 5))
    for s in data["series"]:
        ax.plot(s["size"], s["assemble_p50_ms"], marker="o", label=f"assemble p50, {s['label']}")
        ax.plot(s["size"], s["assemble_p99_ms"], linestyle=":", marker=".", label=f"assemble p99, {s['label']}")
        runs = s.get("replay_runs") or []
        what = (f"median of {min(runs)}-{max(runs)} runs" if runs and min(runs) != max(runs)
                else f"median of {runs[0]} runs" if runs else "median")
        ax.plot(s["size"], s["replay_p50_ms"], linestyle="--", marker="x", label=f"replay ({what}), {s['label']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(data["x"])
    ax.set_ylabel(data["y"])
    ax.legend(fontsize=6)
    path = directory / "growth-latency.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    paths.append(path)
    fig, axes = plt.subplots(1, len(data["series"]), figsize=(4 * len(data["series"]), 4), squeeze=False)
    for ax, s in zip(axes[0], data["series"], strict=True):
        bottom = [0.0] * len(s["size"])
        labels = [f"{n:,}" for n in s["size"]]
        for key, values in s["split_p50_ms"].items():
            ax.bar(labels, values, bottom=bottom, label=key)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_title(s["label"], fontsize=8)
        ax.set_ylabel("p50 ms")
    axes[0][0].legend(fontsize=7)
    path = directory / "growth-split.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    paths.append(path)
    return paths
