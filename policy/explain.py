"""Reading an assembly's decisions back: explain, why-not, diff and what-if totals (pure).

Every stored assembly keeps its provider messages and one
:class:`~policy.records.PolicyDecisionRecord` per record it considered, in the
order the policy decided. This module turns those rows (and, where a record
got no row of its own, the candidates a recomputation loads) into answers:

* :func:`final_decisions` and :func:`sorted_refs`: each record's last word, and
  which records reached the model (:func:`policy.taint.context_sources`, the
  same reading the taint rule uses);
* :func:`why_not`: the rule, its reason and the policy version that kept a
  record out, or the decision that let it in;
* :func:`trace`: every candidate of the assembly and the rule that decided it,
  including the raw artifacts that are only counted (never sent unrequested);
* :func:`diff_assemblies`: records added or dropped between two assemblies,
  messages added or removed, token and billed-cost change, and the privacy,
  visibility and recovery rules that fire in one and not the other.

No I/O: :mod:`dossier.audit` loads the rows and calls these.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policy.taint import context_sources
from policy.enums import DecisionOutcome, OmissionReason
from policy.epochs import EPOCH_CONTINUED
from policy.gates import Viewer, admit
from policy.native import native_call_id
from policy.pricing import price_for_route
from policy.records import CandidateSet, PolicyDecisionRecord, canonical_json
from policy.transcript import SPEAKER_SEPARATOR

SHOWN = frozenset({DecisionOutcome.INCLUDED, DecisionOutcome.PROTECTED, DecisionOutcome.MARKED_STALE,
                   DecisionOutcome.REHYDRATED})
"""Outcomes under which a record (or part of it) reached the model."""

KEPT_OUT = frozenset({DecisionOutcome.OMITTED, DecisionOutcome.DENIED})
"""Outcomes that kept a record (or its raw bytes) out."""

BOOKKEEPING_PREFIXES = ("epoch:", "route:", "note:", "tool_calls:", "model_run:")
"""Subject refs that name no graph record: the epoch, the route, a runtime note, an unloaded-calls count,
a refused model run."""

PRIVACY_OMISSIONS = frozenset({OmissionReason.PRIVACY_ROUTE, OmissionReason.RAW_PRIVACY})
VISIBILITY_OMISSIONS = frozenset({OmissionReason.OUTSIDE_LINEAGE, OmissionReason.NOT_VISIBLE,
                                  OmissionReason.AUDIT_ONLY, OmissionReason.NOT_PROMOTED})


def is_record_ref(ref: str) -> bool:
    """Whether ``ref`` names a graph record (``memory:…``), not bookkeeping (``epoch:…``)."""
    return not ref.startswith(BOOKKEEPING_PREFIXES)


def epoch_state(started: bool, reason: str) -> str:
    """An assembly's place in its cache epoch as a reader says it: ``started: <why>``, or ``continued``.

    A continuing assembly records the word itself as its reason (:data:`policy.epochs.EPOCH_CONTINUED`), so it
    is said once, not as ``continued: continued``.

    Args:
        started: the assembly started the epoch.
        reason: the epoch record's reason.
    """
    state = "started" if started else EPOCH_CONTINUED
    return state if reason in ("", state) else f"{state}: {reason}"


def final_decisions(decisions: Iterable[PolicyDecisionRecord]) -> dict[str, PolicyDecisionRecord]:
    """Each record's deciding row: the last one that let it in, else the last one about it.

    A record may get several rows (admitted, then kept by the budget; a memory
    marked stale after the events); the one that shows it wins over an earlier
    or later omission of a *different* form (an artifact's raw bytes withheld
    while its memory line is shown are two records: ``artifact:`` and ``memory:``).
    """
    last: dict[str, PolicyDecisionRecord] = {}
    shown: dict[str, PolicyDecisionRecord] = {}
    for decision in decisions:
        if not is_record_ref(decision.subject_ref):
            continue
        last[decision.subject_ref] = decision
        if decision.outcome in SHOWN and decision.kind != "restore":
            shown[decision.subject_ref] = decision
    return {ref: shown.get(ref, row) for ref, row in last.items()}


def shown_refs(selected_refs: Sequence[str], rehydrated_refs: Sequence[str],
               decisions: Sequence[PolicyDecisionRecord]) -> frozenset[str]:
    """The records whose text reached the model (as the taint rule reads an assembly)."""
    sources = context_sources(selected_refs, rehydrated_refs, decisions)
    return sources.shown | sources.arguments_only


def sorted_refs(refs: Iterable[str]) -> list[str]:
    """Refs in a stable order (kind, then id)."""
    return sorted(set(refs))


# --------------------------------------------------------------------------- where a record shows


def citation_keys(ref: str) -> tuple[str, ...]:
    """What a rendered message names a record by: ``m:0be7f87a`` in a line (the short id is a prefix of 8 or
    more), and for a tool call also the id of its native step (:func:`policy.native.native_call_id`)."""
    kind, _, record_id = ref.partition(":")
    letter = {"memory": "m", "tool_call": "t", "checkpoint": "c", "skill": "s", "artifact": "a"}.get(kind)
    if letter is None or not record_id:
        return ()
    keys = (f"{letter}:{record_id.replace('-', '')[:8]}",)
    return (*keys, native_call_id(record_id)) if kind == "tool_call" else keys


def message_text(message: Mapping[str, Any]) -> str:
    """A provider message's text, tool calls included (what is searched for a citation)."""
    parts = [str(message.get("content") or "")]
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(f"{call.get('id', '')} {function.get('name', '')} {function.get('arguments', '')}")
    if message.get("tool_call_id"):
        parts.append(str(message["tool_call_id"]))
    return "\n".join(parts)


def where_shown(ref: str, messages: Sequence[Mapping[str, Any]], *, text: str | None = None,
                tool_call_ids: Sequence[str] = ()) -> list[int]:
    """Indexes of the provider messages that carry ``ref``.

    Args:
        messages: the provider messages, as sent.
        text: for a transcript message, its content (matched on its first line).
        tool_call_ids: for a transcript message, the ids of the tool-call records it made (its native step
            names them).

    Returns:
        The message indexes, ascending (empty when nothing names it).
    """
    keys = list(citation_keys(ref)) + [native_call_id(call_id) for call_id in tool_call_ids]
    first = text.strip().splitlines()[0].strip() if text and text.strip() else None
    found = []
    for index, message in enumerate(messages):
        body = message_text(message)
        if any(key in body for key in keys) or (first and any(_carries(line, first) for line in body.splitlines())):
            found.append(index)
    return found


TEXT_MATCH_CHARS = 120
"""A message's first line longer than this is matched on its first this many characters (a cut copy)."""


def _carries(line: str, first: str) -> bool:
    """Whether a provider message's ``line`` is a transcript message whose first line is ``first``: the whole
    line, or after a speaker label (``Ada: ...``, :data:`policy.transcript.SPEAKER_SEPARATOR`); a long first
    line may be cut. A short text ("ok") inside other words ("token", "okay") is not the message."""
    line = line.strip()
    if line == first or line.endswith(f"{SPEAKER_SEPARATOR}{first}"):
        return True
    if len(first) <= TEXT_MATCH_CHARS:
        return False
    needle = first[:TEXT_MATCH_CHARS]
    return line.startswith(needle) or f"{SPEAKER_SEPARATOR}{needle}" in line


# --------------------------------------------------------------------------- why not


@dataclass(frozen=True)
class Verdict:
    """Why one record is in an assembly, or the rule that kept it out."""

    ref: str
    """The record as decisions name it (``memory:<id>``)."""
    included: bool
    rule: str
    """The deciding rule: the decision's ``kind`` (``visibility``, ``privacy``, ``supersession`` ...), or
    ``candidates`` / ``rehydration`` for a record that got no row of its own."""
    reason: str
    omission: str | None = None
    """The :class:`~policy.enums.OmissionReason` value when it was kept out."""
    outcome: str | None = None
    policy_version: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    """What the rule looked at (the record's branch, seq, owner, visibility, privacy; the route's classes)."""
    decisions: tuple[PolicyDecisionRecord, ...] = ()
    """Every row of the assembly about the record, in order."""


def selected_reason(ref: str, rehydrated_refs: Sequence[str]) -> tuple[str, str, str]:
    """Rule, reason and outcome of a record shown without a row of its own: raw bytes the assembly placed."""
    slices = {r.split("#", 1)[0]: r.split("#", 1)[1] if "#" in r else "" for r in rehydrated_refs}
    if slices.get(ref) == "native":
        return ("appended", "raw bytes shown whole as its call's tool message (a first read)",
                DecisionOutcome.REHYDRATED.value)
    if ref in slices:
        return "rehydration", f"raw evidence placed in the context ({slices[ref]})", DecisionOutcome.REHYDRATED.value
    return "selected", "selected into the context", DecisionOutcome.INCLUDED.value


def refs_for(record_id: str, decisions: Iterable[PolicyDecisionRecord]) -> list[str]:
    """The refs in ``decisions`` that name ``record_id`` (any kind), in first-seen order."""
    out: list[str] = []
    for decision in decisions:
        kind, _, rest = decision.subject_ref.partition(":")
        if rest == record_id and decision.subject_ref not in out and is_record_ref(decision.subject_ref):
            out.append(decision.subject_ref)
    return out


def why_not(
    ref: str,
    decisions: Sequence[PolicyDecisionRecord],
    shown: frozenset[str],
    policy_version: str,
    *,
    candidates: CandidateSet | None = None,
    viewer: Viewer | None = None,
    requested_artifacts: frozenset[str] = frozenset(),
    record: Any = None,
    rehydrated_refs: Sequence[str] = (),
) -> Verdict:
    """The rule that kept ``ref`` out of an assembly, or proof that it was included.

    Args:
        ref: the record (``memory:<id>``, ``artifact:<id>``, ``tool_call:<id>``, ``message:<id>`` ...).
        decisions: the assembly's decisions, in order.
        shown: what reached the model (:func:`shown_refs`).
        policy_version: the assembly's policy version.
        candidates: the candidates the assembly was computed from (a recomputation's), for a record that
            got no decision row: a raw artifact is only counted, a record outside the pool is not considered.
        viewer: the viewer those candidates were gated for (route and lineage), with ``candidates``.
        requested_artifacts: artifacts the boundary requested as evidence.
        record: the record itself as the store holds it, for one outside the candidate pool (the loader
            applies the lineage rule in its query, so a sibling branch's record is never a candidate).
        rehydrated_refs: the assembly record's ``rehydrated_refs``, which name raw bytes it placed.
    """
    about = tuple(d for d in decisions if d.subject_ref == ref)
    final = final_decisions(about).get(ref)
    if ref in shown or (final is not None and final.outcome in SHOWN and final.kind != "restore"):
        row = final if final is not None and final.outcome in SHOWN else None
        if row is not None:
            return Verdict(ref=ref, included=True, rule=row.kind, reason=row.reason, outcome=row.outcome.value,
                           policy_version=row.policy_version, decisions=about)
        rule, reason, outcome = selected_reason(ref, rehydrated_refs)
        return Verdict(ref=ref, included=True, rule=rule, reason=reason, outcome=outcome,
                       policy_version=policy_version, decisions=about)
    if final is not None:
        return Verdict(ref=ref, included=False, rule=final.kind, reason=final.reason,
                       omission=final.omission.value if final.omission else None, outcome=final.outcome.value,
                       policy_version=final.policy_version, decisions=about)
    return _undecided(ref, policy_version, candidates, viewer, requested_artifacts, record)


def _undecided(ref: str, policy_version: str, candidates: CandidateSet | None, viewer: Viewer | None,
               requested: frozenset[str], stored: Any = None) -> Verdict:
    """A record the assembly wrote no row about: a raw artifact (counted only), or one outside the pool."""
    kind, _, record_id = ref.partition(":")
    record = _candidate(candidates, kind, record_id) if candidates is not None else None
    if record is None and stored is not None and candidates is not None:
        return _outside_pool(ref, stored, candidates, viewer, policy_version)
    if record is None:
        snapshot = candidates.snapshot_seq if candidates is not None else None
        where = f" (snapshot seq {snapshot})" if snapshot is not None else ""
        return Verdict(ref=ref, included=False, rule="candidates", policy_version=policy_version,
                       reason=("not in the candidate pool loaded for this call" + where +
                               ": written after the snapshot, in another conversation, or past the candidate limits"),
                       inputs={"snapshot_seq": snapshot} if snapshot is not None else {})
    inputs = gate_inputs(record, viewer)
    denial = admit(record, record.privacy, viewer) if viewer is not None else None
    if denial is not None:
        rule = "privacy" if denial.reason is OmissionReason.PRIVACY_ROUTE else "visibility"
        return Verdict(ref=ref, included=False, rule=rule, reason=denial.detail, omission=denial.reason.value,
                       outcome=DecisionOutcome.OMITTED.value, policy_version=policy_version, inputs=inputs)
    if kind == "artifact" and record_id not in requested:
        citing = [m.id for m in candidates.tool_memories if record_id in m.source_artifact_ids]
        also = f"; its result reaches the model through memory {citing[0]}" if citing else ""
        return Verdict(ref=ref, included=False, rule="rehydration", policy_version=policy_version,
                       reason="raw bytes are sent only when requested as evidence or as a first read" + also,
                       omission=OmissionReason.RAW_NOT_REQUESTED.value, outcome=DecisionOutcome.OMITTED.value,
                       inputs={**inputs, "cited_by": citing})
    return Verdict(ref=ref, included=False, rule="candidates", policy_version=policy_version, inputs=inputs,
                   reason="a candidate the policy recorded no decision about")


def _outside_pool(ref: str, record: Any, candidates: CandidateSet, viewer: Viewer | None,
                  policy_version: str) -> Verdict:
    """A record the candidate query did not load: written after the snapshot, or kept out by the gates."""
    inputs = {**gate_inputs(record, viewer), "snapshot_seq": candidates.snapshot_seq}
    seq = getattr(record, "seq", None)
    if seq is not None and seq > candidates.snapshot_seq:
        return Verdict(ref=ref, included=False, rule="snapshot", policy_version=policy_version, inputs=inputs,
                       reason=f"written at seq {seq}, after the call's snapshot (seq {candidates.snapshot_seq})")
    privacy = getattr(record, "privacy", None)
    denial = admit(record, privacy, viewer) if viewer is not None and hasattr(record, "visibility") else None
    if denial is not None:
        if ref.startswith("message:"):
            rule = {OmissionReason.OUTSIDE_LINEAGE: "lineage", OmissionReason.PRIVACY_ROUTE: "privacy"}.get(
                denial.reason, "visibility")
        else:
            rule = "privacy" if denial.reason is OmissionReason.PRIVACY_ROUTE else "visibility"
        return Verdict(ref=ref, included=False, rule=rule, reason=denial.detail, omission=denial.reason.value,
                       outcome=DecisionOutcome.OMITTED.value, policy_version=policy_version, inputs=inputs)
    return Verdict(ref=ref, included=False, rule="candidates", policy_version=policy_version, inputs=inputs,
                   reason="not in the candidate pool loaded for this call: in another conversation, or past the "
                          "candidate limits")


def _candidate(candidates: CandidateSet, kind: str, record_id: str) -> Any:
    pools = {"memory": candidates.tool_memories, "tool_call": candidates.tool_calls,
             "artifact": candidates.artifacts, "message": candidates.messages,
             "checkpoint": candidates.checkpoints, "skill": candidates.skill_states,
             "user_memory": candidates.user_memories}
    return next((record for record in pools.get(kind, ()) if record.id == record_id), None)


def gate_inputs(record: Any, viewer: Viewer | None) -> dict[str, Any]:
    """What the lineage, visibility and privacy gates read from ``record`` and ``viewer``."""
    inputs: dict[str, Any] = {}
    for name in ("branch_id", "seq", "visibility", "privacy", "owner_participant_id", "participant_id",
                 "author_participant_id", "promotion"):
        value = getattr(record, name, None)
        if value is not None:
            inputs[name] = getattr(value, "value", value)
    shared = getattr(record, "shared_with", ())
    if shared:
        inputs["shared_with"] = list(shared)
    if viewer is not None:
        inputs["viewer_participant_id"] = viewer.participant_id
        inputs["lineage"] = [{"branch_id": s.branch_id, "until_seq": s.until_seq} for s in viewer.lineage.steps]
        inputs["route"] = viewer.route.name
        inputs["route_allowed"] = sorted(c.value for c in viewer.route.allowed)
    return inputs


# --------------------------------------------------------------------------- trace


@dataclass(frozen=True)
class TraceRow:
    """One candidate of an assembly and the rule that decided it."""

    ref: str
    rule: str
    outcome: str
    reason: str
    omission: str | None = None


def trace(
    decisions: Sequence[PolicyDecisionRecord],
    shown: frozenset[str],
    policy_version: str,
    *,
    candidates: CandidateSet | None = None,
    viewer: Viewer | None = None,
    requested_artifacts: frozenset[str] = frozenset(),
    rehydrated_refs: Sequence[str] = (),
) -> list[TraceRow]:
    """Every candidate and the rule that decided it: each decision row, then the candidates without one.

    Args:
        decisions: the assembly's decisions, in order (each becomes a row, bookkeeping included).
        shown: what reached the model.
        policy_version: the assembly's policy version.
        candidates: the recomputed candidates, for records with no row (raw artifacts, counted only).
        requested_artifacts: artifacts requested as evidence.
        rehydrated_refs: the assembly record's ``rehydrated_refs``.

    Returns:
        The rows: decisions in the policy's order, then undecided candidates by ref.
    """
    rows = [TraceRow(ref=d.subject_ref, rule=d.kind, outcome=d.outcome.value, reason=d.reason,
                     omission=d.omission.value if d.omission else None) for d in decisions]
    if candidates is None:
        return rows
    decided = {d.subject_ref for d in decisions}
    pools = (("memory", candidates.tool_memories), ("tool_call", candidates.tool_calls),
             ("artifact", candidates.artifacts), ("message", candidates.messages),
             ("checkpoint", candidates.checkpoints), ("skill", candidates.skill_states),
             ("user_memory", candidates.user_memories))
    for kind, records in pools:
        for record in sorted(records, key=lambda r: r.id):
            ref = f"{kind}:{record.id}"
            if ref in decided:
                continue
            verdict = why_not(ref, (), shown, policy_version, candidates=candidates, viewer=viewer,
                              requested_artifacts=requested_artifacts, rehydrated_refs=rehydrated_refs)
            rows.append(TraceRow(ref=ref, rule=verdict.rule,
                                 outcome=verdict.outcome or (DecisionOutcome.INCLUDED.value if verdict.included
                                                             else DecisionOutcome.OMITTED.value),
                                 reason=verdict.reason, omission=verdict.omission))
    return rows


# --------------------------------------------------------------------------- diff


@dataclass(frozen=True)
class Side:
    """One assembly as a diff compares it."""

    decisions: tuple[PolicyDecisionRecord, ...]
    shown: frozenset[str]
    messages: tuple[Mapping[str, Any], ...]
    message_tokens: tuple[int, ...]
    """Tokens of each provider message (framing included), for billing."""
    assembled_tokens: int
    provider_route: str
    policy_version: str
    previous_message_tokens: tuple[tuple[str, int], ...] = ()
    """The previous call's messages (canonical JSON, tokens) of the same participant, for the cache estimate:
    the prefix shared with it is billed at the route's cache-read price."""


@dataclass(frozen=True)
class RecordChange:
    """A record whose fate differs between two assemblies."""

    ref: str
    before_outcome: str | None
    before_rule: str | None
    before_reason: str | None
    after_outcome: str | None
    after_rule: str | None
    after_reason: str | None
    after_omission: str | None = None


@dataclass(frozen=True)
class FiredRule:
    """A privacy, visibility or recovery rule that fires in the second assembly and not in the first."""

    family: str
    """``privacy``, ``visibility`` or ``recovery``."""
    ref: str
    rule: str
    outcome: str
    reason: str
    omission: str | None = None


@dataclass(frozen=True)
class MessageChange:
    """A provider message only one side sends."""

    side: str
    """``added`` (only the second sends it) or ``removed`` (only the first)."""
    index: int
    """Its index in the side that sends it."""
    role: str
    text: str
    """Its text, cut to :data:`EXCERPT_CHARS`."""


@dataclass(frozen=True)
class Diff:
    """What changes from one assembly to another."""

    added: tuple[RecordChange, ...]
    """Records the second shows and the first did not."""
    dropped: tuple[RecordChange, ...]
    """Records the first showed and the second does not."""
    changed: tuple[RecordChange, ...]
    """Records shown (or kept out) by both, under another rule or outcome."""
    messages: tuple[MessageChange, ...]
    shared_prefix_messages: int
    """Messages both send, byte for byte, from the start."""
    tokens_before: int
    tokens_after: int
    billed_before: float
    billed_after: float
    newly_fired: tuple[FiredRule, ...]

    @property
    def token_change(self) -> int:
        """Tokens added (negative: saved)."""
        return self.tokens_after - self.tokens_before

    @property
    def billed_change(self) -> float:
        """Billed input cost added, in input-price units (negative: saved)."""
        return round(self.billed_after - self.billed_before, 3)


EXCERPT_CHARS = 240
"""A changed message is shown up to this many characters."""


def rule_family(decision: PolicyDecisionRecord) -> str | None:
    """Which family of guarded rule a decision belongs to: ``privacy``, ``visibility``, ``recovery`` or none."""
    if decision.kind == "privacy" or decision.omission in PRIVACY_OMISSIONS or decision.kind == "route":
        return "privacy"
    if decision.kind in ("visibility", "lineage") or decision.omission in VISIBILITY_OMISSIONS:
        return "visibility"
    if decision.kind == "recovery" or decision.subject_ref.startswith("tool_calls:unloaded") or (
            decision.subject_ref.startswith("tool_call:") and decision.outcome is DecisionOutcome.PROTECTED):
        return "recovery"
    return None


def diff_assemblies(before: Side, after: Side) -> Diff:
    """Records added or dropped, messages changed, tokens and billed cost, and guarded rules newly firing.

    Args:
        before: the first assembly (an earlier call, or the stored one).
        after: the second (the next call, or a recomputation under another policy).

    Returns:
        The :class:`Diff`.
    """
    old, new = final_decisions(before.decisions), final_decisions(after.decisions)
    added, dropped, changed = [], [], []
    for ref in sorted_refs(set(old) | set(new) | before.shown | after.shown):
        if not is_record_ref(ref):
            continue
        was, now = ref in before.shown, ref in after.shown
        change = _change(ref, old.get(ref), new.get(ref))
        if now and not was:
            added.append(change)
        elif was and not now:
            dropped.append(change)
        elif ref in old and ref in new and (old[ref].kind, old[ref].outcome, old[ref].omission) != (
                new[ref].kind, new[ref].outcome, new[ref].omission):
            changed.append(change)
    fired_before = {_fired_key(d) for d in before.decisions if rule_family(d)}
    fired = []
    for decision in after.decisions:
        family = rule_family(decision)
        if family and _fired_key(decision) not in fired_before:
            fired.append(FiredRule(family=family, ref=decision.subject_ref, rule=decision.kind,
                                   outcome=decision.outcome.value, reason=decision.reason,
                                   omission=decision.omission.value if decision.omission else None))
            fired_before.add(_fired_key(decision))
    messages, shared = message_changes(before.messages, after.messages)
    return Diff(added=tuple(added), dropped=tuple(dropped), changed=tuple(changed), messages=tuple(messages),
                shared_prefix_messages=shared, tokens_before=before.assembled_tokens,
                tokens_after=after.assembled_tokens, billed_before=billed(before), billed_after=billed(after),
                newly_fired=tuple(fired))


def _fired_key(decision: PolicyDecisionRecord) -> tuple[str, str, str, str | None]:
    return (decision.kind, decision.subject_ref, decision.outcome.value,
            decision.omission.value if decision.omission else None)


def _change(ref: str, old: PolicyDecisionRecord | None, new: PolicyDecisionRecord | None) -> RecordChange:
    return RecordChange(
        ref=ref,
        before_outcome=old.outcome.value if old else None, before_rule=old.kind if old else None,
        before_reason=old.reason if old else None,
        after_outcome=new.outcome.value if new else None, after_rule=new.kind if new else None,
        after_reason=new.reason if new else None,
        after_omission=new.omission.value if new and new.omission else None,
    )


def message_changes(before: Sequence[Mapping[str, Any]],
                    after: Sequence[Mapping[str, Any]]) -> tuple[list[MessageChange], int]:
    """The messages only one side sends (a sequence diff on their canonical JSON), and the shared prefix."""
    left = [canonical_json(dict(m)) for m in before]
    right = [canonical_json(dict(m)) for m in after]
    shared = 0
    while shared < min(len(left), len(right)) and left[shared] == right[shared]:
        shared += 1
    changes: list[MessageChange] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changes += [_message_change("removed", i, before[i]) for i in range(i1, i2)]
        changes += [_message_change("added", j, after[j]) for j in range(j1, j2)]
    return changes, shared


def _message_change(side: str, index: int, message: Mapping[str, Any]) -> MessageChange:
    text = message_text(message)
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS - 1] + "…"
    return MessageChange(side=side, index=index, role=str(message.get("role", "")), text=text)


def billed(side: Side) -> float:
    """The side's input cost in input-price units: its route's cache-read price for the prefix it shares with
    the participant's previous call (when that is long enough to be cached), the input price for the rest."""
    price = price_for_route(side.provider_route)
    total = sum(side.message_tokens)
    cached = 0
    if side.previous_message_tokens and price.read < 1.0:
        for (key, tokens), message in zip(side.previous_message_tokens, side.messages):
            if key != canonical_json(dict(message)):
                break
            cached += tokens
        if cached < price.min_tokens:
            cached = 0
    return round(cached * price.read + (total - cached), 3)


@dataclass(frozen=True)
class Totals:
    """A what-if's sums over every assembly it replayed."""

    assemblies: int = 0
    changed_assemblies: int = 0
    """Assemblies whose records or messages would change."""
    added: int = 0
    dropped: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    billed_before: float = 0.0
    billed_after: float = 0.0
    newly_fired: dict[str, int] = field(default_factory=dict)
    """Guarded rules newly firing, by family (``privacy``, ``visibility``, ``recovery``)."""

    @property
    def token_change(self) -> int:
        """Tokens added over all assemblies (negative: saved)."""
        return self.tokens_after - self.tokens_before

    @property
    def billed_change(self) -> float:
        """Billed input cost added, in input-price units (negative: saved)."""
        return round(self.billed_after - self.billed_before, 3)


def totals(diffs: Iterable[Any]) -> Totals:
    """Sum a what-if's per-assembly diffs (:class:`Diff`, or anything with its fields)."""
    diffs = list(diffs)
    fired: dict[str, int] = {}
    for diff in diffs:
        for rule in diff.newly_fired:
            fired[rule.family] = fired.get(rule.family, 0) + 1
    return Totals(
        assemblies=len(diffs),
        changed_assemblies=sum(bool(d.added or d.dropped or d.changed or d.messages) for d in diffs),
        added=sum(len(d.added) for d in diffs),
        dropped=sum(len(d.dropped) for d in diffs),
        tokens_before=sum(d.tokens_before for d in diffs),
        tokens_after=sum(d.tokens_after for d in diffs),
        billed_before=round(sum(d.billed_before for d in diffs), 3),
        billed_after=round(sum(d.billed_after for d in diffs), 3),
        newly_fired=dict(sorted(fired.items())),
    )


__all__ = [
    "Diff", "FiredRule", "MessageChange", "RecordChange", "Side", "Totals", "TraceRow", "Verdict", "billed",
    "citation_keys", "diff_assemblies", "epoch_state", "selected_reason", "final_decisions", "gate_inputs", "is_record_ref", "message_changes",
    "message_text", "refs_for", "rule_family", "shown_refs", "sorted_refs", "totals", "trace", "where_shown",
    "why_not",
]
