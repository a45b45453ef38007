"""Checking that every live memory still resolves to its raw evidence.

A memory whose source artifact (row or stored bytes) has gone is marked
``missing_source``: the policy then renders it as unverified, naming the
real missing artifact id. Nothing is ever re-pointed at another artifact: a
repair only succeeds when the original evidence is readable again.
"""

from __future__ import annotations

from activities.deps import GraphDeps
from policy.enums import ResolutionStatus
from policy.records import ArtifactRecord, ToolMemoryRecord
from store import memories as memory_store
from store.candidates import load_candidates


async def _source_present(deps: GraphDeps, account_id: str, artifact: ArtifactRecord | None) -> bool:
    if artifact is None:
        return False
    if artifact.storage == "inline" or artifact.storage_key is None:
        return True
    return await deps.artifacts.exists(account_id, artifact.storage_key)


async def verify_provenance(
    deps: GraphDeps, account_id: str, conversation_id: str, branch_id: str
) -> list[ToolMemoryRecord]:
    """Re-check the sources of the live memories on a branch's candidate pool.

    Args:
        deps: graph dependencies.
        account_id: the owning account.
        conversation_id: the conversation.
        branch_id: the branch whose candidate pool is checked.

    Returns:
        The memories whose resolution status changed.
    """
    async with deps.sessions() as session:
        candidates = await load_candidates(session, account_id, conversation_id, branch_id, deps.limits)
    artifacts = {artifact.id: artifact for artifact in candidates.artifacts}
    changed: list[ToolMemoryRecord] = []
    for memory in candidates.tool_memories:
        if memory.superseded_by is not None:
            continue
        present = [await _source_present(deps, account_id, artifacts.get(a)) for a in memory.source_artifact_ids]
        if all(present):
            if memory.resolution is ResolutionStatus.RESOLVED or memory.resolution is ResolutionStatus.REPAIRED:
                continue
            status, attempts = ResolutionStatus.REPAIRED, memory.repair_attempts + 1
        else:
            if memory.resolution is ResolutionStatus.MISSING_SOURCE:
                continue
            status, attempts = ResolutionStatus.MISSING_SOURCE, memory.repair_attempts + 1
        async with deps.sessions() as session, session.begin():
            changed.append(
                await memory_store.mark_memory_resolution(session, account_id, memory.id, status, attempts)
            )
    return changed
