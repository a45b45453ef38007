"""What the stages of the selection pass share: items, the decision ledger, the result.

Admission (:mod:`policy.admission`) and the transcript
(:mod:`policy.transcript`) turn candidates into :class:`Item` s; the budget
(:mod:`policy.budget`) keeps some of them; rehydration
(:mod:`policy.rehydration`) plans raw bytes for the kept ones. Every stage
writes what it decided, and why, into one :class:`Ledger`; the
:class:`Selection` carries the outcome to :func:`policy.render.render_context`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

from policy.enums import CLASS_PRIORITY, DecisionOutcome, OmissionReason, RecordClass
from policy.gates import Denial, Viewer
from policy.lines import ShortIds
from policy.plans import EventsPlan
from policy.policy import ContextPolicy
from policy.records import (
    CandidateSet,
    ChatMessage,
    EpochRecord,
    GenerationBoundary,
    ParticipantRecord,
    PolicyDecisionRecord,
    RehydrationItem,
)
from policy.tokens import TokenCounter


@dataclass(frozen=True)
class Item:
    """One admitted candidate competing for the budget."""

    ref: str
    """``<type>:<full id>`` of the graph record."""
    section: str
    """A key of :data:`policy.lines.SECTION_TITLES`, or ``"transcript"``."""
    record_class: RecordClass
    protected: bool
    tier: int
    """Sub-priority inside a class (0 first)."""
    seq: int
    text: str = ""
    message: ChatMessage | None = None

    def sort_key(self) -> tuple:
        """Keep order: protected first, then class priority, tier, newest, id."""
        return (not self.protected, CLASS_PRIORITY[self.record_class], self.tier, -self.seq, self.ref)


@dataclass
class Ledger:
    """Collects decisions and omission counts in the order they are taken."""

    policy_version: str
    decisions: list[PolicyDecisionRecord] = field(default_factory=list)
    omitted: Counter = field(default_factory=Counter)

    def decide(
        self,
        kind: str,
        ref: str,
        outcome: DecisionOutcome,
        reason: str,
        omission: OmissionReason | None = None,
    ) -> None:
        """Record one decision; an omission is also counted by its reason."""
        self.decisions.append(
            PolicyDecisionRecord(
                kind=kind,
                subject_ref=ref,
                outcome=outcome,
                reason=reason,
                omission=omission,
                policy_version=self.policy_version,
            )
        )
        if omission is not None:
            self.omitted[omission.value] += 1

    def deny(self, kind: str, ref: str, denial: Denial) -> None:
        """Record a gate's denial as an omission."""
        self.decide(kind, ref, DecisionOutcome.OMITTED, denial.detail, denial.reason)


@dataclass(frozen=True)
class SelectionContext:
    """What every stage of one selection pass reads, and the ledger they all write to.

    The assembler builds one per pass; a stage that must judge freshness at
    another time (a continued epoch's prefix, ``epoch_staleness="note"``) gets
    a copy with that boundary (:meth:`at`).
    """

    policy: ContextPolicy
    boundary: GenerationBoundary
    candidates: CandidateSet
    participant: ParticipantRecord
    viewer: Viewer
    short: ShortIds
    counter: TokenCounter
    ledger: Ledger

    @property
    def now(self) -> datetime:
        """The generation's logical time (freshness)."""
        return self.boundary.now

    def at(self, boundary: GenerationBoundary) -> SelectionContext:
        """The same pass judged at another boundary (same ledger)."""
        return SelectionContext(self.policy, boundary, self.candidates, self.participant, self.viewer, self.short,
                                self.counter, self.ledger)


@dataclass(frozen=True)
class Selection:
    """The outcome of the selection pass: what goes in, and what raw to fetch."""

    policy: ContextPolicy
    boundary: GenerationBoundary
    candidates: CandidateSet
    participant: ParticipantRecord
    items: tuple[Item, ...]
    """The prefix's kept items (runtime lines and transcript messages)."""
    rehydration: tuple[RehydrationItem, ...]
    """Raw bytes to read: the prefix's evidence, then the appended results shown whole."""
    raw_denials: tuple[str, ...]
    """Lines explaining raw evidence withheld (privacy), rendered for the model."""
    decisions: tuple[PolicyDecisionRecord, ...]
    omitted: dict[str, int]
    token_budget: int
    short_ids: ShortIds
    events: EventsPlan
    """The appended part: events after the epoch's boundary, as native messages."""
    epoch: EpochRecord
    """The epoch this call belongs to (render fills in the prefix's length and the breakpoints)."""
    prefix_tokens: int = 0
    """Estimated tokens of the prefix: the system prompt and the kept items (the budget's count)."""


class _Sequenced(Protocol):
    id: str
    seq: int


_R = TypeVar("_R", bound=_Sequenced)


def by_seq(records: Iterable[_R]) -> list[_R]:
    """Graph records oldest first; the id breaks ties, so input order never shows."""
    return sorted(records, key=lambda record: (record.seq, record.id))
