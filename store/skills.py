"""Skill state: the latest state of each active skill, per participant and branch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import and_, func, literal_column, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import PrivacyClass, VisibilityScope, at_least
from policy.records import SkillStateRecord
from store._sql import allocate_seq, get_row, new_id, translate_errors
from store.branches import load_lineage
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
    *,
    state: Mapping[str, Any],
    active: bool = True,
    visibility: VisibilityScope = VisibilityScope.PARTICIPANT_PRIVATE,
    privacy: PrivacyClass = PrivacyClass.USER,
    derived_from: Sequence[str] = (),
) -> SkillStateRecord:
    """Insert or replace the state of one skill for one participant on one branch.

    Each write takes a new ``seq``: the state is as recent as its last write.

    Args:
        participant_id: the participant using the skill.
        state: the full new state.
        active: whether the skill is still active.
        visibility: who may see the state.
        privacy: its declared class; stored raised to the strictest class of ``derived_from``.
        derived_from: ids of the graph records it was built from (tool memories, artifacts,
            tool calls, model runs ...); an id that names no record fails closed.

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
    # The version being replaced joins the row's history, so a snapshot before this write reads it back.
    replaced = func.jsonb_build_object(
        literal_column("'seq'"), SkillState.seq, literal_column("'state'"), SkillState.state,
        literal_column("'active'"), SkillState.active, literal_column("'visibility'"), SkillState.visibility,
        literal_column("'privacy'"), SkillState.privacy,
    )
    stmt = insert.on_conflict_do_update(
        index_elements=["account_id", "participant_id", "skill", "branch_id"],
        set_={
            "history": SkillState.history.op("||")(func.jsonb_build_array(replaced)),
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


@translate_errors
async def participant_skill_states(
    session: AsyncSession,
    account_id: str,
    branch_id: str,
    participant_id: str,
    *,
    before_seq: int | None = None,
) -> list[SkillStateRecord]:
    """The participant's skill states on a branch's lineage (its own branch and its ancestors up to each fork).

    What decides which skills a participant has loaded (:func:`policy.skills.loaded_skills`):
    read from the graph on every model call, so a resumed parent, a turn continued as new or
    a turn another worker picked up see the same skills.

    Args:
        branch_id: the branch the participant runs on.
        before_seq: only states written before this ``seq`` (what was in force when a tool call
            at that ``seq`` was made); ``None``: every state.

    Returns:
        The states, in ``seq`` order.

    Raises:
        NotFoundError: no such branch in the account.
    """
    lineage = await load_lineage(session, account_id, branch_id)
    arms = [
        and_(SkillState.branch_id == step.branch_id, SkillState.seq <= step.until_seq)
        if step.until_seq is not None else SkillState.branch_id == step.branch_id
        for step in lineage.steps
    ]
    query = select(SkillState).where(SkillState.account_id == account_id,
                                     SkillState.participant_id == participant_id, or_(*arms))
    if before_seq is not None:
        query = query.where(SkillState.seq < before_seq)
    rows = await session.scalars(query.order_by(SkillState.seq, SkillState.id))
    return [to_skill_state(row) for row in rows]
