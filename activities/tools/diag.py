"""Diagnostic tools that exercise the runtime's retry and heartbeat paths on purpose.

* ``diag.flaky`` fails its first ``fail_times`` attempts with a transient
  error, then succeeds. Run with ``fail_times`` below its five attempts it
  shows a retried call recovering; at five or more it shows a retry-critical
  failure reaching the model verbatim.
* ``diag.sleep`` works for a while and heartbeats as it goes, so a worker that
  dies mid-call is noticed after the heartbeat timeout, not the full timeout.

Both are deterministic: the outcome depends only on the arguments and the
attempt number Temporal reports.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from activities.tools.base import RegisteredTool, ToolContext, ToolExecutionError, ToolResult
from policy.enums import FreshnessClass, PrivacyClass
from policy.tools import ToolSpec

SLEEP_STEP_SECONDS = 0.2
"""``diag.sleep`` heartbeats after every step of this length."""

MAX_SLEEP_SECONDS = 100.0
"""Stays below the tool's 120 s start-to-close timeout."""


async def flaky(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``diag.flaky``: fail while ``attempt <= fail_times``, then report the attempt that succeeded."""
    fail_times, label = arguments["fail_times"], arguments.get("label", "")
    if context.attempt <= fail_times:
        tag = f" [{label}]" if label else ""
        raise ToolExecutionError(
            f"transient failure {context.attempt}/{fail_times}{tag}: diag.flaky fails its first "
            f"{fail_times} attempt(s) on purpose"
        )
    return ToolResult(payload=json.dumps({"ok": True, "attempts": context.attempt}).encode(),
                      content_type="application/json")


async def sleep(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``diag.sleep``: sleep in short steps, heartbeating the elapsed seconds after each."""
    seconds = arguments["seconds"]
    # Count in whole milliseconds: summing 0.2 floats drifts, and the last step must land exactly.
    total_ms, step_ms, elapsed_ms = round(seconds * 1000), round(SLEEP_STEP_SECONDS * 1000), 0
    while elapsed_ms < total_ms:
        step = min(step_ms, total_ms - elapsed_ms)
        await asyncio.sleep(step / 1000)
        elapsed_ms += step
        context.heartbeat(elapsed_ms / 1000)
    return ToolResult(payload=json.dumps({"slept": seconds}).encode(), content_type="application/json")


TOOLS: tuple[RegisteredTool, ...] = (
    RegisteredTool(
        spec=ToolSpec(
            name="diag.flaky",
            result_kind="json",
            privacy=PrivacyClass.PUBLIC,
            freshness=FreshnessClass.SESSION,
            key_args=("fail_times", "label"),
            # Its failure is the point of the exercise: it must reach the model verbatim.
            retry_critical=True,
            summary_fields=("ok", "attempts"),
        ),
        description=(
            "Diagnostic: fails with a transient error on its first fail_times attempts, then succeeds and "
            "reports the attempt number. Used to check that retries work."
        ),
        parameters={
            "type": "object",
            "properties": {
                "fail_times": {"type": "integer", "minimum": 0, "maximum": 20,
                               "description": "How many attempts fail before one succeeds."},
                "label": {"type": "string", "maxLength": 80, "default": "",
                          "description": "Optional tag shown in the error text."},
            },
            "required": ["fail_times"],
            "additionalProperties": False,
        },
        run=flaky,
        max_attempts=5,
        timeout_seconds=10.0,
    ),
    RegisteredTool(
        spec=ToolSpec(
            name="diag.sleep",
            result_kind="json",
            privacy=PrivacyClass.PUBLIC,
            freshness=FreshnessClass.SESSION,
            key_args=("seconds",),
        ),
        description="Diagnostic: wait the given number of seconds, heartbeating while it waits.",
        parameters={
            "type": "object",
            "properties": {
                "seconds": {"type": "number", "minimum": 0, "maximum": MAX_SLEEP_SECONDS,
                            "description": "How long to wait, in seconds."},
            },
            "required": ["seconds"],
            "additionalProperties": False,
        },
        run=sleep,
        timeout_seconds=120.0,
        heartbeat_seconds=2.0,
    ),
)
"""The diagnostic tools, for the registry."""


__all__ = ["MAX_SLEEP_SECONDS", "SLEEP_STEP_SECONDS", "TOOLS", "flaky", "sleep"]
