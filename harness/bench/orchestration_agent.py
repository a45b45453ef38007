"""The bench-only agent of the orchestration benchmark: one tool, one scripted model.

* ``bench.blob`` returns a deterministic JSON document of about ``kb`` KiB
  (a list of records; different bytes for every ``(turn, step)``, so
  content-addressed storage never dedupes two calls).
* The scripted model ``scripted:orchestration-bench`` reads the turn number
  and blob size from the latest user message ("Bench turn 7: fetch 3 blobs
  of 200 KB each.") and, like every scripted model, decides from the
  assembled context alone: it calls ``bench.blob`` for steps 1, 2, 3 (one call
  per model call) until each result is in view, then answers citing them.
  A turn is therefore exactly four model calls and three tool calls.

Both are registered through the factory parameters that ``build_worker`` and
``TurnActivities`` accept (``tools=``, ``providers=``); nothing in
``activities/tools`` or ``activities/providers`` changes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from activities.providers.base import ModelProvider, parse_model_spec
from activities.providers.factory import ModelProviders
from activities.providers.scripted import ScriptedProvider
from activities.providers.scripted.scripts.steps import Call, Reply, Script, Turn, call
from activities.tools.base import RegisteredTool, ToolContext, ToolResult
from activities.tools.registry import ToolRegistry, default_registry
from policy.enums import FreshnessClass, PrivacyClass
from policy.tools import ToolSpec

BLOB_TOOL = "bench.blob"
MODEL = "orchestration-bench"
MODEL_SPEC = f"scripted:{MODEL}"
TOOL_CALLS_PER_TURN = 3
MODEL_CALLS_PER_TURN = TOOL_CALLS_PER_TURN + 1
MAX_BLOB_KB = 4096

_REQUEST = re.compile(r"Bench turn (?P<turn>\d+): fetch \d+ blobs of (?P<kb>\d+) KB each", re.IGNORECASE)


def user_prompt(turn: int, kb: int) -> str:
    """The user message that opens bench turn ``turn``."""
    return f"Bench turn {turn}: fetch {TOOL_CALLS_PER_TURN} blobs of {kb} KB each."


def blob_payload(turn: int, step: int, kb: int) -> bytes:
    """A deterministic JSON document of about ``kb`` KiB (at least one record)."""
    target = max(kb, 0) * 1024
    head = json.dumps({"turn": turn, "step": step, "kind": "inventory snapshot"})[:-1]
    rows: list[str] = []
    size = len(head) + 12
    index = 0
    while size < target or not rows:
        row = json.dumps({
            "id": index, "sku": f"SKU-{turn:04d}-{step}-{index:06d}", "warehouse": f"WH-{(index * 7 + step) % 13:02d}",
            "qty": (index * 37 + turn * 11 + step) % 997, "status": ("ok", "low", "reorder")[(index + turn) % 3],
            "note": f"batch {(index * 31 + turn) % 1000:03d} checked on aisle {(index + step) % 40}",
        }, separators=(",", ":"))
        rows.append(row)
        size += len(row) + 1
        index += 1
    return f'{head},"rows":[{",".join(rows)}]}}'.encode()


async def _run_blob(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    payload = blob_payload(arguments["turn"], arguments["step"], arguments["kb"])
    return ToolResult(payload=payload, content_type="application/json")


BLOB: RegisteredTool = RegisteredTool(
    spec=ToolSpec(
        name=BLOB_TOOL,
        result_kind="json",
        privacy=PrivacyClass.PUBLIC,
        freshness=FreshnessClass.SESSION,
        key_args=("turn", "step"),
        summary_fields=("turn", "step", "kind"),
    ),
    description="Benchmark: return a large deterministic JSON document (an inventory snapshot of about kb KiB).",
    parameters={
        "type": "object",
        "properties": {
            "turn": {"type": "integer", "minimum": 0},
            "step": {"type": "integer", "minimum": 1, "maximum": TOOL_CALLS_PER_TURN},
            "kb": {"type": "integer", "minimum": 0, "maximum": MAX_BLOB_KB},
        },
        "required": ["turn", "step", "kb"],
        "additionalProperties": False,
    },
    run=_run_blob,
    timeout_seconds=60.0,
)


def bench_registry() -> ToolRegistry:
    """Every built-in tool plus ``bench.blob``."""
    return ToolRegistry([*default_registry(), BLOB])


def triple_fetch(turn: Turn) -> Reply:
    """The script: fetch blobs 1..3 of this turn one call at a time, then answer citing them."""
    found = _REQUEST.search(turn.view.latest_user_text())
    if found is None:
        return Reply(text="No bench turn requested.")
    number, kb = int(found.group("turn")), int(found.group("kb"))
    cites = []
    for step in range(1, TOOL_CALLS_PER_TURN + 1):
        progress = turn.view.progress(BLOB_TOOL, turn=number, step=step)
        if progress.state == "todo":
            if BLOB_TOOL not in turn.offered:
                return call(turn, BLOB_TOOL)  # says the tool is not available
            return Reply(calls=(Call(BLOB_TOOL, {"turn": number, "step": step, "kb": kb}),))
        if progress.state != "done":
            return Reply(text=f"Bench turn {number}: step {step} is {progress.state} {progress.cite}.")
        cites.append(progress.cite)
    return Reply(text=f"Bench turn {number}: fetched {TOOL_CALLS_PER_TURN} blobs {' '.join(cites)}.")


class BenchScriptedProvider(ScriptedProvider):
    """The scripted provider, knowing the bench script besides the built-in ones."""

    def check_model(self, model: str) -> Script:
        if model == MODEL:
            return triple_fetch
        return super().check_model(model)


_PROVIDER = BenchScriptedProvider()
_DEFAULT = ModelProviders()


def bench_providers(spec: str) -> tuple[ModelProvider, str]:
    """Provider factory for ``build_worker(providers=...)``: the bench model, else the default factory."""
    provider, model = parse_model_spec(spec)
    if provider == "scripted" and model == MODEL:
        return _PROVIDER, model
    return _DEFAULT(spec)


__all__ = [
    "BLOB",
    "BLOB_TOOL",
    "MODEL",
    "MODEL_CALLS_PER_TURN",
    "MODEL_SPEC",
    "TOOL_CALLS_PER_TURN",
    "BenchScriptedProvider",
    "bench_providers",
    "bench_registry",
    "blob_payload",
    "triple_fetch",
    "user_prompt",
]
