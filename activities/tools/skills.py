"""``load_skill``: the built-in tool that loads one of the participant's skills for the rest of the run.

It is registered and run like any other tool (its schema, spec, retries and
capture are the registry's); like ``recall`` it reads what it needs from its
:class:`~activities.tools.base.ToolContext`: the graph and the worker's
:class:`~activities.skills.SkillLibrary`, which only the turn's ``execute_tool``
activity supplies.

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

from activities.skills import participant_skills
from activities.tools.base import RegisteredTool, ToolArgumentError, ToolContext, ToolError, ToolResult
from policy.enums import FreshnessClass, PrivacyClass
from policy.skills import LOAD_SKILL, loaded_skills
from policy.tools import ToolSpec
from store import branches, conversations
from store import tools as tool_store
from store.skills import participant_skill_states, put_skill_state

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The skill's name, as the skill catalog lists it.",
                 "minLength": 1, "maxLength": 100},
    },
    "required": ["name"],
    "additionalProperties": False,
}


async def _load_skill(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """Load a skill for the participant that made the call: record it in the graph, return its instructions.

    Idempotent: a skill the participant has already loaded on this lineage is not written again
    (a retried attempt, or the model loading it twice), so the state's ``seq`` stays the one it
    was loaded at.

    Raises:
        ToolArgumentError: a skill the participant's agent does not list (or the skills folder
            does not have): permanent, captured as the call's failed result.
        ToolError: no graph or skills in the context (a wiring bug: no attempt can fix it).
    """
    deps, library = context.graph, context.skills
    if deps is None or library is None:
        raise ToolError("load_skill runs only inside an agent turn (the execute_tool activity)")
    name = arguments["name"]
    account = context.account_id
    async with deps.sessions() as session, session.begin():
        call = await tool_store.get_tool_call(session, account, context.tool_call_id)
        available = participant_skills(await conversations.participant_config(session, account,
                                                                             call.participant_id))
        skill = library.get(name) if name in available else None
        if skill is None:
            listed = ", ".join(sorted(name for name in available if name in library)) or "none"
            raise ToolArgumentError(f"load_skill: no skill {name!r} for this participant; its skills: {listed}")
        states = await participant_skill_states(session, account, call.branch_id, call.participant_id)
        if skill.name not in loaded_skills(states, call.participant_id):
            branch = await branches.get_branch(session, account, call.branch_id)
            await put_skill_state(session, account, branch.conversation_id, call.branch_id, call.participant_id,
                                  skill.name, state={"tools": list(skill.tools), "loaded_by": f"tool_call:{call.id}"})
    return ToolResult(payload=skill.instructions.encode(), content_type="text/markdown")


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
        run=_load_skill,
        max_attempts=3,
        timeout_seconds=30.0,
    ),
)
"""The skill tools, for the registry."""


__all__ = ["PARAMETERS", "TOOLS"]
