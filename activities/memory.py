"""Deriving tool memories from captured artifacts, and linking them.

The derivation itself is pure (:mod:`policy.derive`); this step loads the
raw bytes (hash-verified), decides supersession and contradiction against
the memories the owner can already see, and writes the memory. The memory id
is derived from the artifact id, so a retried derivation writes nothing new.
"""

from __future__ import annotations

import uuid

from activities.deps import GraphDeps
from policy.derive import derive_memory
from policy.enums import ToolCallStatus, strictest_privacy
from policy.links import link_memory
from policy.gates import Viewer, check_promotion, check_scope
from policy.policy import FAIL_CLOSED_ROUTE
from policy.records import ArtifactRecord, CandidateSet, ToolMemoryRecord
from store import tool_memories as memory_store
from store import tools as tool_store
from store.branches import get_branch
from store.candidates import load_candidates
from store.errors import NotFoundError
from store.payloads import read_artifact_payload

_MEMORY_NAMESPACE = uuid.UUID("5b0f3c1e-6f55-4d8e-9a61-0d0551e4d001")


def memory_id_for(artifact_id: str) -> str:
    """The id of the memory derived from ``artifact_id`` (stable across retries)."""
    return str(uuid.uuid5(_MEMORY_NAMESPACE, f"tool-memory:{artifact_id}"))


def _live_for_owner(candidates: CandidateSet, artifact: ArtifactRecord) -> list[ToolMemoryRecord]:
    """Memories the artifact's owner sees on its branch: what a new memory may relate to."""
    viewer = Viewer(artifact.owner_participant_id, candidates.lineage, FAIL_CLOSED_ROUTE)
    return [
        memory
        for memory in candidates.tool_memories
        if memory.superseded_by is None
        and check_scope(memory, viewer) is None
        and check_promotion(memory, viewer) is None
    ]


async def derive_tool_memory(deps: GraphDeps, account_id: str, artifact_id: str) -> ToolMemoryRecord:
    """Derive, link and store the memory of one artifact.

    A failed result supersedes only earlier failures of the same subject: a
    failure must not erase the last good observation. A success supersedes both.

    Args:
        deps: graph dependencies.
        account_id: the owning account.
        artifact_id: the captured artifact.

    Returns:
        The stored memory (the existing one when derived before).

    Raises:
        NotFoundError: unknown artifact.
        ArtifactNotFoundError / ArtifactIntegrityError: the raw bytes are
            missing or do not match their hash (nothing is derived from bad bytes).
    """
    memory_id = memory_id_for(artifact_id)
    async with deps.sessions() as session, session.begin():
        try:
            return await memory_store.get_tool_memory(session, account_id, memory_id)
        except NotFoundError:
            pass
        artifact = await tool_store.get_artifact(session, account_id, artifact_id)
        arguments = await tool_store.get_artifact_arguments(session, account_id, artifact_id)
        raw = await read_artifact_payload(session, deps.artifacts, account_id, artifact_id)
        conversation_id = (await get_branch(session, account_id, artifact.branch_id)).conversation_id
        candidates = await load_candidates(session, account_id, conversation_id, artifact.branch_id, deps.limits)

        spec = deps.catalog.spec(artifact.tool_name)
        draft = derive_memory(
            spec, artifact.id, arguments, artifact.status, raw, artifact.content_type, artifact.captured_at
        )
        status_of = {a.id: a.status for a in candidates.artifacts}
        existing = [
            (m.id, m.subject_key, m.payload.get("facts", {}))
            for m in _live_for_owner(candidates, artifact)
            if artifact.status is ToolCallStatus.SUCCEEDED
            or all(status_of.get(a) is ToolCallStatus.FAILED for a in m.source_artifact_ids)
        ]
        supersedes, conflicts = link_memory(draft.subject_key, draft.payload.get("facts", {}), existing)
        memory = ToolMemoryRecord(
            id=memory_id,
            branch_id=artifact.branch_id,
            seq=0,
            owner_participant_id=artifact.owner_participant_id,
            model_run_id=artifact.model_run_id,
            runtime_kind=artifact.runtime_kind,
            source_artifact_ids=(artifact.id,),
            source_tool=artifact.tool_name,
            subject_key=draft.subject_key,
            title=draft.title,
            summary=draft.summary,
            payload=draft.payload,
            confidence=draft.confidence,
            confidence_source=draft.confidence_source,
            rationale=draft.rationale,
            limitations=draft.limitations,
            visibility=artifact.visibility,
            shared_with=artifact.shared_with,
            privacy=strictest_privacy([artifact.privacy]),
            freshness=draft.freshness,
            observed_at=artifact.captured_at,
            stale_after=draft.stale_after,
            revalidate_with=draft.revalidate_with,
            locators=draft.locators,
            supersedes=tuple(supersedes),
            conflicts_with=tuple(conflicts),
            promotion=artifact.promotion,
        )
        return await memory_store.insert_tool_memory(session, account_id, conversation_id, memory)
