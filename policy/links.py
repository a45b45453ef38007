"""Supersession and contradiction links: how a new tool memory relates to the live ones.

Links are decided once, when a memory is derived, and stored on both sides
(``supersedes`` / ``superseded_by``, ``conflicts_with``); the assembler then
reads them (stage 3). A new memory supersedes the live memories of the
same subject its owner can see, and contradicts those of another subject
that assert a different value for one of its facts.
"""

from __future__ import annotations

from policy.derive import MemoryDraft
from policy.enums import ToolCallStatus
from policy.gates import Viewer, check_promotion, check_scope
from policy.policy import FAIL_CLOSED_ROUTE
from policy.records import ArtifactRecord, Lineage, ToolMemoryRecord
from policy.resources import supersedes_by_resource
from policy.retention import subject_keys


def link_memory(
    new_subject: str,
    new_facts: dict[str, str],
    existing: list[tuple[str, str, dict[str, str]]],
) -> tuple[list[str], list[str]]:
    """Which existing memories a new one supersedes, and which it contradicts.

    Args:
        new_subject: the new memory's subject key.
        new_facts: its ``payload["facts"]`` (``entity.attribute`` -> value).
        existing: ``(memory_id, subject_key, facts)`` of the live memories it
            could relate to, oldest first.

    Returns:
        ``(supersedes, conflicts_with)``: ids of same-subject memories, and ids
        of other-subject memories asserting a different value for a shared fact.
    """
    supersedes = [memory_id for memory_id, subject, _ in existing if subject == new_subject]
    conflicts = [
        memory_id
        for memory_id, subject, facts in existing
        if subject != new_subject
        and any(key in facts and facts[key] != value for key, value in sorted(new_facts.items()))
    ]
    return supersedes, conflicts


def links_for(
    draft: MemoryDraft,
    artifact: ArtifactRecord,
    lineage: Lineage,
    related: list[ToolMemoryRecord],
    statuses: dict[str, ToolCallStatus],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Which live memories a new one supersedes and contradicts, among those its owner sees.

    Only memories the artifact's owner can see on its lineage count (scope and
    promotion gates, as a model call of that owner would apply them): a sibling
    branch's or another participant's private result is never replaced. A failed
    result supersedes only earlier failures: a failure must not erase the last
    good observation. A success supersedes both.

    Args:
        draft: the new memory's draft.
        artifact: the artifact it was derived from.
        lineage: the lineage of the artifact's branch.
        related: memories of the same subject (live, or superseded on some branch) or live memories
            sharing a fact key, oldest first.
        statuses: the status of every artifact those memories cite.

    Returns:
        ``(supersedes, conflicts_with)``.
    """
    viewer = Viewer(artifact.owner_participant_id, lineage, FAIL_CLOSED_ROUTE)
    visible = [memory for memory in related
               if check_scope(memory, viewer) is None and check_promotion(memory, viewer) is None]
    # Live on this lineage: no memory visible here replaces it (a sibling's replacement does not count).
    replaced_here = {old for memory in visible for old in memory.supersedes}
    # A memory whose arguments retention removed keeps its subject as a hash: still the same subject.
    same = subject_keys(artifact.tool_name, draft.subject_key)
    candidates = [
        (memory.id, draft.subject_key if memory.subject_key in same else memory.subject_key,
         memory.payload.get("facts", {}))
        for memory in visible
        if memory.id not in replaced_here
        and (artifact.status is ToolCallStatus.SUCCEEDED
             or all(statuses.get(a) is ToolCallStatus.FAILED for a in memory.source_artifact_ids))
    ]
    supersedes, conflicts = link_memory(draft.subject_key, draft.payload.get("facts", {}), candidates)
    if artifact.status is ToolCallStatus.SUCCEEDED and draft.resources:
        # Supersession follows the resource too: a write replaces what was read of what it wrote, whatever
        # tool read it, and a read replaces an earlier write of it (a failed call changed nothing).
        written = [memory.id for memory in visible if memory.id not in replaced_here
                   and memory.id not in supersedes and supersedes_by_resource(draft.resources, memory.resources)]
        supersedes += written
        conflicts = [memory_id for memory_id in conflicts if memory_id not in written]
    return tuple(supersedes), tuple(conflicts)


__all__ = ["link_memory", "links_for"]
