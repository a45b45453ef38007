"""Audit: explain a model run, say why a record was not in it, replay runs under another policy, diff two.

Account-scoped reads over the stored assemblies (their provider messages and
ordered decisions), with the pure reading in :mod:`policy.explain`:

* :func:`explain`: the context as the model saw it, each included record with
  its provenance chain (memory → artifact → tool call → model run → branch →
  participant), each rehydration and first read with its reason, omissions
  with their rule and counts by reason; with ``trace=True``, every candidate
  and the rule that decided it;
* :func:`why_not`: the rule, its inputs and the policy version that kept a
  record out of a run, or the decision that let it in and the messages that
  carry it;
* :func:`what_if`: the stored assemblies of a conversation, the account or the
  last N runs recomputed under another registered policy version
  (:func:`activities.replay.recompute_assembly`), each diffed against what
  was sent;
* :func:`diff`: two assemblies (consecutive calls, two runs, or one run under
  two policies).

Every function takes the account id and reads only that account: a run,
record or conversation of another account raises the same
:class:`~store.errors.NotFoundError` as an id that exists nowhere. Each
result is a pydantic model with ``to_json()``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from activities.deps import GraphDeps
from policy import explain as pure
from policy.enums import DecisionOutcome
from policy.records import PolicyDecisionRecord, canonical_json
from policy.tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter
from store import conversations, messages
from store import tools as tool_store
from store.assemblies import get_context_assembly, list_context_assemblies, previous_call_id
from activities.replay import recompute_assembly
from policy.errors import UnknownPolicyVersionError
from policy.versions import policy_by_name
from store.errors import AssemblyNotReplayableError, NotFoundError
from store.provenance import START_KINDS, get_record, walk_provenance
from store.records import StoredContextAssembly

# --------------------------------------------------------------------------- result models


class AuditModel(BaseModel):
    """Base of the audit results: frozen, readable from :mod:`policy.explain`'s dataclasses."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    def to_json(self) -> dict[str, Any]:
        """The result as JSON-ready data."""
        return self.model_dump(mode="json")


class ProvenanceLink(AuditModel):
    """One record on a provenance chain."""

    kind: str
    """``memory``, ``artifact``, ``tool_call``, ``model_run``, ``branch``, ``participant``, ``message`` ..."""
    id: str
    label: str = ""
    """What a reader knows it by: a tool name, a memory's title, a participant's or branch's name."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """A few facts of the record (status, sha256 and size, privacy, visibility); never a payload."""


class IncludedRecord(AuditModel):
    """A record the model was shown."""

    ref: str
    """``<kind>:<id>``."""
    reason: str
    rule: str
    """The decision's kind (``memory``, ``recovery``, ``transcript``, ``appended``, ``rehydration`` ...)."""
    outcome: str
    """``included``, ``protected``, ``marked_stale`` or ``rehydrated``."""
    messages: list[int] = Field(default_factory=list)
    """Indexes of the provider messages that carry it."""
    provenance: list[ProvenanceLink] = Field(default_factory=list)


class OmittedRecord(AuditModel):
    """A record (or its raw bytes) the policy kept out."""

    ref: str
    rule: str
    reason: str
    omission: str | None = None
    """The :class:`~policy.enums.OmissionReason` value."""
    outcome: str = DecisionOutcome.OMITTED.value


class Rehydration(AuditModel):
    """Raw bytes placed in the context: requested evidence, or a first read (a result shown whole)."""

    ref: str
    kind: str
    """``evidence`` or ``first_read``."""
    reason: str
    slice: str | None = None
    """How the stored record names the slice (``rows=2-5``, ``native``)."""


class DecisionRow(AuditModel):
    """One stored decision, in the policy's order."""

    ref: str
    rule: str
    outcome: str
    reason: str
    omission: str | None = None


class Explanation(AuditModel):
    """What one model run saw, and why."""

    model_run_id: str | None
    assembly_id: str
    conversation_id: str
    branch_id: str
    participant_id: str
    runtime_kind: str
    provider_route: str
    policy_version: str
    assembler_version: str
    snapshot_seq: int
    token_budget: int
    assembled_tokens: int
    legacy_tokens: int
    messages: list[dict[str, Any]]
    """The provider messages exactly as sent."""
    included: list[IncludedRecord]
    omitted: list[OmittedRecord]
    rehydrations: list[Rehydration]
    omission_counts: dict[str, int]
    """Omissions by reason, raw payloads that were only counted included."""
    notes: list[DecisionRow]
    """Decisions about no record: the epoch, the route, re-assembly."""
    epoch: dict[str, Any] | None = None
    trace: list[DecisionRow] | None = None
    """With ``trace=True``: every candidate and the rule that decided it."""
    trace_note: str | None = None
    """Why the trace lists decision rows only (the candidates could not be recomputed)."""


class Skipped(AuditModel):
    """An assembly a what-if could not recompute, and why."""

    assembly_id: str
    model_run_id: str | None
    reason: str


class WhyNot(AuditModel):
    """Why one record was, or was not, in one model run's context."""

    record_id: str
    model_run_id: str
    assembly_id: str
    ref: str
    included: bool
    rule: str
    reason: str
    omission: str | None = None
    outcome: str | None = None
    policy_version: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    """What the deciding rule read (record and viewer), when it was recomputed."""
    messages: list[int] = Field(default_factory=list)
    """When included: the provider messages that carry it."""
    decisions: list[DecisionRow] = Field(default_factory=list)
    """Every stored decision about the record, in order."""
    provenance: list[ProvenanceLink] = Field(default_factory=list)


class AssemblyRef(AuditModel):
    """One side of a diff."""

    model_run_id: str | None
    assembly_id: str | None
    """``None`` for a recomputation (not stored)."""
    policy_version: str
    assembled_tokens: int


RecordChange = pure.RecordChange
"""A record whose fate differs between the two sides (:class:`policy.explain.RecordChange`)."""

MessageChange = pure.MessageChange
"""A provider message only one side sends (:class:`policy.explain.MessageChange`)."""

FiredRule = pure.FiredRule
"""A privacy, visibility or recovery rule the second side fires and the first does not
(:class:`policy.explain.FiredRule`)."""


class AssemblyDiff(AuditModel):
    """Two assemblies compared."""

    before: AssemblyRef
    after: AssemblyRef
    added: list[RecordChange]
    dropped: list[RecordChange]
    changed: list[RecordChange]
    messages: list[MessageChange]
    shared_prefix_messages: int
    tokens_before: int
    tokens_after: int
    token_change: int
    billed_before: float
    """Input cost in input-price units (1.0 = one uncached input token; :mod:`policy.pricing`)."""
    billed_after: float
    billed_change: float
    newly_fired: list[FiredRule]


class WhatIfTotals(AuditModel):
    """A what-if's sums."""

    assemblies: int
    changed_assemblies: int
    added: int
    dropped: int
    tokens_before: int
    tokens_after: int
    token_change: int
    billed_before: float
    billed_after: float
    billed_change: float
    newly_fired: dict[str, int]


class WhatIfReport(AuditModel):
    """Stored assemblies recomputed under another policy version, each diffed against what was sent."""

    policy_version: str
    """The target policy's tag."""
    baseline_versions: list[str]
    """The policy versions the assemblies were made under."""
    scope: dict[str, Any]
    runs: list[AssemblyDiff]
    totals: WhatIfTotals
    skipped: list[Skipped] = Field(default_factory=list)
    """Assemblies that cannot be recomputed (stored before their replay inputs were, a forgotten user memory)."""


# --------------------------------------------------------------------------- loading


async def _run_assembly(deps: GraphDeps, account_id: str, model_run_id: str) -> StoredContextAssembly:
    """The assembly a model run was given (a stored assembly's own id is accepted too).

    Raises:
        NotFoundError: neither a model run nor an assembly of the account, or a run with no assembly yet.
    """
    async with deps.sessions() as session:
        try:
            run = await messages.get_model_run(session, account_id, model_run_id)
        except NotFoundError:
            try:
                return await get_context_assembly(session, account_id, model_run_id, with_messages=True)
            except NotFoundError:
                raise NotFoundError("model_run", model_run_id) from None
        if run.context_assembly_id is None:
            raise NotFoundError("context assembly of model_run", model_run_id)
        return await get_context_assembly(session, account_id, run.context_assembly_id, with_messages=True)


def _shown(stored: StoredContextAssembly) -> frozenset[str]:
    return pure.shown_refs(stored.record.selected_refs, stored.record.rehydrated_refs, stored.decisions)


def _row(decision: PolicyDecisionRecord) -> DecisionRow:
    return DecisionRow(ref=decision.subject_ref, rule=decision.kind, outcome=decision.outcome.value,
                       reason=decision.reason, omission=decision.omission.value if decision.omission else None)


async def _recomputed(deps: GraphDeps, account_id: str, assembly_id: str) -> Any:
    """The assembly recomputed under its own policy (candidates, boundary), or ``None`` when it cannot be.

    An assembly stored before its replay inputs were, or under a policy version no longer registered,
    cannot be recomputed; explain and why-not then answer from the stored rows alone.
    """
    try:
        return await recompute_assembly(deps, account_id, assembly_id)
    except (AssemblyNotReplayableError, UnknownPolicyVersionError) as error:
        return error


def _viewer(recomputed: Any) -> Any:
    """The viewer the recomputed candidates were gated for (route narrowed by the agent, lineage)."""
    from policy.admission import resolve_viewer
    from policy.selection import Ledger

    boundary = recomputed.stored.replay.boundary
    return resolve_viewer(recomputed.policy, boundary, recomputed.candidates, Ledger(recomputed.policy.version_tag))


def _requested(recomputed: Any) -> frozenset[str]:
    return frozenset(r.artifact_id for r in recomputed.stored.replay.boundary.evidence_requests)


# --------------------------------------------------------------------------- provenance


async def provenance(deps: GraphDeps, account_id: str, ref: str) -> list[ProvenanceLink]:
    """The provenance chain of one record, down to the raw artifact and up to the participant.

    A memory leads to each source artifact, an artifact to its tool call, a tool call to the model run that
    made it, each to its branch and participant (:func:`store.provenance.walk_provenance`, the walk the
    inspector's record page reads too). A link whose record is gone is left out.

    Args:
        ref: ``<kind>:<id>``.

    Returns:
        The links, each record once, in walking order (none for an unknown or foreign record).
    """
    kind, _, record_id = ref.partition(":")
    try:
        async with deps.sessions() as session:
            chain = await walk_provenance(session, account_id, kind, record_id)
    except NotFoundError:
        return []
    return [_provenance_link(link.kind, link.record) for link in chain.links]


def _provenance_link(kind: str, record: Any) -> ProvenanceLink:
    """One record of a provenance chain as the audit shows it: a label and the fields that explain it."""
    label: str
    if kind == "memory":
        label, detail = record.title, {
            "source_tool": record.source_tool, "privacy": record.privacy.value,
            "visibility": record.visibility.value, "freshness": record.freshness.value,
            "resolution": record.resolution.value, "superseded_by": record.superseded_by}
    elif kind == "artifact":
        label, detail = record.tool_name, {
            "sha256": record.sha256, "result_bytes": record.result_bytes, "storage": record.storage,
            "content_type": record.content_type, "privacy": record.privacy.value,
            "visibility": record.visibility.value}
    elif kind == "tool_call":
        label, detail = record.name, {"call_id": record.call_id, "status": record.status.value,
                                      "attempts": record.attempts, "privacy": record.privacy.value}
    elif kind == "message":
        label, detail = record.role.value, {"seq": record.seq, "speaker_label": record.speaker_label}
    elif kind == "checkpoint":
        label, detail = record.kind, {"references": list(record.references)}
    elif kind == "skill":
        label, detail = record.skill, {"active": record.active}
    elif kind == "user_memory":
        label, detail = "user memory", {"participant_id": record.participant_id}
    elif kind == "model_run":
        label = record.model or ""
        if record.provider and ":" not in label:
            label = f"{record.provider}:{label}"
        detail = {"runtime_kind": record.runtime_kind.value, "status": record.status,
                  "workflow_id": record.workflow_id}
    elif kind == "branch":
        label, detail = record.name, {"parent_branch_id": record.parent_branch_id, "fork_seq": record.fork_seq}
    else:  # participant
        label, detail = record.name, {"model": f"{record.provider}:{record.model}"}
    return ProvenanceLink(kind=kind, id=record.id, label=label, detail=detail)


async def _record_ref(deps: GraphDeps, account_id: str, record_id: str) -> str:
    """``<kind>:<id>`` of a record of the account, from its bare id or its ``<kind>:<id>``.

    Raises:
        NotFoundError: no record of the account has that id.
    """
    asked, kinds = record_id, START_KINDS
    if ":" in record_id:
        kind, _, record_id = record_id.partition(":")
        kinds = (kind,) if kind in START_KINDS else ()
    async with deps.sessions() as session:
        for kind in kinds:
            try:
                await get_record(session, account_id, kind, record_id)
            except NotFoundError:
                continue
            return f"{kind}:{record_id}"
    raise NotFoundError("record", asked)  # the id as asked: a foreign one reads exactly like an unknown one


async def _record(deps: GraphDeps, account_id: str, ref: str) -> Any:
    """The record ``ref`` names, as the store holds it (the account's only)."""
    kind, _, record_id = ref.partition(":")
    async with deps.sessions() as session:
        return await get_record(session, account_id, kind, record_id)


async def _where(deps: GraphDeps, account_id: str, ref: str, sent: Sequence[Mapping[str, Any]]) -> list[int]:
    """The provider messages that carry ``ref`` (a transcript message by its text or its tool calls)."""
    kind, _, record_id = ref.partition(":")
    text, calls = None, []
    if kind == "message":
        async with deps.sessions() as session:
            try:
                message = await messages.get_message(session, account_id, record_id)
                text = message.content
                for request in message.tool_calls:
                    try:
                        calls.append((await tool_store.get_tool_call_by_call_id(session, account_id,
                                                                                 request.call_id)).id)
                    except NotFoundError:
                        continue
            except NotFoundError:
                pass
    return pure.where_shown(ref, sent, text=text, tool_call_ids=calls)


# --------------------------------------------------------------------------- explain


async def explain(deps: GraphDeps, account_id: str, model_run_id: str, *, trace: bool = False) -> Explanation:
    """What a model run saw, and why: included records with provenance, rehydrations, omissions.

    Args:
        account_id: the account asking; only its runs are read.
        model_run_id: the model run (or a stored assembly's id).
        trace: also list every candidate and the rule that decided it (recomputes the candidates).

    Returns:
        The :class:`Explanation`.

    Raises:
        NotFoundError: the run is not the account's, or has no assembly.
    """
    stored = await _run_assembly(deps, account_id, model_run_id)
    sent = list(stored.messages or ())
    shown = _shown(stored)
    finals = pure.final_decisions(stored.decisions)
    slices = {r.split("#", 1)[0]: r.split("#", 1)[1] if "#" in r else None for r in stored.record.rehydrated_refs}
    included = []
    for ref in pure.sorted_refs(r for r in shown if pure.is_record_ref(r)):
        row = finals.get(ref)
        rule, reason, outcome = ((row.kind, row.reason, row.outcome.value) if row
                                 else pure.selected_reason(ref, stored.record.rehydrated_refs))
        included.append(IncludedRecord(
            ref=ref, reason=reason, rule=rule, outcome=outcome,
            messages=await _where(deps, account_id, ref, sent),
            provenance=await provenance(deps, account_id, ref),
        ))
    omitted = [
        OmittedRecord(ref=ref, rule=row.kind, reason=row.reason, outcome=row.outcome.value,
                      omission=row.omission.value if row.omission else None)
        for ref, row in sorted(finals.items()) if ref not in shown and row.outcome in pure.KEPT_OUT
    ]
    rehydrations = []
    for decision in stored.decisions:
        if decision.outcome is DecisionOutcome.REHYDRATED:
            first_read = decision.kind == "appended"
            rehydrations.append(Rehydration(
                ref=decision.subject_ref, kind="first_read" if first_read else "evidence", reason=decision.reason,
                slice=None if first_read else slices.get(decision.subject_ref)))
    notes = [_row(d) for d in stored.decisions if not pure.is_record_ref(d.subject_ref)]
    rows = trace_note = None
    if trace:
        recomputed = await _recomputed(deps, account_id, stored.id)
        if isinstance(recomputed, Exception):
            trace_note = f"decision rows only: the candidates could not be recomputed ({recomputed})"
            found = pure.trace(stored.decisions, shown, stored.record.policy_version)
        else:
            found = pure.trace(stored.decisions, shown, stored.record.policy_version,
                               candidates=recomputed.candidates, viewer=_viewer(recomputed),
                               requested_artifacts=_requested(recomputed), rehydrated_refs=stored.record.rehydrated_refs)
        rows = [DecisionRow.model_validate(row) for row in found]
    return Explanation(
        model_run_id=stored.model_run_id, assembly_id=stored.id, conversation_id=stored.conversation_id,
        branch_id=stored.branch_id, participant_id=stored.participant_id, runtime_kind=stored.runtime_kind.value,
        provider_route=stored.provider_route, policy_version=stored.record.policy_version,
        assembler_version=stored.record.assembler_version, snapshot_seq=stored.record.snapshot_seq,
        token_budget=stored.record.token_budget, assembled_tokens=stored.record.assembled_tokens,
        legacy_tokens=stored.record.legacy_tokens, messages=sent, included=included, omitted=omitted,
        rehydrations=rehydrations, omission_counts=dict(stored.record.omitted_counts), notes=notes,
        epoch=stored.record.epoch.model_dump(mode="json") if stored.record.epoch else None,
        trace=rows, trace_note=trace_note,
    )


# --------------------------------------------------------------------------- why not


async def why_not(deps: GraphDeps, account_id: str, record_id: str, model_run_id: str) -> WhyNot:
    """Why a record was not in a model run's context (the rule, its inputs, the policy version), or where it was.

    Args:
        record_id: a memory, artifact, tool call, message, checkpoint, skill state or user memory of the account.
        model_run_id: the model run (or a stored assembly's id).

    Returns:
        The :class:`WhyNot`.

    Raises:
        NotFoundError: the run or the record is not the account's.
    """
    stored = await _run_assembly(deps, account_id, model_run_id)
    ref = await _record_ref(deps, account_id, record_id)
    shown = _shown(stored)
    verdict = pure.why_not(ref, stored.decisions, shown, stored.record.policy_version,
                           rehydrated_refs=stored.record.rehydrated_refs)
    if not verdict.included and not verdict.decisions:
        recomputed = await _recomputed(deps, account_id, stored.id)
        if isinstance(recomputed, Exception):
            verdict = dataclasses.replace(verdict, rule="unknown", reason=(
                f"no decision row names it, and the candidates could not be recomputed ({recomputed})"))
        else:
            verdict = pure.why_not(ref, stored.decisions, shown, stored.record.policy_version,
                                   candidates=recomputed.candidates, viewer=_viewer(recomputed),
                                   requested_artifacts=_requested(recomputed),
                                   record=await _record(deps, account_id, ref),
                                   rehydrated_refs=stored.record.rehydrated_refs)
    where = await _where(deps, account_id, ref, stored.messages or ()) if verdict.included else []
    return WhyNot(
        record_id=ref.partition(":")[2], model_run_id=stored.model_run_id or stored.id, assembly_id=stored.id, ref=ref,
        included=verdict.included, rule=verdict.rule, reason=verdict.reason, omission=verdict.omission,
        outcome=verdict.outcome, policy_version=verdict.policy_version, inputs=verdict.inputs, messages=where,
        decisions=[_row(d) for d in verdict.decisions], provenance=await provenance(deps, account_id, ref),
    )


# --------------------------------------------------------------------------- diff and what-if


def message_tokens(message: Mapping[str, Any], counter: TokenCounter) -> int:
    """A provider message's tokens as :func:`policy.tokens.count_message` counts them (OpenAI form)."""
    total = MESSAGE_OVERHEAD_TOKENS + (counter(message["content"]) if message.get("content") else 0)
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        total += counter(str(function.get("name", ""))) + counter(str(function.get("arguments", "")))
    return total


def _side(deps: GraphDeps, decisions: Sequence[PolicyDecisionRecord], shown: frozenset[str],
          sent: Sequence[Mapping[str, Any]], assembled_tokens: int, route: str, version: str,
          previous: Sequence[Mapping[str, Any]] = ()) -> pure.Side:
    return pure.Side(
        decisions=tuple(decisions), shown=shown, messages=tuple(sent),
        message_tokens=tuple(message_tokens(m, deps.counter) for m in sent), assembled_tokens=assembled_tokens,
        provider_route=route, policy_version=version,
        previous_message_tokens=tuple((canonical_json(dict(m)), message_tokens(m, deps.counter)) for m in previous),
    )


def _stored_side(deps: GraphDeps, stored: StoredContextAssembly,
                 previous: Sequence[Mapping[str, Any]] = ()) -> pure.Side:
    return _side(deps, stored.decisions, _shown(stored), stored.messages or (), stored.record.assembled_tokens,
                 stored.provider_route, stored.record.policy_version, previous)


def _diff_model(result: pure.Diff, before: AssemblyRef, after: AssemblyRef) -> AssemblyDiff:
    return AssemblyDiff(
        before=before, after=after,
        added=list(result.added), dropped=list(result.dropped), changed=list(result.changed),
        messages=list(result.messages),
        shared_prefix_messages=result.shared_prefix_messages, tokens_before=result.tokens_before,
        tokens_after=result.tokens_after, token_change=result.token_change, billed_before=result.billed_before,
        billed_after=result.billed_after, billed_change=result.billed_change,
        newly_fired=list(result.newly_fired),
    )


def _ref_of(stored: StoredContextAssembly) -> AssemblyRef:
    return AssemblyRef(model_run_id=stored.model_run_id, assembly_id=stored.id,
                       policy_version=stored.record.policy_version, assembled_tokens=stored.record.assembled_tokens)


async def _previous_call(deps: GraphDeps, account_id: str, stored: StoredContextAssembly) -> StoredContextAssembly:
    """The same participant's assembly on the same branch just before ``stored`` (its previous call).

    Raises:
        NotFoundError: ``stored`` is the participant's first call on the branch.
    """
    async with deps.sessions() as session:
        previous = await previous_call_id(session, account_id, stored)
        if previous is None:
            raise NotFoundError("earlier call of the participant before model_run", stored.model_run_id or stored.id)
        return await get_context_assembly(session, account_id, previous, with_messages=True)


async def diff(deps: GraphDeps, account_id: str, model_run_id: str, other_model_run_id: str | None = None, *,
               policy_version: str | None = None) -> AssemblyDiff:
    """Two assemblies compared: records added and dropped, messages, tokens, billed cost, guarded rules.

    * two runs: the first's assembly against the second's;
    * one run and ``policy_version``: the run as stored against its recomputation under that version;
    * one run: the participant's previous call on the branch against this one (consecutive calls).

    Raises:
        NotFoundError: a run that is not the account's; a first call with nothing before it.
        UnknownPolicyVersionError: ``policy_version`` is not registered.
    """
    after = await _run_assembly(deps, account_id, model_run_id)
    if other_model_run_id is not None:
        before, after = after, await _run_assembly(deps, account_id, other_model_run_id)
        result = pure.diff_assemblies(_stored_side(deps, before), _stored_side(deps, after, before.messages or ()))
        return _diff_model(result, _ref_of(before), _ref_of(after))
    if policy_version is not None:
        target = policy_by_name(policy_version)
        return (await _recompute_diff(deps, account_id, after, target))[0]
    before = await _previous_call(deps, account_id, after)
    result = pure.diff_assemblies(_stored_side(deps, before), _stored_side(deps, after, before.messages or ()))
    return _diff_model(result, _ref_of(before), _ref_of(after))


async def _recompute_diff(deps: GraphDeps, account_id: str, stored: StoredContextAssembly, target: Any,
                          previous: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]] = ((), ()),
                          ) -> tuple[AssemblyDiff, list[dict[str, Any]]]:
    """``stored`` against its recomputation under ``target`` (``previous``: each side's previous call).

    Returns:
        The diff, and the recomputed messages (the next call's previous call).

    Raises:
        AssemblyNotReplayableError: ``stored`` cannot be recomputed.
    """

    again = await recompute_assembly(deps, account_id, stored.id, policy=target)
    sent = [dict(m) for m in again.messages]
    result = pure.diff_assemblies(
        _stored_side(deps, stored, previous[0]),
        _side(deps, again.result.decisions, pure.shown_refs(again.result.record.selected_refs,
                                                            again.result.record.rehydrated_refs,
                                                            again.result.decisions),
              sent, again.result.record.assembled_tokens, stored.provider_route, target.version_tag, previous[1]),
    )
    after = AssemblyRef(model_run_id=stored.model_run_id, assembly_id=None, policy_version=target.version_tag,
                        assembled_tokens=again.result.record.assembled_tokens)
    return _diff_model(result, _ref_of(stored), after), sent


WHAT_IF_MAX = 500
"""At most this many assemblies are replayed by one what-if (the newest)."""


async def what_if(deps: GraphDeps, account_id: str, policy_version: str, *, conversation_id: str | None = None,
                  account: str | None = None, last: int | None = None) -> WhatIfReport:
    """Recompute stored assemblies under another registered policy version and report what would change.

    At most one scope: a conversation, the account (``account`` must be the caller's; the default), or the
    last ``last`` model runs that have a stored assembly (runs without one are passed over). Assemblies are replayed oldest first, each participant's previous call giving the cache
    estimate on both sides.

    Raises:
        NotFoundError: a conversation or account that is not the caller's.
        UnknownPolicyVersionError: ``policy_version`` is not registered.
        ValueError: more than one scope, or ``last`` below 1.
    """
    if sum(x is not None for x in (conversation_id, account, last)) > 1:
        raise ValueError("what-if takes one of a conversation, an account or the last N runs")
    if conversation_id is None and last is None:
        account = account_id if account is None else account
    if last is not None and last < 1:
        raise ValueError(f"--last must be at least 1, not {last}")
    target = policy_by_name(policy_version)
    async with deps.sessions() as session:
        if conversation_id is not None:
            await conversations.get_conversation(session, account_id, conversation_id)
            scope: dict[str, Any] = {"conversation_id": conversation_id}
            ids = [a.id for a in await list_context_assemblies(session, account_id, conversation_id=conversation_id,
                                                              limit=WHAT_IF_MAX)]
        elif account is not None:
            if account != account_id:
                raise NotFoundError("account", account)
            scope = {"account_id": account}
            ids = [a.id for a in await list_context_assemblies(session, account_id, limit=WHAT_IF_MAX)]
        else:
            scope = {"last": last}
            runs = await messages.list_model_runs(session, account_id, limit=min(last or 1, WHAT_IF_MAX),
                                                  with_assembly=True)
            ids = [run.context_assembly_id for run in runs if run.context_assembly_id]
        stored = [await get_context_assembly(session, account_id, one, with_messages=True) for one in ids]
    stored.sort(key=lambda a: (a.created_at, a.record.snapshot_seq, a.id))
    previous: dict[tuple[str, str], tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]] = {}
    diffs: list[AssemblyDiff] = []
    skipped: list[Skipped] = []
    for one in stored:
        key = (one.branch_id, one.participant_id)
        try:
            result, sent = await _recompute_diff(deps, account_id, one, target, previous.get(key, ((), ())))
        except AssemblyNotReplayableError as error:
            skipped.append(Skipped(assembly_id=one.id, model_run_id=one.model_run_id, reason=str(error)))
            continue
        diffs.append(result)
        previous[key] = (one.messages or (), sent)
    return WhatIfReport(policy_version=target.version_tag,
                        baseline_versions=sorted({a.record.policy_version for a in stored}), scope=scope,
                        runs=diffs, totals=_totals(diffs), skipped=skipped)


def _totals(diffs: Sequence[AssemblyDiff]) -> WhatIfTotals:
    summed = pure.totals(diffs)
    return WhatIfTotals(
        assemblies=summed.assemblies, changed_assemblies=summed.changed_assemblies, added=summed.added,
        dropped=summed.dropped, tokens_before=summed.tokens_before, tokens_after=summed.tokens_after,
        token_change=summed.token_change, billed_before=summed.billed_before, billed_after=summed.billed_after,
        billed_change=summed.billed_change, newly_fired=summed.newly_fired,
    )


def dumps(result: AuditModel) -> str:
    """A result as indented JSON (what ``--json`` prints): ASCII only, so no stored text can reach a terminal
    as a control or bidi character (JSON escapes them)."""
    return json.dumps(result.to_json(), indent=2)


__all__ = [
    "AssemblyDiff", "AssemblyRef", "DecisionRow", "Explanation", "FiredRule", "IncludedRecord", "MessageChange",
    "OmittedRecord", "ProvenanceLink", "RecordChange", "Rehydration", "Skipped", "WhatIfReport", "WhatIfTotals", "WhyNot",
    "diff", "dumps", "explain", "message_tokens", "provenance", "what_if", "why_not",
]
