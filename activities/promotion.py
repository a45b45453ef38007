"""Promotion: what a finished subagent child may hand to its parent.

A child run's artifacts and memories stay private to the child (or audit
only). When the child ends, this step makes parent-visible only

* its final report (captured as an artifact of the child, then summarised
  for the parent),
* the handles of files it generated, and
* a compact failure/retry status of calls that failed,

each as a new parent-owned memory that cites the child's artifacts, so the
provenance survives while the raw child workspace stays out of reach.

Privacy taint: the report is the child model's own text, so it carries the
strictest class of everything the child's runs were shown and produced
(:func:`store.taint.participant_privacy`: its assemblies, its tool calls and
their results), never a fixed ``user``. A promoted file handle or failure keeps
its source memory's class. Either way the store raises a promoted memory to the
strictest of the artifacts and memories it cites
(:func:`store.tool_memories.insert_tool_memory`).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from activities.ingest import ToolOutcome, begin_tool_call, capture_tool_result, memory_id_for
from activities.deps import GraphDeps
from activities.errors import PromotionError
from policy.derive import PROMOTED_PREFIX, PROMOTED_SEPARATOR, SUBAGENT_REPORT_PREFIX, SUBAGENT_REPORT_SEPARATOR
from policy.enums import (
    FreshnessClass,
    PrivacyClass,
    at_least,
    PromotionPolicy,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
)
from policy.records import ToolMemoryRecord
from store import tool_memories as memory_store
from store import tools as tool_store
from store.conversations import get_participant
from store.errors import NotFoundError
from store.taint import participant_privacy
from store.writes import NewToolCall

REPORT_TOOL = "subagent.report"
"""Tool name under which a child's final report is captured."""
_PROMOTION_NAMESPACE = uuid.UUID("0f6d3a52-2b7e-4c41-8d0e-5f1f3c9b7a21")
_MAX_REPORT_CHARS = 1200


def _promoted_id(source_id: str, parent_id: str) -> str:
    return str(uuid.uuid5(_PROMOTION_NAMESPACE, f"{source_id}->{parent_id}"))


def _promotable(memory: ToolMemoryRecord, status: ToolCallStatus) -> bool:
    return "file" in memory.payload or status is ToolCallStatus.FAILED


async def promotable_calls(deps: GraphDeps, account_id: str, tool_call_ids: Sequence[str]) -> list[str]:
    """The calls among a child's whose results may be promoted: generated files and failures.

    A call with no captured result (the child timed out before it ran) is skipped.

    Args:
        tool_call_ids: the child's tool calls, in the order they were made.

    Returns:
        The promotable ones, in the same order.
    """
    promotable: list[str] = []
    async with deps.sessions() as session:
        for tool_call_id in tool_call_ids:
            try:
                artifact = await tool_store.get_artifact_for_tool_call(session, account_id, tool_call_id)
                memory = await memory_store.get_tool_memory(session, account_id, memory_id_for(artifact.id))
            except NotFoundError:
                continue
            if _promotable(memory, artifact.status):
                promotable.append(tool_call_id)
    return promotable


async def promote_child_results(
    deps: GraphDeps,
    account_id: str,
    conversation_id: str,
    branch_id: str,
    *,
    child_participant_id: str,
    parent_participant_id: str,
    tool_call_ids: Sequence[str],
    report: str | None,
    outcome: Literal["succeeded", "failed", "timed_out"],
    at: datetime | None = None,
) -> list[ToolMemoryRecord]:
    """Release a finished child's report, file handles and failures to its parent.

    Args:
        branch_id: the parent's branch (promoted memories are branch-visible there).
        parent_participant_id: the participant that spawned it.
        tool_call_ids: the child's calls whose file handles or failures to promote.
        report: the child's final report text, if it produced one.
        outcome: how the child run ended.
        at: when the child ended.

    Returns:
        The promoted, parent-owned memories (report first). Safe to retry:
        ids are derived from the sources, so a retry returns the same memories.

    Raises:
        PromotionError: a listed call produced neither a file nor a failure.
    """
    promoted: list[ToolMemoryRecord] = []
    async with deps.sessions() as session:
        child = await get_participant(session, account_id, child_participant_id)
        # Taint: the report was written by the child's model, from what its runs were shown and produced.
        # A message is user data at least (policy.transcript), whatever the child saw.
        report_privacy = at_least(PrivacyClass.USER, await participant_privacy(session, account_id,
                                                                                 child_participant_id))
    if report is not None or outcome != "succeeded":
        text = report if report is not None else f"no report; the run {outcome.replace('_', ' ')}"
        digest = hashlib.sha256(f"{child_participant_id}:{text}".encode()).hexdigest()[:16]
        call = await begin_tool_call(
            deps, account_id, conversation_id, NewToolCall(
                branch_id=branch_id, participant_id=child_participant_id,
                call_id=f"report-{child_participant_id}-{digest}", name=REPORT_TOOL, arguments={"subagent": child.name},
                runtime_kind=RuntimeKind.SUBAGENT_CHILD, at=at, privacy=report_privacy),
        )
        artifact = await capture_tool_result(
            deps, account_id, call.id,
            ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=text.encode(), content_type="text/plain"),
            captured_at=at, promotion=PromotionPolicy.ON_COMPLETION,
        )
        clipped = text if len(text) <= _MAX_REPORT_CHARS else text[: _MAX_REPORT_CHARS - 1] + "…"
        promoted.append(
            _parent_memory(
                _promoted_id(artifact.id, parent_participant_id), artifact.id, branch_id, parent_participant_id,
                source_tool=REPORT_TOOL, subject=f"{REPORT_TOOL}:{child.name}",
                title=f"report of subagent {child.name}",
                summary=f"{SUBAGENT_REPORT_PREFIX}{child.name} {outcome.replace('_', ' ')}"
                        f"{SUBAGENT_REPORT_SEPARATOR}{clipped}",
                observed_at=artifact.captured_at, promoted_from=(), privacy=artifact.privacy,
            )
        )

    async with deps.sessions() as session:
        sources = []
        for tool_call_id in tool_call_ids:
            artifact = await tool_store.get_artifact_for_tool_call(session, account_id, tool_call_id)
            memory = await memory_store.get_tool_memory(session, account_id, memory_id_for(artifact.id))
            if not _promotable(memory, artifact.status):
                raise PromotionError(
                    f"tool call {tool_call_id} ({artifact.tool_name}) produced no file and did not fail; "
                    "only reports, file handles and failure status are promoted"
                )
            sources.append((artifact, memory))
    for artifact, memory in sources:
        promoted.append(
            _parent_memory(
                _promoted_id(memory.id, parent_participant_id), artifact.id, branch_id, parent_participant_id,
                source_tool=memory.source_tool, subject=f"promoted:{memory.subject_key}",
                title=memory.title, summary=f"{PROMOTED_PREFIX}{child.name}{PROMOTED_SEPARATOR}{memory.summary}",
                observed_at=memory.observed_at, promoted_from=(memory.id,),
                freshness=memory.freshness, privacy=memory.privacy,
            )
        )

    stored: list[ToolMemoryRecord] = []
    async with deps.sessions() as session, session.begin():
        for memory in promoted:
            stored.append(await memory_store.insert_tool_memory(session, account_id, conversation_id, memory))
    return stored


def _parent_memory(
    memory_id: str,
    artifact_id: str,
    branch_id: str,
    parent_id: str,
    *,
    source_tool: str,
    subject: str,
    title: str,
    summary: str,
    observed_at: datetime,
    promoted_from: tuple[str, ...],
    privacy: PrivacyClass,
    freshness: FreshnessClass = FreshnessClass.DURABLE,
) -> ToolMemoryRecord:
    return ToolMemoryRecord(
        id=memory_id,
        branch_id=branch_id,
        seq=0,
        owner_participant_id=parent_id,
        runtime_kind=RuntimeKind.SUBAGENT_CHILD,
        source_artifact_ids=(artifact_id,),
        source_tool=source_tool,
        subject_key=subject,
        title=title,
        summary=summary,
        confidence=1.0,
        confidence_source="promotion",
        rationale="promoted from a finished subagent run",
        visibility=VisibilityScope.BRANCH,
        privacy=privacy,
        freshness=freshness,
        observed_at=observed_at,
        promoted_from=promoted_from,
    )
