"""The plan of an epoch's appended part: what each event after the boundary becomes.

Data only. :mod:`policy.native` builds these plans, :mod:`policy.selection`
carries them in a :class:`~policy.selection.Selection` and
:mod:`policy.render` renders them, so none of the three imports another for
its types.
"""

from __future__ import annotations

from dataclasses import dataclass

from policy.records import ChatMessage, RehydrationItem, ToolCallRecord


@dataclass(frozen=True)
class ResultPlan:
    """How one of the participant's own calls is answered in its tool message."""

    call: ToolCallRecord
    native_id: str
    mode: str
    """``raw``, ``view`` (a bounded view of a large text result, :mod:`policy.views`), ``same`` (identical to a
    result shown above), ``summary``, ``error``, ``stale``, ``pending``,
    ``removed`` (deleted by retention) or ``withheld``."""
    text: str
    """The tool message's text (for ``raw``: the fallback if the bytes cannot be read)."""
    artifact_id: str | None
    max_bytes: int
    tokens: int
    """Estimated tokens of the tool message."""
    supersedes: tuple[str, ...] = ()
    """Prefix memories this result's memory supersedes."""
    same_as: str | None = None
    """For ``same``: the call whose tool message above shows the identical bytes."""
    cite: str = ""
    """For ``view``: the artifact's citation, which the view names for recall."""


@dataclass(frozen=True)
class Event:
    """One appended message, with its tool results when it is the participant's own tool step."""

    message: ChatMessage
    results: tuple[ResultPlan, ...] = ()
    ref: str = ""
    """``message:<id>`` of the transcript message (``stale:<memory id>`` for a staleness note)."""
    notes: tuple[str, ...] = ()
    """Runtime notes after the results (a result that supersedes one shown earlier)."""
    seq: int = 0
    """Where the event happened (a staleness note: the snapshot of the call that first noted it)."""


@dataclass(frozen=True)
class EventsPlan:
    """The appended part of the context, planned."""

    events: tuple[Event, ...]
    rehydration: tuple[RehydrationItem, ...]
    tokens: int
    pending: tuple[str, ...]
    """Tool calls answered by a placeholder."""
    superseding: tuple[ResultPlan, ...]
    """Results that supersede a prefix memory."""
    stale: tuple[str, ...] = ()
    """Tool calls whose result is shown by its stale marker."""


__all__ = ["Event", "EventsPlan", "ResultPlan"]
