"""Assembling the context of one model call from the graph, and recording it.

Load the bounded candidate pool (Postgres), run the pure selection, fetch
only the raw evidence the selection planned (S3, hash-verified), render, and
persist the ContextAssembly with every PolicyDecision. Each phase is timed;
the record is what later audit ("what did the model see, and why not X?")
reads.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from activities.deps import GraphDeps
from policy.assembler import AssemblyResult, Selection, render_context, select_context
from policy.records import CandidateSet, GenerationBoundary, PolicyDecisionRecord
from policy.rehydration import RAW_HASH_MISMATCH_TEXT, RAW_MISSING_TEXT
from policy.retention import RecordKind, effective_rule
from store.assemblies import find_previous_assembly, save_context_assembly
from store.candidates import load_candidates, user_memory_snapshot
from store.errors import ArtifactIntegrityError, ArtifactNotFoundError, ArtifactRetainedError
from store.retention import participant_retention
from store.payloads import read_artifact_payload
from store.records import AssemblyTimings, ReplayInputs


@dataclass(frozen=True)
class AssembledContext:
    """The outcome of :func:`assemble_context`."""

    assembly_id: str
    """Id of the persisted ContextAssembly."""
    result: AssemblyResult
    """Messages, record and decisions."""
    candidates: CandidateSet
    """The candidate pool the selection ran on (for tests and benchmarks)."""
    timings: AssemblyTimings
    created: bool = True
    """This call stored the assembly; ``False`` for a retry that found the first attempt's (which stands, and
    which that attempt already counted)."""


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


async def read_planned_payloads(
    deps: GraphDeps, account_id: str, selection: Selection, cache: dict[str, bytes] | None = None
) -> tuple[dict[str, bytes], dict[str, str]]:
    """The raw bytes a selection plans to show, hash-verified, and why any could not be read.

    Args:
        deps: the graph and artifact store.
        account_id: the account the artifacts belong to.
        selection: the output of ``select_context``.
        cache: bytes already read (by artifact id); filled with what this call reads,
            so several selections over one snapshot read each object once.

    Returns:
        ``(raw, unavailable)``: bytes by artifact id, and the reason for each
        planned artifact whose object is missing or failed its sha256 check.
    """
    raw: dict[str, bytes] = {}
    unavailable: dict[str, str] = {}
    cache = {} if cache is None else cache
    missing = [p.artifact_id for p in selection.rehydration if p.artifact_id not in cache]
    if missing:  # no session checkout when nothing is planned (the common case)
        async with deps.sessions() as session:
            for artifact_id in dict.fromkeys(missing):
                try:
                    cache[artifact_id] = await read_artifact_payload(session, deps.artifacts, account_id, artifact_id)
                except ArtifactRetainedError as error:  # removed on purpose: say so, not "missing"
                    unavailable[artifact_id] = error.reason
                except ArtifactNotFoundError:
                    unavailable[artifact_id] = RAW_MISSING_TEXT
                except ArtifactIntegrityError:
                    unavailable[artifact_id] = RAW_HASH_MISMATCH_TEXT
    for planned in selection.rehydration:
        if planned.artifact_id in cache:
            raw[planned.artifact_id] = cache[planned.artifact_id]
    return raw, unavailable


async def assemble_context(
    deps: GraphDeps,
    boundary: GenerationBoundary,
    *,
    up_to_seq: int | None = None,
    assembly_id: str | None = None,
    extra_decisions: Sequence[PolicyDecisionRecord] = (),
) -> AssembledContext:
    """Assemble, persist and return the context for ``boundary``.

    Args:
        deps: graph dependencies (policy, counter, limits included).
        up_to_seq: assemble from a historical graph snapshot.
        assembly_id: id to persist under (idempotent retries).
        extra_decisions: decisions the caller took for this call (a checkpoint
            restore), persisted after the policy's own.

    Raises:
        NotFoundError: unknown conversation, branch or participant.
        BranchCycleError: the branch lineage loops.
        UnknownParticipantError: the participant is not in the conversation.
    """
    start = time.perf_counter()
    requested = [request.artifact_id for request in boundary.evidence_requests]
    limits = deps.limits
    async with deps.sessions() as session:
        user_memory_seq = await user_memory_snapshot(session, boundary.account_id)
        candidates = await load_candidates(
            session,
            boundary.account_id,
            boundary.conversation_id,
            boundary.branch_id,
            limits,
            up_to_seq=up_to_seq,
            user_memory_seq=user_memory_seq,
            extra_artifact_ids=requested,
        )
        # The participant's previous call on this branch, strictly before this snapshot: the epoch this one
        # may continue. (An assembly of the same snapshot, a retry's or an audit's, never continues itself.)
        found = await find_previous_assembly(session, boundary.account_id, boundary.branch_id,
                                             boundary.participant_id, before_seq=candidates.snapshot_seq)
    previous_id, previous = found if found is not None else (None, None)
    graph_ms = _ms(start)

    start = time.perf_counter()
    selection = select_context(deps.policy, boundary, candidates, deps.counter, previous)
    policy_ms = _ms(start)

    raw, unavailable = await read_planned_payloads(deps, boundary.account_id, selection)

    start = time.perf_counter()
    result = render_context(selection, raw, deps.counter, unavailable, deps.rendered)
    serialise_ms = _ms(start)

    timings = AssemblyTimings(graph_query_ms=graph_ms, policy_ms=policy_ms, serialise_ms=serialise_ms)
    replay = ReplayInputs(
        boundary=boundary,
        candidate_limits=asdict(limits),
        user_memory_seq=user_memory_seq,
        user_memory_ids=tuple(memory.id for memory in candidates.user_memories),
        previous_assembly_id=previous_id,
    )
    async with deps.sessions() as session, session.begin():
        # The trace (its stored messages) is kept as the participant's agent says; a tool has no say in it.
        # Read once, and written by the assembly's insert itself.
        agent = await participant_retention(session, boundary.account_id, boundary.participant_id)
        saved_id, created = await save_context_assembly(
            session,
            boundary.account_id,
            boundary,
            result.record,
            (*result.decisions, *extra_decisions),
            result.to_openai(),
            timings=timings,
            assembly_id=assembly_id,
            replay=replay,
            retention=effective_rule(RecordKind.TRACE, None, agent),
        )
    return AssembledContext(assembly_id=saved_id, result=result, candidates=candidates, timings=timings,
                            created=created)
