"""Skills in the graph: loading one (the ``load_skill`` tool's run) and the tools a participant is offered.

Both read the participant's :class:`~policy.records.SkillStateRecord` rows on
its branch's lineage (:func:`store.skills.participant_skill_states`) and leave
the decisions to :mod:`policy.skills`. Nothing is cached in a worker or carried
in a workflow: every model call and every tool execution asks the graph, so a
resumed parent, a turn continued as new, or a turn another worker picked up after
a crash offer exactly the tools the loaded skills grant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from activities.deps import GraphDeps
from activities.skills import SkillLibrary, participant_skills
from activities.tools.arguments import validate_arguments
from activities.tools.base import ToolArgumentError, ToolContext, ToolResult
from activities.tools.registry import ToolRegistry
from activities.tools.skills import PARAMETERS
from policy.records import SkillCatalogEntry, ToolCallRecord
from policy.skills import loaded_skills, offered_with_skills
from store import branches, conversations
from store import tools as tool_store
from store.skills import participant_skill_states, put_skill_state


async def offered_tools(session: AsyncSession, account_id: str, branch_id: str, participant_id: str,
                        base: Sequence[str], config: Mapping[str, Any], tools: ToolRegistry,
                        library: SkillLibrary, *, before: ToolCallRecord | None = None) -> list[str]:
    """The tools a participant is offered on a branch, its skills taken into account.

    Args:
        session: a session.
        account_id: the account.
        branch_id: the branch the participant runs on.
        participant_id: the participant.
        base: what it is offered without skills (its allow-list or its provider's default).
        config: its stored config (its agent's ``skills``).
        tools: the registry (nothing unregistered is offered).
        library: the worker's skills.
        before: a tool call: the tools that were offered when it was made (skills loaded
            before its ``seq``), so a call made in the same response as the ``load_skill``
            that grants it is still refused; ``None``: the tools offered now.

    Returns:
        Canonical names, sorted.
    """
    granted = library.granted(participant_skills(config))
    if not granted:
        return offered_with_skills(base, {}, (), tools.names())
    states = await participant_skill_states(session, account_id, branch_id, participant_id,
                                            before_seq=before.seq if before is not None else None)
    return offered_with_skills(base, granted, loaded_skills(states, participant_id), tools.names())


async def skill_catalog(session: AsyncSession, account_id: str, branch_id: str, participant_id: str,
                        config: Mapping[str, Any], library: SkillLibrary) -> tuple[SkillCatalogEntry, ...]:
    """The participant's catalog for an assembly: its agent's skills, the loaded ones with their instructions."""
    available = participant_skills(config)
    if not library.granted(available):
        return ()
    states = await participant_skill_states(session, account_id, branch_id, participant_id)
    return library.catalog(available, loaded_skills(states, participant_id))


async def load_skill(deps: GraphDeps, library: SkillLibrary, context: ToolContext,
                     arguments: dict[str, Any]) -> ToolResult:
    """Load a skill for the participant that made the call: record it in the graph, return its instructions.

    Idempotent: a skill the participant has already loaded on this lineage is not written again
    (a retried attempt, or the model loading it twice), so the state's ``seq`` stays the one it
    was loaded at.

    Args:
        deps: the graph.
        library: the worker's skills.
        context: the attempt (its account and tool call).
        arguments: the call's arguments (checked against :data:`PARAMETERS` here).

    Returns:
        The skill's instructions (``text/markdown``).

    Raises:
        ToolArgumentError: bad arguments, or a skill the participant's agent does not list (or
            the skills folder does not have): permanent, captured as the call's failed result.
    """
    name = validate_arguments(PARAMETERS, arguments)["name"]
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
                                  skill.name, {"tools": list(skill.tools), "loaded_by": f"tool_call:{call.id}"})
    return ToolResult(payload=skill.instructions.encode(), content_type="text/markdown")


__all__ = ["load_skill", "offered_tools", "skill_catalog"]
