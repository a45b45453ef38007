"""Deferred tools: calls a human answers later, which the runtime never executes.

``user.pick_file`` asks the user to choose a file. The call is recorded and
left ``deferred``; the turn waits until the user's answer (a JSON object such
as ``{"path": "sales/2026-q2-orders.csv"}``) is captured as the call's result.
Meanwhile every context shows the call as open, so the model knows it is
still waiting and does not assume an answer.
"""

from __future__ import annotations

from activities.tools.base import RegisteredTool
from policy.enums import FreshnessClass, PrivacyClass
from policy.tools import ToolSpec

TOOLS: tuple[RegisteredTool, ...] = (
    RegisteredTool(
        spec=ToolSpec(
            name="user.pick_file",
            result_kind="json",
            # The answer is the user's own choice about their data.
            privacy=PrivacyClass.USER,
            freshness=FreshnessClass.SESSION,
            key_args=("prompt",),
        ),
        description=(
            "Ask the user to pick a file from their workspace. The user answers later; the answer is a JSON "
            "object with the chosen 'path'. Do not guess the answer while the call is open."
        ),
        parameters={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "What to ask the user, e.g. 'Which orders file?'",
                           "minLength": 1, "maxLength": 500},
                "file_types": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Extensions the user may pick, e.g. ['csv']; empty allows any.",
                    "default": [],
                },
            },
            "required": ["prompt"],
            "additionalProperties": False,
        },
        run=None,
        deferred=True,
        max_attempts=1,
    ),
)
"""The deferred tools, for the registry."""


__all__ = ["TOOLS"]
