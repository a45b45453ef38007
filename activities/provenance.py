"""Checking that every live memory still resolves to its raw evidence.

A memory whose source artifact (row or stored bytes) has gone is marked
``missing_source``; with ``deep=True`` the stored bytes are also re-hashed
and a mismatch marks it ``hash_mismatch``. The policy then renders the
memory as unverified, naming the real artifact id. Nothing is ever
re-pointed at another artifact: a repair only succeeds when the original
evidence is readable, and intact, again.
"""

from __future__ import annotations

from activities.deps import GraphDeps
from policy.enums import ResolutionStatus
from policy.records import ArtifactRecord, ToolMemoryRecord
from store import tool_memories as memory_store
from store.candidates import load_candidates
from store.errors import ArtifactIntegrityError, ArtifactNotFoundError, ArtifactRetainedError
from store.payloads import read_artifact_payload


async def _source_state(
    deps: GraphDeps, account_id: str, artifact: ArtifactRecord | None, deep: bool
) -> ResolutionStatus:
    """``resolved``, ``missing_source`` or ``hash_mismatch`` for one source artifact."""
    if artifact is None:
        return ResolutionStatus.MISSING_SOURCE
    if artifact.storage == "inline" or artifact.storage_key is None:
        if not deep:
            return ResolutionStatus.RESOLVED  # the bytes live in the artifact row itself
        try:
            async with deps.sessions() as session:
                await read_artifact_payload(session, deps.artifacts, account_id, artifact.id)
        except ArtifactRetainedError:
            return ResolutionStatus.RESOLVED  # retention removed the bytes on purpose; the row still says what they were
        except ArtifactIntegrityError:
            return ResolutionStatus.HASH_MISMATCH
        return ResolutionStatus.RESOLVED
    if not deep:
        present = await deps.artifacts.exists(account_id, artifact.storage_key)
        return ResolutionStatus.RESOLVED if present else ResolutionStatus.MISSING_SOURCE
    try:
        handle = await deps.artifacts.get_file(account_id, artifact.storage_key, artifact.sha256)
    except ArtifactNotFoundError:
        return ResolutionStatus.MISSING_SOURCE
    except ArtifactIntegrityError:
        return ResolutionStatus.HASH_MISMATCH
    handle.close()
    return ResolutionStatus.RESOLVED


async def verify_provenance(
    deps: GraphDeps, account_id: str, conversation_id: str, branch_id: str, *, deep: bool = False
) -> list[ToolMemoryRecord]:
    """Re-check the sources of the live memories on a branch's candidate pool.

    Args:
        branch_id: the branch whose candidate pool is checked.
        deep: re-read and re-hash every stored payload (streams each object
            once; the default only checks that the objects exist).
    """
    async with deps.sessions() as session:
        candidates = await load_candidates(session, account_id, conversation_id, branch_id, deps.limits)
    artifacts = {artifact.id: artifact for artifact in candidates.artifacts}
    changed: list[ToolMemoryRecord] = []
    for memory in candidates.tool_memories:
        if memory.superseded_by is not None:
            continue
        states = [await _source_state(deps, account_id, artifacts.get(a), deep) for a in memory.source_artifact_ids]
        broken = [state for state in states if state is not ResolutionStatus.RESOLVED]
        if not broken:
            if memory.resolution in (ResolutionStatus.RESOLVED, ResolutionStatus.REPAIRED):
                continue
            if memory.resolution is ResolutionStatus.HASH_MISMATCH and not deep:
                continue  # existence alone does not clear an integrity failure
            status = ResolutionStatus.REPAIRED
        else:
            # A missing source outranks a corrupt one: there is nothing left to re-hash.
            status = min(broken, key=lambda s: s is not ResolutionStatus.MISSING_SOURCE)
            if memory.resolution is status:
                continue
        attempts = memory.repair_attempts + 1
        async with deps.sessions() as session, session.begin():
            changed.append(
                await memory_store.mark_memory_resolution(session, account_id, memory.id, status, attempts)
            )
    return changed
