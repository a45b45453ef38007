"""Recomputing a stored context assembly from stored state, for audit.

An assembly stores its inputs beside its output (``store.records.ReplayInputs``):
the whole generation boundary, the candidate limits, the account's user-memory
snapshot, and the previous assembly its epoch could continue. Recomputing reads
the candidates back at the assembly's ``snapshot_seq`` and user-memory snapshot
(:mod:`store.candidates` reads every pool as of them), looks the policy up by
the tag the assembly recorded (:func:`policy.versions.policy_for_tag`; an
unknown tag is an error, never today's default), re-reads the planned raw
payloads from S3 hash-verified, and renders. Under the stored policy the
messages come out byte-identical to the stored ones however far the graph has
moved on since.

Given another ``policy``, the same inputs answer "what would this call have
seen under that policy" (a what-if). Nothing here writes: no assembly row, no
decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from activities.context import read_planned_payloads
from activities.deps import GraphDeps
from policy.assembler import ASSEMBLER_VERSION, AssemblyResult, render_context, select_context
from policy.policy import ContextPolicy
from policy.records import CandidateSet, PreviousAssembly, canonical_json
from policy.versions import policy_for_tag
from store.assemblies import assembly_as_previous, get_context_assembly
from store.candidates import CandidateLimits, load_candidates
from store.errors import AssemblyNotReplayableError, IntegrityViolation, NotFoundError
from store.models.types import storable_json
from store.records import ReplayInputs, StoredContextAssembly
from store.retention import trace_dropped


@dataclass(frozen=True)
class Recomputed:
    """A stored assembly and the same assembly computed again from stored state."""

    stored: StoredContextAssembly
    """The stored assembly, its messages loaded."""
    result: AssemblyResult
    """The recomputed messages, record and decisions. The decisions are the policy's own: those a caller
    added when the assembly was stored (a checkpoint restore's) are in ``stored.decisions`` only."""
    candidates: CandidateSet
    """The candidates read back at the stored snapshots."""
    messages: tuple[dict[str, Any], ...]
    """The recomputed provider messages (OpenAI format, ``result.to_openai()``)."""
    identical: bool
    """Whether ``messages`` and the stored messages have byte-identical canonical JSON. Only meaningful
    when ``policy`` is the stored one: under another policy it says whether that policy changes anything."""
    policy: ContextPolicy
    """The policy the recomputation ran under."""


def same_messages(stored: tuple[dict[str, Any], ...] | None, recomputed: tuple[dict[str, Any], ...]) -> bool:
    """Byte equality of the canonical JSON of two message lists.

    The recomputed side goes through the same storage transform the stored side went through
    (:func:`store.models.types.storable_json`: U+0000 and non-finite numbers are spelled storably).
    """
    if stored is None:
        return False
    return canonical_json(list(stored)).encode() == canonical_json(storable_json(list(recomputed))).encode()


async def recompute_assembly(
    deps: GraphDeps,
    account_id: str,
    assembly_id: str,
    *,
    policy: ContextPolicy | None = None,
) -> Recomputed:
    """Recompute a stored assembly from stored state; writes nothing.

    Args:
        deps: the graph, artifacts and token counter (``deps.policy`` and ``deps.limits`` are not used:
            the assembly's own policy version and limits are).
        account_id: the account the assembly must belong to.
        policy: recompute under this policy instead of the stored one (a what-if).

    Raises:
        NotFoundError: no such assembly in the account (a foreign id reads the same).
        AssemblyNotReplayableError: retention dropped its stored messages, it was stored before its replay
            inputs were, by another assembler version (its rendering code), a user memory
            it loaded has been forgotten since, or the previous assembly it continued is gone.
        UnknownPolicyVersionError: ``policy`` is ``None`` and no registered policy has the stored tag.
    """
    async with deps.sessions() as session:
        stored = await get_context_assembly(session, account_id, assembly_id, with_messages=True)
        if await trace_dropped(session, account_id, assembly_id):
            raise AssemblyNotReplayableError(assembly_id, "retention dropped its stored messages")
        inputs = _inputs_of(stored)
        if policy is None:
            policy = policy_for_tag(stored.record.policy_version)
            if stored.record.assembler_version != ASSEMBLER_VERSION:  # other rendering code: say so, never "differs"
                raise AssemblyNotReplayableError(assembly_id, (
                    f"it was assembled by {stored.record.assembler_version} and this runtime assembles as "
                    f"{ASSEMBLER_VERSION}"))
        boundary = inputs.boundary
        candidates = await load_candidates(
            session,
            account_id,
            boundary.conversation_id,
            boundary.branch_id,
            CandidateLimits(**inputs.candidate_limits),
            up_to_seq=stored.record.snapshot_seq,
            user_memory_seq=inputs.user_memory_seq,
            extra_artifact_ids=[request.artifact_id for request in boundary.evidence_requests],
        )
        _check_user_memories(assembly_id, inputs, candidates)
        previous = await _previous(session, account_id, assembly_id, inputs)

    selection = select_context(policy, boundary, candidates, deps.counter, previous)
    raw, unavailable = await read_planned_payloads(deps, account_id, selection)
    result = render_context(selection, raw, deps.counter, unavailable)
    messages = tuple(result.to_openai())
    return Recomputed(stored=stored, result=result, candidates=candidates, messages=messages,
                      identical=same_messages(stored.messages, messages), policy=policy)


def _inputs_of(stored: StoredContextAssembly) -> ReplayInputs:
    if stored.replay is None:
        raise AssemblyNotReplayableError(stored.id, "it was stored before assemblies kept their replay inputs")
    return stored.replay


def _check_user_memories(assembly_id: str, inputs: ReplayInputs, candidates: CandidateSet) -> None:
    """A forgotten user memory is deleted, and replay does not resurrect it: say so instead of differing."""
    loaded = tuple(memory.id for memory in candidates.user_memories)
    if loaded != inputs.user_memory_ids:
        forgotten = sorted(set(inputs.user_memory_ids) - set(loaded))
        raise AssemblyNotReplayableError(
            assembly_id, f"user memories it loaded have been forgotten since: {', '.join(forgotten) or 'none'}"
            if forgotten else "the user memories read back differ from the ones it loaded")


async def _previous(session: AsyncSession, account_id: str, assembly_id: str,
                    inputs: ReplayInputs) -> PreviousAssembly | None:
    if inputs.previous_assembly_id is None:
        return None
    try:
        return await assembly_as_previous(session, account_id, inputs.previous_assembly_id)
    except (NotFoundError, IntegrityViolation) as e:
        raise AssemblyNotReplayableError(
            assembly_id, f"the previous assembly it continued ({inputs.previous_assembly_id}) is gone") from e


__all__ = ["Recomputed", "recompute_assembly", "same_messages"]
