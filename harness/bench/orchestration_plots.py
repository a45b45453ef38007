"""The orchestration benchmark's plots: history per model call vs the counterfactual, turns per second."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.bench.orchestration_report import HISTORY_LIMIT_BYTES, PAYLOAD_LIMIT_BYTES

if TYPE_CHECKING:
    from harness.bench.orchestration_report import OrchestrationReport


def write_plots(report: OrchestrationReport, directory: Path) -> list[Path]:
    """PNG plots of ``report`` (needs matplotlib, from the ``bench`` extra); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    data = report.plot_data()
    written: list[Path] = []
    if report.history:
        series = data["history"]
        figure, axis = plt.subplots(figsize=(8, 5))
        x = series["x_call"]
        axis.plot(x, series["dossier_turn_history_bytes"], label="Dossier: workflow history of the turn (measured)")
        axis.plot(x, series["counterfactual_activity_input_bytes"], "--",
                  label="counterfactual: transcript as model-call activity input")
        axis.plot(x, series["counterfactual_turn_workflow_history_bytes"], "--",
                  label="counterfactual: history, one workflow per turn")
        axis.plot(x, series["counterfactual_conversation_workflow_history_bytes"], "--",
                  label="counterfactual: history, one workflow per conversation")
        axis.axhline(PAYLOAD_LIMIT_BYTES, color="grey", linestyle=":", label="2 MiB payload limit")
        axis.axhline(HISTORY_LIMIT_BYTES, color="black", linestyle=":", label="50 MiB history limit")
        axis.set_yscale("log")
        axis.set_xlabel("model call in the conversation")
        axis.set_ylabel("bytes")
        axis.set_title(f"Workflow history per model call ({report.parameters.get('result_kb')} KiB tool results)\n"
                       "counterfactual computed from this run's transcript, not by running another framework",
                       fontsize=9)
        axis.legend(fontsize=7)
        figure.tight_layout()
        path = directory / "orchestration_history.png"
        figure.savefig(path, dpi=120)
        plt.close(figure)
        written.append(path)
    if report.throughput:
        series = data["throughput"]
        figure, axis = plt.subplots(figsize=(6, 4))
        levels = series["concurrency"]
        width = 0.38
        for offset, mode in ((-width / 2, "temporal"), (width / 2, "in_process")):
            values = series["series"][mode]
            axis.bar([i + offset for i in range(len(values))], values, width, label=mode.replace("_", "-"))
        axis.set_xticks(range(len(levels)), [str(level) for level in levels])
        axis.set_xlabel("concurrent turns")
        axis.set_ylabel("turns / s (one worker)")
        axis.set_title("Agent turns per second (3 tool calls + answer)")
        axis.legend()
        figure.tight_layout()
        path = directory / "orchestration_throughput.png"
        figure.savefig(path, dpi=120)
        plt.close(figure)
        written.append(path)
    return written
