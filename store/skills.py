"""Skill state: the latest state of each active skill, per participant and branch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import PrivacyClass, VisibilityScope, at_least
from policy.records import SkillStateRecord
from store._sql import allocate_seq, get_row, new_id, translate_errors
from store.convert import to_skill_state
from store.models import SkillState
from store.taint import records_privacy


@translate_errors
async def put_skill_state(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    branch_id: str,
    participant_id: str,
    skill: str,
    state: Mapping[str, Any],
    *,
    active: bool = True,
    visibility: VisibilityScope = VisibilityScope.PARTICIPANT_PRIVATE,
    privacy: PrivacyClass = PrivacyClass.USER,
    derived_from: Sequence[str] = (),
) -> SkillStateRecord:
    """Insert or replace the state of one skill for one participant on one branch.

    Each write takes a new ``seq``: the state is as recent as its last write.

    Args:
        session: the caller's session.
        account_id: the owning account.
        conversation_id: the conversation.
        branch_id: the branch.
        participant_id: the participant using the skill.
        skill: the skill's name.
        state: the full new state.
        active: whether the skill is still active.
        visibility: who may see the state.
        privacy: its declared class; stored raised to the strictest class of ``derived_from``.
        derived_from: ids of the graph records it was built from (tool memories, artifacts,
            tool calls, model runs ...); an id that names no record fails closed.

    Returns:
        The stored state.

    Raises:
        NotFoundError: unknown conversation, branch or participant.
    """
    # Taint: state built from graph records is never looser than any of them.
    privacy = at_least(privacy, await records_privacy(session, account_id, derived_from, what="derived_from",
                                                      refuse_unknown=False))
    seq = await allocate_seq(session, account_id, conversation_id)
    values = {
        "id": new_id(),
        "account_id": account_id,
        "conversation_id": conversation_id,
        "branch_id": branch_id,
        "participant_id": participant_id,
        "skill": skill,
        "seq": seq,
        "state": dict(state),
        "active": active,
        "visibility": VisibilityScope(visibility).value,
        "privacy": PrivacyClass(privacy).value,
    }
    insert = pg_insert(SkillState).values(**values)
    stmt = insert.on_conflict_do_update(
        index_elements=["account_id", "participant_id", "skill", "branch_id"],
        set_={
            "seq": insert.excluded.seq,
            "state": insert.excluded.state,
            "active": insert.excluded.active,
            "visibility": insert.excluded.visibility,
            "privacy": insert.excluded.privacy,
            "updated_at": func.now(),
        },
    ).returning(SkillState.id)
    skill_state_id = await session.scalar(stmt)
    assert skill_state_id is not None  # an upsert always returns its row
    return to_skill_state(await get_row(session, SkillState, account_id, skill_state_id))


@translate_errors
async def get_skill_state(session: AsyncSession, account_id: str, skill_state_id: str) -> SkillStateRecord:
    """A skill state by id.

    Raises:
        NotFoundError: no such skill state in the account.
    """
    return to_skill_state(await get_row(session, SkillState, account_id, skill_state_id))
