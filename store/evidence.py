"""Evidence requests: each ``recall`` a model made, the PolicyDecision taken, and the bytes served.

The answer the model read is the recall call's captured result (an artifact,
like any tool result); this table is the audit of the request: what was asked,
what it resolved to and why it was served or denied.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import DecisionOutcome
from policy.records import Locator, PolicyDecisionRecord, ToolCallRecord
from store._sql import insert_once, new_id, translate_errors
from store.errors import NotFoundError
from store.models import EvidenceRequest, ToolCall


class StoredEvidenceRequest(BaseModel):
    """One stored evidence request."""

    model_config = ConfigDict(frozen=True)

    id: str
    tool_call_id: str
    """The ``recall`` call."""
    participant_id: str
    model_run_id: str | None
    requested_ref: str
    """The id as the model wrote it."""
    artifact_id: str | None
    """What it resolved to; ``None`` when nothing visible."""
    locator: Locator | None
    decision: PolicyDecisionRecord
    bytes_served: int


def _record(row: EvidenceRequest) -> StoredEvidenceRequest:
    return StoredEvidenceRequest(
        id=row.id, tool_call_id=row.tool_call_id, participant_id=row.participant_id,
        model_run_id=row.model_run_id, requested_ref=row.requested_ref, artifact_id=row.artifact_id,
        locator=Locator.model_validate(row.locator) if row.locator else None,
        decision=PolicyDecisionRecord.model_validate(row.decision), bytes_served=row.bytes_served,
    )


@translate_errors
async def put_evidence_request(
    session: AsyncSession,
    account_id: str,
    call: ToolCallRecord,
    *,
    requested_ref: str,
    artifact_id: str | None,
    locator: Locator | None,
    decision: PolicyDecisionRecord,
    bytes_served: int,
) -> StoredEvidenceRequest:
    """Store the request a ``recall`` call made, once per call (a retried attempt keeps the first row).

    Args:
        call: the ``recall`` tool call.
        requested_ref: the id as the model wrote it.
        artifact_id: the artifact it resolved to, if the viewer may see one.
        locator: the slice asked for (``None``: whole).
        decision: the recall gates' decision.
        bytes_served: bytes of the answer (0 when denied).

    Returns:
        The stored request (the first one for this call).

    Raises:
        NotFoundError: the call is not in the account.
    """
    conversation_id = await session.scalar(
        select(ToolCall.conversation_id).where(ToolCall.account_id == account_id, ToolCall.id == call.id))
    if conversation_id is None:
        raise NotFoundError("tool_call", call.id)
    await insert_once(session, EvidenceRequest, {
        "id": new_id(), "account_id": account_id, "conversation_id": conversation_id, "branch_id": call.branch_id,
        "participant_id": call.participant_id, "tool_call_id": call.id, "model_run_id": call.model_run_id,
        "requested_ref": requested_ref, "artifact_id": artifact_id,
        "locator": locator.model_dump(mode="json") if locator else None,
        "outcome": DecisionOutcome(decision.outcome).value, "decision": decision.model_dump(mode="json"),
        "bytes_served": bytes_served,
    })
    return (await evidence_requests(session, account_id, tool_call_id=call.id))[0]


@translate_errors
async def served_bytes(session: AsyncSession, account_id: str, model_run_id: str | None, *,
                       excluding_tool_call_id: str | None = None) -> int:
    """Bytes the recalls of one model run served (the run's recall budget spent so far)."""
    if model_run_id is None:
        return 0
    query = select(func.coalesce(func.sum(EvidenceRequest.bytes_served), 0)).where(
        EvidenceRequest.account_id == account_id, EvidenceRequest.model_run_id == model_run_id)
    if excluding_tool_call_id is not None:
        query = query.where(EvidenceRequest.tool_call_id != excluding_tool_call_id)
    return int(await session.scalar(query) or 0)


@translate_errors
async def evidence_requests(session: AsyncSession, account_id: str, *, tool_call_id: str | None = None,
                            conversation_id: str | None = None, limit: int = 200) -> list[StoredEvidenceRequest]:
    """The account's evidence requests (of one call, or one conversation), oldest first."""
    filters: list[Any] = [EvidenceRequest.account_id == account_id]
    if tool_call_id is not None:
        filters.append(EvidenceRequest.tool_call_id == tool_call_id)
    if conversation_id is not None:
        filters.append(EvidenceRequest.conversation_id == conversation_id)
    rows = await session.scalars(
        select(EvidenceRequest).where(*filters).order_by(EvidenceRequest.created_at, EvidenceRequest.id).limit(limit))
    return [_record(row) for row in rows]


__all__ = ["StoredEvidenceRequest", "evidence_requests", "put_evidence_request", "served_bytes"]
