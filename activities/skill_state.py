"""Skills in the graph: the tools a participant is offered and its skill catalog.

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

from activities.skills import SkillLibrary, participant_skills
from activities.tools.registry import ToolRegistry
from policy.records import SkillCatalogEntry, ToolCallRecord
from policy.skills import loaded_skills, offered_with_skills
from store.skills import participant_skill_states


async def offered_tools(session: AsyncSession, account_id: str, branch_id: str, participant_id: str,
                        *,
                        base: Sequence[str], config: Mapping[str, Any], tools: ToolRegistry,
                        library: SkillLibrary, before: ToolCallRecord | None = None) -> list[str]:
    """The tools a participant is offered on a branch, its skills taken into account.

    Args:
        branch_id: the branch the participant runs on.
        base: what it is offered without skills (its allow-list or its provider's default).
        config: its stored config (its agent's ``skills``).
        tools: the registry (nothing unregistered is offered).
        before: a tool call: the tools that were offered when it was made (skills loaded
            before its ``seq``), so a call made in the same response as the ``load_skill``
            that grants it is still refused; ``None``: the tools offered now.
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


__all__ = ["offered_tools", "skill_catalog"]
