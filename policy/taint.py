"""The taint rule: what one model call was shown, and so how strict its output is.

A model's output may copy any part of its context, so it is as strict as the
strictest record the context showed (:func:`context_privacy`). The store
(`store.taint`) applies it to a run's tool calls and a subagent's report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from policy.enums import STRICTEST_PRIVACY, DecisionOutcome, PrivacyClass, strictest_privacy
from policy.records import PolicyDecisionRecord

SHOWN_OUTCOMES = frozenset({
    DecisionOutcome.INCLUDED, DecisionOutcome.REHYDRATED, DecisionOutcome.PROTECTED, DecisionOutcome.MARKED_STALE,
})
"""Decision outcomes under which a record's text (or a part of it) reached the model."""
WITHHELD_MODE = "(withheld)"
"""How the assembler's ``appended`` decision ends for an own result withheld on the route
(``own result as a native tool message (withheld)``): the call's arguments reached the model, its result did not."""


NOT_RENDERED_KINDS = frozenset({"restore"})
"""Decisions a caller adds that render nothing themselves (a checkpoint restore: the checkpoint is shown
only if admission kept it, and then it is among the selected refs)."""


@dataclass(frozen=True)
class ContextSources:
    """The graph records one model call's context was built from, as ``<type>:<id>`` refs."""

    shown: frozenset[str]
    """Records whose text reached the model: prefix items, rehydrated artifacts, appended events and results."""
    arguments_only: frozenset[str] = frozenset()
    """Tool calls appended natively whose result was withheld on the route: only their arguments were sent."""


def context_sources(
    selected_refs: Iterable[str],
    rehydrated_refs: Iterable[str],
    decisions: Iterable[PolicyDecisionRecord],
) -> ContextSources:
    """What an assembly (its record and its decisions) shows the model, by record.

    Args:
        selected_refs: the assembly record's ``selected_refs``.
        rehydrated_refs: its ``rehydrated_refs`` (``artifact:<id>#<slice>``).

    Returns:
        The refs whose text reached the model, and the appended tool calls of
        which only the arguments did.
    """
    shown = set(selected_refs)
    shown |= {ref.split("#", 1)[0] for ref in rehydrated_refs}
    withheld: set[str] = set()
    for decision in decisions:
        if decision.outcome not in SHOWN_OUTCOMES or decision.kind in NOT_RENDERED_KINDS:
            continue
        if decision.kind == "appended" and decision.subject_ref.startswith("tool_call:") \
                and decision.reason.endswith(WITHHELD_MODE):
            withheld.add(decision.subject_ref)
        else:
            shown.add(decision.subject_ref)
    shown = {ref for ref in shown if ref.split(":", 1)[0] in TAINT_REF_KINDS}
    return ContextSources(shown=frozenset(shown), arguments_only=frozenset(withheld - shown))


TAINT_REF_KINDS = frozenset({"memory", "tool_call", "artifact", "checkpoint", "skill", "user_memory", "message"})
"""Ref types that name a graph record with a privacy class (``epoch:``, ``route:``, ``note:`` ... name none)."""


def context_privacy(sources: ContextSources, classes: Mapping[str, PrivacyClass]) -> PrivacyClass:
    """The strictest class of everything a model call was shown: the class of what it emits.

    The taint rule. A model's output (its tool calls' arguments and so the
    files and results they produce, a subagent's report) may copy, paraphrase
    or encode any part of its context, and nothing shows which part it did;
    so it is at least as strict as the strictest record the context showed.
    A record the route withheld was never shown (only a tool call's
    arguments reach the model when its result is withheld), so it adds
    nothing; a context that showed no record adds nothing either.

    Args:
        sources: from :func:`context_sources`.
        classes: the privacy class of each ref (for a ``tool_call:`` ref shown
            with its result, the stricter of the call's and its artifact's;
            in ``arguments_only``, the call's); ``message:`` refs are user data.

    Returns:
        The strictest class; a ref missing from ``classes`` fails closed.
    """
    found = [classes.get(ref, PrivacyClass.USER if ref.startswith("message:") else STRICTEST_PRIVACY)
             for ref in sorted(sources.shown | sources.arguments_only)]
    return strictest_privacy(found) if found else PrivacyClass.PUBLIC
