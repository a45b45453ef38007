"""The counterfactual of the orchestration benchmark: what passing the transcript through activities would cost.

Sizes are computed from the run's own transcript (OpenAI messages as compact
JSON); :func:`crossings` finds where they pass Temporal's payload and
history limits, extrapolating past the measured calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from temporalio.client import WorkflowHistory

from harness.bench.orchestration_report import HISTORY_LIMIT_BYTES, PAYLOAD_LIMIT_BYTES, Crossing, HistoryPoint


class Transcript:
    """The running size of the transcript as a JSON list of OpenAI messages."""

    def __init__(self, system_prompt: str) -> None:
        self.size = 2  # "[]"
        self.count = 0
        self.history = 0
        self.messages: list[dict[str, Any]] = []
        """The transcript as OpenAI messages: what full replay sends."""
        if system_prompt:
            self.add({"role": "system", "content": system_prompt})

    def add(self, message: dict[str, Any]) -> None:
        visible = {k: v for k, v in message.items() if not k.startswith("_")}
        self.size += message_bytes(visible) + (1 if self.count else 0)
        self.count += 1
        self.messages.append(visible)


def json_bytes(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def message_bytes(message: dict[str, Any]) -> int:
    """Bytes of one OpenAI message as compact JSON."""
    return len(json_bytes({k: v for k, v in message.items() if not k.startswith("_")}))


def history_size(history: WorkflowHistory) -> tuple[int, int, int, int]:
    """Protobuf bytes, JSON bytes, event count and largest event of a workflow history."""
    sizes = [event.ByteSize() for event in history.events]
    return sum(sizes), len(history.to_json().encode()), len(sizes), max(sizes, default=0)




def crossings(points: Sequence[HistoryPoint], horizon: int = 100_000) -> tuple[Crossing, ...]:
    """The counterfactual's crossing points of the 2 MiB payload and 50 MiB history limits.

    Past the measured calls the growth is extrapolated: the transcript keeps
    growing by the mean bytes per call measured, and the turn pattern (model
    calls per turn) repeats.
    """
    series = {
        "activity input (one payload)": ([p.cf_input_bytes for p in points], PAYLOAD_LIMIT_BYTES),
        "history, one workflow per turn": ([p.cf_history_turn_bytes for p in points], HISTORY_LIMIT_BYTES),
        "history, one workflow per conversation": ([p.cf_history_conversation_bytes for p in points],
                                                   HISTORY_LIMIT_BYTES),
    }
    out = []
    for name, (values, limit) in series.items():
        measured = next((i + 1 for i, v in enumerate(values) if v > limit), None)
        if measured is not None or len(points) < 2:
            out.append(Crossing(quantity=name, limit_bytes=limit, call=measured, extrapolated=False,
                                horizon=len(points)))
            continue
        out.append(Crossing(quantity=name, limit_bytes=limit, call=_extrapolate(points, name, limit, horizon),
                            extrapolated=True, horizon=horizon))
    return tuple(out)


def _extrapolate(points: Sequence[HistoryPoint], name: str, limit: int, horizon: int) -> int | None:
    growth = (points[-1].cf_input_bytes - points[0].cf_input_bytes) / (len(points) - 1)
    if growth <= 0:
        return None
    per_turn = max(sum(1 for p in points if p.turn == points[0].turn), 1)
    size = points[-1].cf_input_bytes
    conversation = points[-1].cf_history_conversation_bytes
    turn_total = points[-1].cf_history_turn_bytes
    call = points[-1].call
    position = sum(1 for p in points if p.turn == points[-1].turn)
    while call < horizon:
        call += 1
        size += growth
        position = position % per_turn + 1
        turn_total = (0 if position == 1 else turn_total) + size + growth
        conversation += size + growth
        value = {"activity input (one payload)": size, "history, one workflow per turn": turn_total,
                 "history, one workflow per conversation": conversation}[name]
        if value > limit:
            return call
    return None

