"""Privacy taint: the class a derived record's sources give it, computed from the graph.

A derived record (a tool call's arguments, the artifact and memory of its
result, a promoted report, a checkpoint, a skill state or user memory built
from records) is never looser than what it was built from. The store
functions that write such records call these to compute that floor from the
sources themselves, so no caller can store a looser class:

* :func:`run_privacy`: what a model run was shown (its ContextAssembly), the
  floor of every tool call the run makes (:func:`store.tools.record_tool_call`);
* :func:`records_privacy`: the classes of records named by id (a memory's source
  artifacts and promoted-from memories, a checkpoint's references);
* :func:`participant_privacy`: everything a participant's runs were shown and
  produced (a subagent's report, :mod:`activities.promotion`).

The rule itself (which parts of an assembly count) is pure:
:func:`policy.taint.context_sources` and :func:`policy.taint.context_privacy`.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from policy.taint import context_privacy, context_sources
from policy.enums import STRICTEST_PRIVACY, PrivacyClass, strictest_privacy
from policy.records import PolicyDecisionRecord
from store.errors import NotFoundError, TaintError
from store.models import (
    Message,
    ContextAssembly,
    ContinuationCheckpoint,
    ModelRun,
    PolicyDecision,
    SkillState,
    ToolArtifact,
    ToolCall,
    ToolMemory,
    UserMemory,
)


_TABLES = {
    "message": Message,
    "memory": ToolMemory,
    "artifact": ToolArtifact,
    "checkpoint": ContinuationCheckpoint,
    "skill": SkillState,
    "user_memory": UserMemory,
}


async def classes_of(session: AsyncSession, account_id: str, model: type, ids: Iterable[str]) -> dict[str, PrivacyClass]:
    """The privacy class of each of ``ids`` found among ``model``'s rows of the account (missing ids are absent)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = await session.execute(
        select(model.id, model.privacy).where(model.account_id == account_id, model.id.in_(wanted))
    )
    return {row.id: PrivacyClass(row.privacy) for row in rows}


async def _call_classes(
    session: AsyncSession, account_id: str, ids: Iterable[str], *, with_results: bool
) -> dict[str, PrivacyClass]:
    """Each call's class; ``with_results``: the stricter of the call's and its captured result's."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    found = dict(
        (row.id, PrivacyClass(row.privacy))
        for row in await session.execute(
            select(ToolCall.id, ToolCall.privacy).where(ToolCall.account_id == account_id, ToolCall.id.in_(wanted))
        )
    )
    if with_results:
        for row in await session.execute(
            select(ToolArtifact.tool_call_id, ToolArtifact.privacy).where(
                ToolArtifact.account_id == account_id, ToolArtifact.tool_call_id.in_(wanted)
            )
        ):
            if row.tool_call_id in found:
                found[row.tool_call_id] = strictest_privacy((found[row.tool_call_id], PrivacyClass(row.privacy)))
    return found


async def assembly_privacy(session: AsyncSession, account_id: str, assembly_id: str) -> PrivacyClass:
    """The strictest class of the records one stored assembly showed its model.

    Raises:
        NotFoundError: no such assembly.
    """
    row = (await session.execute(
        select(ContextAssembly.selected_refs, ContextAssembly.rehydrated_refs).where(
            ContextAssembly.account_id == account_id, ContextAssembly.id == assembly_id
        )
    )).first()
    if row is None:
        raise NotFoundError("context_assembly", assembly_id)
    decisions = [
        PolicyDecisionRecord(kind=d.kind, subject_ref=d.subject_ref, outcome=d.outcome, reason=d.reason,
                             policy_version="")
        for d in await session.execute(
            select(PolicyDecision.kind, PolicyDecision.subject_ref, PolicyDecision.outcome, PolicyDecision.reason)
            .where(PolicyDecision.account_id == account_id, PolicyDecision.context_assembly_id == assembly_id)
        )
    ]
    sources = context_sources(row.selected_refs or (), row.rehydrated_refs or (), decisions)
    by_kind: dict[str, set[str]] = {}
    for ref in sources.shown:
        kind, _, record_id = ref.partition(":")
        by_kind.setdefault(kind, set()).add(record_id)
    classes: dict[str, PrivacyClass] = {}
    for kind, model in _TABLES.items():
        found = await classes_of(session, account_id, model, by_kind.get(kind, ()))
        classes.update({f"{kind}:{record_id}": privacy for record_id, privacy in found.items()})
    shown_calls = await _call_classes(session, account_id, by_kind.get("tool_call", ()), with_results=True)
    classes.update({f"tool_call:{call_id}": privacy for call_id, privacy in shown_calls.items()})
    argument_calls = await _call_classes(
        session, account_id, (ref.partition(":")[2] for ref in sources.arguments_only), with_results=False
    )
    classes.update({f"tool_call:{call_id}": privacy for call_id, privacy in argument_calls.items()})
    return context_privacy(sources, classes)


async def run_privacy(session: AsyncSession, account_id: str, model_run_id: str) -> PrivacyClass | None:
    """The class of what a model run was shown: the floor of everything it emits.

    Returns:
        The strictest class of its assembly, or ``None`` when no assembly is
        recorded for it (an imported trajectory's run: the runtime chose
        nothing it saw, and its records carry the class their importer declares).
        An unknown run also gives ``None``; the write that names it fails on its
        foreign key.
    """
    assembly_id = await session.scalar(
        select(ModelRun.context_assembly_id).where(ModelRun.account_id == account_id, ModelRun.id == model_run_id)
    )
    if assembly_id is None:
        return None
    return await assembly_privacy(session, account_id, assembly_id)


async def records_privacy(
    session: AsyncSession, account_id: str, ids: Iterable[str], *, what: str = "source", refuse_unknown: bool = True
) -> PrivacyClass | None:
    """The strictest class of records named by bare id, whatever their type.

    Ids are looked up among tool memories, artifacts, tool calls (with their
    results), checkpoints, skill states, user memories and model runs (the
    class of what the run was shown; nothing for a run with no assembly).

    Args:
        what: how an error names them.
        refuse_unknown: raise on an id that names no record; ``False``: such an id
            fails closed (counts as the strictest class).

    Returns:
        The strictest class, or ``None`` when ``ids`` is empty.

    Raises:
        TaintError: an id names no record of the account (with ``refuse_unknown``).
    """
    wanted = sorted(set(ids))
    if not wanted:
        return None
    classes: list[PrivacyClass] = []
    known: set[str] = set()
    for model in _TABLES.values():
        found = await classes_of(session, account_id, model, wanted)
        classes += found.values()
        known |= set(found)
    calls = await _call_classes(session, account_id, wanted, with_results=True)
    classes += calls.values()
    known |= set(calls)
    runs = [row.id for row in await session.execute(
        select(ModelRun.id).where(ModelRun.account_id == account_id, ModelRun.id.in_(wanted))
    )]
    for run_id in runs:
        floor = await run_privacy(session, account_id, run_id)
        if floor is not None:
            classes.append(floor)
    known |= set(runs)
    missing = [record_id for record_id in wanted if record_id not in known]
    if missing and not refuse_unknown:
        classes.append(STRICTEST_PRIVACY)
    elif missing:
        raise TaintError(f"{what} {missing[0]!r} is not a record of this account: its privacy class is unknown")
    return strictest_privacy(classes) if classes else None


async def participant_privacy(session: AsyncSession, account_id: str, participant_id: str) -> PrivacyClass | None:
    """The strictest class of everything a participant's runs were shown and produced.

    Its assemblies' contexts, its tool calls (arguments) and their artifacts
    (results). ``None`` when it has none of them.
    """
    classes: list[PrivacyClass] = []
    assemblies = list(await session.scalars(
        select(ContextAssembly.id).where(
            ContextAssembly.account_id == account_id, ContextAssembly.participant_id == participant_id
        )
    ))
    for assembly_id in assemblies:
        classes.append(await assembly_privacy(session, account_id, assembly_id))
    for model, owner in ((ToolCall, ToolCall.participant_id), (ToolArtifact, ToolArtifact.owner_participant_id)):
        classes += [PrivacyClass(p) for p in await session.scalars(
            select(model.privacy).where(model.account_id == account_id, owner == participant_id).distinct()
        )]
    return strictest_privacy(classes) if classes else None


__all__ = ["TaintError", "assembly_privacy", "classes_of", "participant_privacy", "records_privacy", "run_privacy"]
