"""A record's provenance chain: memory -> artifact -> tool call -> model run -> branch -> participant.

One walk, read by both the audit (``dossier audit explain`` / ``why-not``
links) and the inspector's record page, so the two cannot disagree on where a
record comes from::

    chain = await walk_provenance(session, account_id, "memory", memory_id)
    [link.kind for link in chain.links]   # memory, artifact, tool_call, model_run, branch, participant, ...
    chain.get("branch", branch_id)        # the BranchRecord, if the walk reached it

A memory leads to each of its source artifacts, an artifact to its tool call,
and a tool call, message, memory, checkpoint or skill state to the model run,
branch and participant it was written under. Every read is account scoped. A
link whose record is gone (deleted by retention) is left out; the record asked
about itself must exist.

Not to be confused with ``activities/provenance.py``, which verifies stored
derivations against their artifacts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from store import branches, checkpoints, conversations, messages, skills, tool_memories, user_memories
from store import tools as tool_store
from store.errors import NotFoundError

_GETTERS: dict[str, Callable[[AsyncSession, str, str], Awaitable[Any]]] = {
    "memory": tool_memories.get_tool_memory, "artifact": tool_store.get_artifact,
    "tool_call": tool_store.get_tool_call, "message": messages.get_message,
    "checkpoint": checkpoints.get_checkpoint, "skill": skills.get_skill_state,
    "user_memory": user_memories.get_user_memory, "model_run": messages.get_model_run,
    "branch": branches.get_branch, "participant": conversations.get_participant,
}
"""Account-scoped getter of each kind of record a chain holds."""

START_KINDS = ("memory", "artifact", "tool_call", "message", "checkpoint", "skill", "user_memory")
"""The kinds of record a walk can start from (and why-not accepts), in the order a bare id is looked up."""


async def get_record(session: AsyncSession, account_id: str, kind: str, record_id: str) -> Any:
    """One record of the account, by its kind: the store's own getter of that kind.

    Args:
        kind: a kind a chain holds (``memory``, ``artifact``, ``tool_call``, ``message``, ``checkpoint``,
            ``skill``, ``user_memory``, ``model_run``, ``branch``, ``participant``).

    Raises:
        NotFoundError: an unknown kind, or an unknown or foreign record (the same answer for both).
    """
    getter = _GETTERS.get(kind)
    if getter is None:
        raise NotFoundError(kind, record_id)
    return await getter(session, account_id, record_id)


@dataclass(frozen=True)
class ChainLink:
    """One record of a chain: its kind (a key of the getters: ``memory``, ``model_run``...) and the stored record."""

    kind: str
    record: Any


@dataclass
class ProvenanceChain:
    """The records a walk reached, each once, in walking order (the record asked about first)."""

    links: list[ChainLink] = field(default_factory=list)

    def get(self, kind: str, record_id: str) -> Any | None:
        """The record of that kind and id, if the walk reached it."""
        return next((link.record for link in self.links if link.kind == kind and link.record.id == record_id), None)

    def of_kind(self, kind: str) -> list[Any]:
        """The records of one kind, in walking order."""
        return [link.record for link in self.links if link.kind == kind]


async def walk_provenance(session: AsyncSession, account_id: str, kind: str, record_id: str) -> ProvenanceChain:
    """Walk a record's provenance chain.

    Args:
        kind: one of :data:`START_KINDS`.

    Returns:
        The chain; links whose records are gone are left out.

    Raises:
        NotFoundError: an unknown kind, or an unknown or foreign record (the same answer for both).
    """
    if kind not in START_KINDS or not record_id:
        raise NotFoundError(kind, record_id)
    walk = _Walk(session, account_id)
    await walk.record(kind, record_id, first=True)
    return ProvenanceChain(list(walk.links.values()))


class _Walk:
    def __init__(self, session: AsyncSession, account_id: str) -> None:
        self.session, self.account_id = session, account_id
        self.links: dict[tuple[str, str], ChainLink] = {}

    async def _get(self, kind: str, record_id: str | None, *, first: bool = False) -> Any | None:
        """The record, added to the chain; ``None`` if already there, missing or gone (raises for the first)."""
        if not record_id or (kind, record_id) in self.links:
            return None
        try:
            record = await get_record(self.session, self.account_id, kind, record_id)
        except NotFoundError:
            if first:
                raise
            return None
        self.links[(kind, record_id)] = ChainLink(kind, record)
        return record

    async def record(self, kind: str, record_id: str, *, first: bool = False) -> None:
        found = await self._get(kind, record_id, first=first)
        if found is None:
            return
        if kind == "memory":
            for artifact_id in found.source_artifact_ids:
                await self.record("artifact", artifact_id)
            await self.context(found.model_run_id, found.branch_id, found.owner_participant_id)
        elif kind == "artifact":
            await self.record("tool_call", found.tool_call_id)
        elif kind == "tool_call":
            await self.context(found.model_run_id, found.branch_id, found.participant_id)
        elif kind == "message":
            await self.context(found.model_run_id, found.branch_id, found.author_participant_id)
        elif kind == "checkpoint":
            await self.context(found.model_run_id, found.branch_id, found.participant_id)
        elif kind == "skill":
            await self.context(None, found.branch_id, found.participant_id)

    async def context(self, model_run_id: str | None, branch_id: str | None, participant_id: str | None) -> None:
        """The model run, branch and participant a record was written under."""
        await self._get("model_run", model_run_id)
        await self._get("branch", branch_id)
        await self._get("participant", participant_id)


__all__ = ["START_KINDS", "ChainLink", "ProvenanceChain", "get_record", "walk_provenance"]
