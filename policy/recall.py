"""Recall: a model asks for the exact raw evidence behind an id it was shown.

The ``recall`` tool (``activities/tools/runtime.py``) lets a model name a tool
memory, an artifact or the tool call that produced it (``m:3f2a91c0``,
``a:3f2a91c0``, ``t:3f2a91c0``, ``call_<id>`` as native transcripts show it, or a full id),
or a transcript message the summary of earlier messages lists (``msg:3f2a91c0``), and
optionally a locator: CSV data rows, text lines or an RFC 6901 JSON pointer (a message
takes ``whole`` or ``lines``).
This module decides, without I/O, whether those bytes may be served, through
the same gates rehydration uses (:mod:`policy.rehydration`, :mod:`policy.gates`):

1. **Resolution**: the id must name one memory, artifact or message of the viewer's
   candidate set. An id that names nothing, names several records, or names a
   record the viewer may not see (another branch, another participant's private
   record, a record whose privacy class the route may not receive at all) gets
   the *same* answer, :data:`NOT_FOUND_ANSWER`, so recall never tells a model
   that a record it cannot see exists.
2. **Raw route**: the artifact's class must be one the route may receive raw (a
   message passes the gates a transcript message passes: it is shown verbatim when
   it is in the window).
3. **Byte budget**: at most ``policy.rehydration_item_bytes`` per recall and
   ``policy.rehydration_total_bytes`` per model run (what earlier recalls of the
   run served counts). Over budget is denied, never truncated: the model can
   ask again for a narrower slice.

:func:`plan_recall` takes steps 1, 2 and the budget known before reading
(a whole artifact's size is recorded); :func:`settle_recall` checks the sliced
text's size once the caller has read and sliced the bytes. Each returns a
:class:`RecallDecision` carrying the :class:`~policy.records.PolicyDecisionRecord`
the caller stores with the evidence request.

Exceptions::

    PolicyError
    └── RecallLocatorError   a locator that is malformed, or does not fit the payload
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy.enums import DecisionOutcome, OmissionReason
from policy.errors import PolicyError
from policy.gates import Viewer, admit
from policy.policy import ContextPolicy
from policy.records import (
    ArtifactRecord,
    CandidateSet,
    Locator,
    MessageRecord,
    PolicyDecisionRecord,
    Record,
    ToolMemoryRecord,
    bounded_key,
)
from policy.rehydration import RAW_HASH_MISMATCH_TEXT, RAW_MISSING_TEXT, describe

NOT_FOUND_ANSWER = "no memory, artifact or message with that id is visible to you"
"""The one answer for an id that is unknown, ambiguous or not visible: it leaks nothing about existence."""

LOCATOR_KINDS = ("whole", "rows", "lines", "json_pointer")
"""The locator kinds a recall may ask for (:class:`policy.records.Locator`)."""

_ID_PREFIXES = (("msg:", "msg"), ("m:", "m"), ("a:", "a"), ("t:", "t"), ("call_", "t"))
MESSAGE_LOCATOR_KINDS = ("whole", "lines")
"""The locator kinds a message recall may ask for: a message is text."""
_MIN_PREFIX = 8


class RecallLocatorError(PolicyError):
    """A locator that is malformed (a missing bound, ``end`` before ``start``, a pointer without ``/``)
    or that does not fit the payload it addresses."""


class RecallDecision(Record):
    """What the policy decided about one recall."""

    allowed: bool
    """Whether the bytes may be served."""
    artifact_id: str | None = None
    """The artifact the id resolved to (``None`` when it resolved to nothing visible, or to a message)."""
    message_id: str | None = None
    """The transcript message the id resolved to, when it named one the viewer may see."""
    locator: Locator | None = None
    """The slice to serve (``None``: the whole record). A message's locator carries the message id."""
    max_bytes: int = 0
    """The most bytes this recall may serve."""
    answer: str = ""
    """For a denial: what the model is told (never more than the decision's subject may reveal)."""
    decision: PolicyDecisionRecord
    """The decision, as stored with the evidence request."""


def parse_locator(artifact_id: str, raw: Mapping[str, Any] | None) -> Locator | None:
    """The :class:`Locator` a recall's ``locator`` argument asks for.

    Args:
        artifact_id: the artifact the locator addresses.
        raw: ``{"kind": "rows"|"lines", "start": 1, "end": 3}``, ``{"kind": "json_pointer",
            "pointer": "/a/0"}``, ``{"kind": "whole"}`` or ``None``.

    Returns:
        The locator; ``None`` for the whole artifact.

    Raises:
        RecallLocatorError: an unknown kind, a missing or inverted range, a pointer that is not RFC 6901.
    """
    if raw is None:
        return None
    kind = raw.get("kind", "whole")
    if kind not in LOCATOR_KINDS:
        raise RecallLocatorError(f"unknown locator kind {kind!r}; use one of {', '.join(LOCATOR_KINDS)}")
    if kind == "whole":
        return None
    if kind == "json_pointer":
        pointer = raw.get("pointer")
        if not isinstance(pointer, str) or (pointer and not pointer.startswith("/")):
            raise RecallLocatorError(f"a json_pointer locator needs 'pointer' as in RFC 6901 ('' or '/a/0'), "
                                     f"got {pointer!r}")
        return Locator(artifact_id=artifact_id, kind="json_pointer", pointer=pointer)
    start, end = raw.get("start"), raw.get("end")
    for name, value in (("start", start), ("end", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise RecallLocatorError(f"a {kind} locator needs integer 'start' and 'end' (1-based, inclusive), "
                                     f"got {name}={value!r}")
    if start < 1 or end < start:
        raise RecallLocatorError(f"{kind} {start}-{end} is not a range: 1 <= start <= end")
    return Locator(artifact_id=artifact_id, kind=kind, start=start, end=end)


Resolved = ToolMemoryRecord | ArtifactRecord | MessageRecord
"""What a recall id can name."""


def resolve(ref: str, candidates: CandidateSet) -> Resolved | None:
    """The one memory, artifact or message of ``candidates`` that ``ref`` names, or ``None``.

    ``ref`` is an id as contexts render it: a memory (``m:<prefix>``), an artifact
    (``a:<prefix>``), a tool call (``t:<prefix>``, or ``call_<id>`` as a native
    transcript names it; the call's result artifact is meant), a transcript message
    (``msg:<prefix>``), optionally in brackets, or a full id of any of them (a message
    only by its full id or its ``msg:`` prefix). A prefix has at least 8 characters of the
    id without dashes; a prefix two records share resolves to ``None``.
    """
    text = ref.strip().strip("[]").strip()
    kinds: tuple[str, ...] = ("m", "a", "t")
    prefixed = False
    for prefix, kind in _ID_PREFIXES:
        if text.startswith(prefix):
            kinds, text, prefixed = (kind,), text[len(prefix):], True
            break
    # (record, the id it is named by): a tool call names its result artifact.
    pool: list[tuple[Resolved, str]] = []
    if "msg" in kinds:
        pool += [(message, message.id) for message in candidates.messages]
    if "m" in kinds:
        pool += [(memory, memory.id) for memory in candidates.tool_memories]
    if "a" in kinds:
        pool += [(artifact, artifact.id) for artifact in candidates.artifacts]
    if "t" in kinds:
        pool += [(artifact, artifact.tool_call_id) for artifact in candidates.artifacts]
    exact = {record.id: record for record, name in pool if name == text}
    if not exact and not prefixed:  # a bare full id may name a message too
        exact = {message.id: message for message in candidates.messages if message.id == text}
    if len(exact) == 1:
        return next(iter(exact.values()))
    plain = text.replace("-", "").lower()
    if len(plain) < _MIN_PREFIX:
        return None
    found = {record.id: record for record, name in pool if name.replace("-", "").lower().startswith(plain)}
    return next(iter(found.values())) if len(found) == 1 else None


def plan_recall(
    policy: ContextPolicy,
    viewer: Viewer,
    candidates: CandidateSet,
    ref: str,
    locator: Mapping[str, Any] | None,
    spent_bytes: int,
) -> RecallDecision:
    """Decide a recall before any byte is read: resolution, scope, privacy, raw route, known size.

    Args:
        policy: the byte budgets and the version the decision records.
        viewer: the calling participant, its lineage and its route (as the assembly resolves it).
        candidates: the graph slice the participant's contexts are drawn from.
        ref: the id as the model wrote it.
        locator: the recall's ``locator`` argument.
        spent_bytes: bytes earlier recalls of the same model run served.

    Returns:
        The decision: allowed with the artifact, locator and byte cap, or denied with the answer.

    Raises:
        RecallLocatorError: a malformed locator (only checked for an id that resolved and is visible).
    """
    subject = bounded_key(f"recall:{ref}")  # the model wrote the ref: any length
    record = resolve(ref, candidates)
    if record is None:
        return _denied(policy, subject, "no memory, artifact or message of the candidate set has this id",
                       OmissionReason.NOT_VISIBLE)
    if isinstance(record, MessageRecord):
        return _plan_message(policy, viewer, record, locator, spent_bytes)
    artifacts = {artifact.id: artifact for artifact in candidates.artifacts}
    if isinstance(record, ToolMemoryRecord):
        denial = admit(record, record.privacy, viewer)
        if denial:
            return _denied(policy, f"memory:{record.id}", denial.detail, denial.reason)
        sources = [artifacts[a] for a in record.source_artifact_ids if a in artifacts
                   and admit(artifacts[a], artifacts[a].privacy, viewer) is None]
        if len(sources) != 1:
            return _denied(policy, f"memory:{record.id}", f"memory cites {len(sources)} visible artifacts",
                           OmissionReason.RAW_NOT_REQUESTED,
                           answer=_several_sources(sources))
        artifact = sources[0]
    else:
        artifact = record
    ref_ = f"artifact:{artifact.id}"
    denial = admit(artifact, artifact.privacy, viewer)
    if denial:
        # Out of scope, or a class the route may not even see compactly: indistinguishable from unknown.
        return _denied(policy, ref_, denial.detail, denial.reason)
    if artifact.privacy not in viewer.route.raw_allowed:
        return _denied(policy, ref_, f"raw {artifact.privacy.value} payloads not allowed on route {viewer.route.name}",
                       OmissionReason.RAW_PRIVACY, artifact_id=artifact.id,
                       answer=(f"the raw bytes of this record may not be sent on your route "
                               f"({artifact.privacy.value} data); use its summary instead"))
    parsed = parse_locator(artifact.id, locator)
    cap = _cap(policy, spent_bytes)
    if cap <= 0:
        return _spent(policy, ref_, spent_bytes, parsed, artifact_id=artifact.id)
    if parsed is None and artifact.result_bytes > cap:
        return _over_budget(policy, ref_, None, artifact.result_bytes, cap, artifact_id=artifact.id)
    return RecallDecision(
        allowed=True, artifact_id=artifact.id, locator=parsed, max_bytes=cap,
        decision=_decision(policy, ref_, DecisionOutcome.REHYDRATED,
                           f"recall of exact evidence ({describe(parsed)}), up to {cap} bytes"),
    )


def _plan_message(policy: ContextPolicy, viewer: Viewer, message: MessageRecord,
                  locator: Mapping[str, Any] | None, spent_bytes: int) -> RecallDecision:
    """A message recall: the transcript's gates, ``whole`` or ``lines``, and the same byte budget."""
    subject = f"message:{message.id}"
    denial = admit(message, message.privacy, viewer)
    if denial:  # another branch, another participant's private message, a class the route may not see
        return _denied(policy, subject, denial.detail, denial.reason)
    if locator is not None and locator.get("kind", "whole") not in MESSAGE_LOCATOR_KINDS:
        raise RecallLocatorError(f"a message is text: use a locator of kind {' or '.join(MESSAGE_LOCATOR_KINDS)}, "
                                 f"not {locator.get('kind')!r}")
    parsed = parse_locator(message.id, locator)
    cap = _cap(policy, spent_bytes)
    if cap <= 0:
        return _spent(policy, subject, spent_bytes, parsed)
    size = len(message.content.encode("utf-8"))
    if parsed is None and size > cap:
        return _over_budget(policy, subject, None, size, cap)
    return RecallDecision(
        allowed=True, message_id=message.id, locator=parsed, max_bytes=cap,
        decision=_decision(policy, subject, DecisionOutcome.REHYDRATED,
                           f"recall of a transcript message ({describe(parsed)}), up to {cap} bytes"),
    )


def settle_recall(policy: ContextPolicy, planned: RecallDecision, served: str) -> RecallDecision:
    """The final decision once the planned slice is read: denied when it is over the planned byte cap.

    Args:
        policy: the version the decision records.
        planned: an allowed decision of :func:`plan_recall`.
        served: the sliced text that would be served.

    Returns:
        ``planned`` with the served size in its reason, or a budget denial.

    Raises:
        ValueError: ``planned`` was a denial (a caller bug: nothing is read for a denied recall).
    """
    if not planned.allowed or (planned.artifact_id is None and planned.message_id is None):
        raise ValueError("only an allowed recall is settled")
    size = len(served.encode("utf-8"))
    if size > planned.max_bytes:
        return _over_budget(policy, _subject(planned), planned.locator, size, planned.max_bytes,
                            artifact_id=planned.artifact_id)
    reason = f"recall of exact evidence ({describe(planned.locator)}): {size} of at most {planned.max_bytes} bytes"
    return planned.model_copy(update={"decision": planned.decision.model_copy(update={"reason": reason})})


def refuse_locator(policy: ContextPolicy, planned: RecallDecision, error: str) -> RecallDecision:
    """The decision for an allowed recall whose locator does not fit the payload (rows past the end ...)."""
    return _denied(policy, _subject(planned), f"locator does not fit: {error}", None,
                   artifact_id=planned.artifact_id, locator=planned.locator, answer=error)


def unavailable_evidence(policy: ContextPolicy, planned: RecallDecision, hash_mismatch: bool) -> RecallDecision:
    """The decision for an allowed recall whose stored bytes could not be read (missing, or failing their hash)."""
    why = RAW_HASH_MISMATCH_TEXT if hash_mismatch else RAW_MISSING_TEXT
    omission = OmissionReason.RAW_HASH_MISMATCH if hash_mismatch else OmissionReason.RAW_MISSING
    return _denied(policy, f"artifact:{planned.artifact_id}", f"raw evidence unavailable: {why}", omission,
                   artifact_id=planned.artifact_id, locator=planned.locator,
                   answer=f"the raw evidence is unavailable ({why}); use its summary")


def bad_locator(policy: ContextPolicy, ref: str, error: str) -> RecallDecision:
    """The decision for a recall whose locator is malformed (recorded, then raised to the model as an error)."""
    return _denied(policy, f"recall:{ref}", f"malformed locator: {error}", None, answer=error)


def _cap(policy: ContextPolicy, spent_bytes: int) -> int:
    """The most bytes one recall may serve, after what earlier recalls of the model run served."""
    return min(policy.rehydration_item_bytes, policy.rehydration_total_bytes - spent_bytes)


def _subject(planned: RecallDecision) -> str:
    """The decision subject of an allowed recall: the message or the artifact it serves."""
    return f"message:{planned.message_id}" if planned.message_id is not None else f"artifact:{planned.artifact_id}"


def _spent(policy: ContextPolicy, subject: str, spent_bytes: int, locator: Locator | None, *,
           artifact_id: str | None = None) -> RecallDecision:
    return _denied(policy, subject, f"recall byte budget of the run spent ({spent_bytes} bytes served)",
                   OmissionReason.RAW_BYTE_BUDGET, artifact_id=artifact_id, locator=locator,
                   answer="the raw evidence budget of this model call is spent; answer with what you have")


def _over_budget(policy: ContextPolicy, subject: str, locator: Locator | None, size: int, cap: int, *,
                 artifact_id: str | None = None) -> RecallDecision:
    kinds = "rows, lines or json_pointer" if subject.startswith("artifact:") else "lines"
    return _denied(policy, subject, f"{describe(locator)} is {size} bytes, over the {cap}-byte cap",
                   OmissionReason.RAW_BYTE_BUDGET, artifact_id=artifact_id, locator=locator,
                   answer=(f"the evidence asked for is {size} bytes, over the {cap} bytes you may receive; "
                           f"ask for a narrower slice with a locator ({kinds})"))


def _several_sources(sources: list[ArtifactRecord]) -> str:
    if not sources:
        return NOT_FOUND_ANSWER
    return ("this memory cites several artifacts; recall one of them by id: "
            + ", ".join(f"a:{s.id.replace('-', '')[:_MIN_PREFIX]}" for s in sorted(sources, key=lambda s: s.id)))


def _denied(policy: ContextPolicy, subject: str, reason: str, omission: OmissionReason | None, *,
            artifact_id: str | None = None, locator: Locator | None = None,
            answer: str = NOT_FOUND_ANSWER) -> RecallDecision:
    return RecallDecision(allowed=False, artifact_id=artifact_id, locator=locator, answer=answer,
                          decision=_decision(policy, subject, DecisionOutcome.DENIED, reason, omission))


def _decision(policy: ContextPolicy, subject: str, outcome: DecisionOutcome, reason: str,
              omission: OmissionReason | None = None) -> PolicyDecisionRecord:
    return PolicyDecisionRecord(kind="recall", subject_ref=subject, outcome=outcome, reason=reason,
                                omission=omission, policy_version=policy.version_tag)


__all__ = [
    "LOCATOR_KINDS",
    "MESSAGE_LOCATOR_KINDS",
    "NOT_FOUND_ANSWER",
    "RecallDecision",
    "RecallLocatorError",
    "Resolved",
    "bad_locator",
    "parse_locator",
    "plan_recall",
    "refuse_locator",
    "resolve",
    "settle_recall",
    "unavailable_evidence",
]
