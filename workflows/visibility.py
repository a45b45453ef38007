"""How a Dossier run looks in the Temporal UI without a payload: search attributes and summaries.

Workflows carry ids only, so the UI would otherwise show a turn as a list of
ids. Every Dossier workflow gets four Keyword search attributes (the ids and
the runtime kind's enum value, never text) so an operator can find runs with
a visibility query such as ``DossierConversationId="..."``, and a one-line
static summary; every activity a workflow schedules gets a one-line summary
too. A summary holds kinds, counts, ids and the inspector link, never user
text or a tool payload: everything in it is built here from ids, enum values
and integers.

The inspector's base URL reaches a workflow in its memo (``inspector_url``,
set by the client at start); a parent passes its memo on to its children.

Children are tagged only when their parent is: a run started without search
attributes (by a harness, or a server where they are not registered) starts
its children untagged, since the server would refuse a start that names an
attribute it does not know.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

with workflow.unsafe.imports_passed_through():
    from contracts import CONVERSATION_SEARCH_ATTRIBUTE, RuntimeKind, Scope

CONVERSATION_ID = SearchAttributeKey.for_keyword(CONVERSATION_SEARCH_ATTRIBUTE)
"""The conversation a run belongs to."""
BRANCH_ID = SearchAttributeKey.for_keyword("DossierBranchId")
"""The branch a run answers on."""
PARTICIPANT_ID = SearchAttributeKey.for_keyword("DossierParticipantId")
"""The participant whose turn it is (unset on a run of several participants: each child has its own)."""
RUNTIME_KIND = SearchAttributeKey.for_keyword("DossierRuntimeKind")
"""The runtime kind's enum value (``chat``, ``multi_model``, ``subagent_child``...)."""

SEARCH_ATTRIBUTES: tuple[SearchAttributeKey[str], ...] = (CONVERSATION_ID, BRANCH_ID, PARTICIPANT_ID, RUNTIME_KIND)
"""Every custom search attribute Dossier sets; all are ``Keyword`` (exact match, low cardinality per run)."""

INSPECTOR_MEMO = "inspector_url"
"""The memo key under which a workflow finds the inspector's base URL."""

SUMMARY_MAX_CHARS = 400
"""Longest summary written: the UI shows one line, and a summary is no place for detail."""


def search_attributes(scope: Scope, runtime_kind: RuntimeKind | None, participant_id: str | None = None
                      ) -> TypedSearchAttributes:
    """The search attributes of a run in ``scope``.

    Args:
        scope: the run's account, conversation and branch (the account id is never a search attribute).
        runtime_kind: the run's runtime kind (``None`` for a subagent batch, which is no model turn itself).
        participant_id: the participant whose turn it is, if there is one.

    Returns:
        The typed search attributes to start the run with.
    """
    pairs = [
        SearchAttributePair(CONVERSATION_ID, scope.conversation_id),
        SearchAttributePair(BRANCH_ID, scope.branch_id),
    ]
    if runtime_kind is not None:
        pairs.append(SearchAttributePair(RUNTIME_KIND, runtime_kind.value))
    if participant_id is not None:
        pairs.append(SearchAttributePair(PARTICIPANT_ID, participant_id))
    return TypedSearchAttributes(pairs)


def inspector_link(base: str | None, path: str) -> str | None:
    """``base`` + ``path`` (``/runs/<id>``, ``/conversations/<id>``), or ``None`` without an inspector."""
    return f"{base.rstrip('/')}{path}" if base else None


def summary(*parts: object) -> str:
    """One summary line from ids, enum values, counts and links (``None`` parts are left out)."""
    text = " · ".join(str(part) for part in parts if part is not None)
    return text[:SUMMARY_MAX_CHARS]


def workflow_summary(what: str, scope: Scope, runtime_kind: RuntimeKind | None, inspector_url: str | None,
                     *counts: str) -> str:
    """A workflow's static summary: what it is, its kind, its counts and the conversation's inspector page.

    Args:
        what: the workflow's kind in words (``agent turn``, ``subagent batch``).
        inspector_url: the inspector's base URL, if there is one.
        *counts: counts such as ``"3 participants"``.
    """
    return summary(what, runtime_kind.value if runtime_kind else None, *counts,
                   inspector_link(inspector_url, f"/conversations/{scope.conversation_id}"))


# ---------------------------------------------------------------- inside a workflow


def memo_inspector_url() -> str | None:
    """The inspector base URL the current workflow was started with (``None`` when none was given)."""
    value = workflow.memo_value(INSPECTOR_MEMO, None)
    return value if isinstance(value, str) else None


def _tagged() -> bool:
    """Whether the current workflow was started with Dossier's search attributes."""
    return workflow.info().typed_search_attributes.get(CONVERSATION_ID) is not None


def child_options(scope: Scope, runtime_kind: RuntimeKind | None, participant_id: str | None, what: str,
                  *counts: str) -> dict[str, Any]:
    """Keyword arguments for ``execute_child_workflow``: the child's search attributes, summary and memo.

    Empty when the parent itself is untagged (see the module docstring).
    """
    if not _tagged():
        return {}
    inspector = memo_inspector_url()
    options: dict[str, Any] = {
        "search_attributes": search_attributes(scope, runtime_kind, participant_id),
        "static_summary": workflow_summary(what, scope, runtime_kind, inspector, *counts),
    }
    if inspector is not None:
        options["memo"] = {INSPECTOR_MEMO: inspector}
    return options


def run_link(model_run_id: str) -> str | None:
    """The inspector page of a model run, for an activity summary (``None`` without an inspector)."""
    return inspector_link(memo_inspector_url(), f"/runs/{model_run_id}")


__all__ = [
    "BRANCH_ID",
    "CONVERSATION_ID",
    "INSPECTOR_MEMO",
    "PARTICIPANT_ID",
    "RUNTIME_KIND",
    "SEARCH_ATTRIBUTES",
    "child_options",
    "inspector_link",
    "memo_inspector_url",
    "run_link",
    "search_attributes",
    "summary",
    "workflow_summary",
]
