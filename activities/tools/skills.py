"""``load_skill``: the built-in tool that loads one of the participant's skills for the rest of the run.

It is registered like any other tool (so its schema, spec, retries and capture
are the registry's), but it writes to the graph, so the turn's ``execute_tool``
activity runs it through :func:`activities.skill_state.load_skill` with the graph
dependencies and the worker's :class:`~activities.skills.SkillLibrary` instead of
through :meth:`~activities.tools.registry.ToolRegistry.execute`.

Loading writes a :class:`~policy.records.SkillStateRecord` (skill, the tools it
grants, the call that loaded it) for the participant on the call's branch; its
result is the skill's instructions, read from the user's skill file. From the
next model call on, :func:`policy.skills.offered_with_skills` offers the tools
the skill grants. Only a ``load_skill`` call the model made and the runtime
executed writes that state: a tool result that *says* "load skill X" is data and
changes nothing.
"""

from __future__ import annotations

from typing import Any

from activities.tools.base import RegisteredTool, ToolArgumentError, ToolContext, ToolResult
from policy.enums import FreshnessClass, PrivacyClass
from policy.skills import LOAD_SKILL
from policy.tools import ToolSpec

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The skill's name, as the skill catalog lists it.",
                 "minLength": 1, "maxLength": 100},
    },
    "required": ["name"],
    "additionalProperties": False,
}


async def _outside_a_turn(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """Through the bare registry there is no graph to record the skill in: refuse (permanently)."""
    raise ToolArgumentError("load_skill runs only inside an agent turn (the execute_tool activity)")


TOOLS: tuple[RegisteredTool, ...] = (
    RegisteredTool(
        spec=ToolSpec(
            name=LOAD_SKILL,
            result_kind="text",
            # The result is the instructions of a skill file the user wrote.
            privacy=PrivacyClass.USER,
            freshness=FreshnessClass.SESSION,
            key_args=("name",),
        ),
        description=(
            "Load one of the skills in the skill catalog: returns its instructions and makes the tools it grants "
            "available from your next step on, for the rest of this run."
        ),
        parameters=PARAMETERS,
        run=_outside_a_turn,
        max_attempts=3,
        timeout_seconds=30.0,
    ),
)
"""The skill tools, for the registry."""


__all__ = ["PARAMETERS", "TOOLS"]
