"""The demo's closing section: the audit trail of the session it just ran, and where to read more.

Four things, each what a command prints for this session:

* ``dossier explain`` of one model run, in its brief human form: the run that kept
  out the most telling record (see :data:`TELLING`; the newest such run);
* ``dossier why-not`` of that record: the rule, its inputs and the policy version;
* the inspector's login URL for the demo's account (``dossier inspector --url --account ID``);
* the Temporal UI search that lists the conversation's workflows (``DossierConversationId="..."``).

Everything shown passes through :func:`dossier.commands.audit.printable`, as the
commands' own output does: a tool result cannot send terminal control sequences.
"""

from __future__ import annotations

import contextlib
import io
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from dossier.audit import Explanation, OmittedRecord
from dossier.client import DossierClient
from dossier.commands.audit import _show_explanation, _show_why_not, printable
from dossier.services.inspector import running_url

RECORD_KINDS = ("memory", "artifact", "tool_call", "message")
"""Kinds of record ``why-not`` takes (a ref is ``<kind>:<id>``)."""

TELLING = ("not_visible", "not_promoted", "outside_lineage", "privacy_route", "raw_privacy", "superseded", "stale",
           "budget", "outside_window")
"""Omission reasons worth showing, best first: a rule that keeps one participant's, run's or branch's records from
another beats one that only tidies (a tool-call message covered by tool state, raw bytes nobody asked for)."""


@dataclass(frozen=True)
class AuditTrail:
    """What the section showed, for callers and tests."""

    model_run_id: str | None
    """The explained run (``None`` when the conversation has no stored assembly)."""
    record_id: str | None
    """The record asked about with why-not (``None`` when no run kept a record out)."""
    login_url: str
    search: str
    """The Temporal visibility query for the conversation's workflows."""
    search_url: str | None
    """The Temporal UI's workflow list filtered by :attr:`search`, when the UI's address is known."""


def conversation_search(conversation_id: str) -> str:
    """The visibility query (Temporal UI search box, ``temporal workflow list --query``) for a conversation."""
    return f'DossierConversationId="{conversation_id}"'


def login_url_for(client: DossierClient) -> str:
    """The inspector login URL for the client's account: what ``dossier inspector --url --account ID`` prints."""
    from dossier.inspector.auth import load_secret
    from dossier.inspector.serve import login_url

    settings = client.settings
    base = running_url(settings) or f"http://127.0.0.1:{settings.inspector_port}"
    return login_url(base, load_secret(settings.dossier_home), client.account_id)


def _rank(row: OmittedRecord) -> tuple[int, int]:
    """How telling an omission is (lower is better): by reason (:data:`TELLING`), then by kind (a memory first)."""
    kind, _, record_id = row.ref.partition(":")
    if kind not in RECORD_KINDS or not record_id:
        return (len(TELLING) + 1, 0)
    reason = TELLING.index(row.omission) if row.omission in TELLING else len(TELLING)
    return (reason, RECORD_KINDS.index(kind))


def _kept_out(explanation: Explanation) -> OmittedRecord | None:
    """The most telling record the run's policy kept out (a record why-not can name), if any."""
    ranked = sorted(explanation.omitted, key=_rank)
    return ranked[0] if ranked and _rank(ranked[0])[0] <= len(TELLING) else None


def _captured(show: Callable[..., None], *args: object, **kwargs: object) -> list[str]:
    """The lines a command's human renderer prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show(*args, **kwargs)
    return out.getvalue().splitlines()


async def audit_trail(client: DossierClient, conversation_id: str, say: Callable[[str], None]) -> AuditTrail:
    """Show the audit trail of one conversation the demo ran (see the module docstring).

    Args:
        client: the demo's client (its account reads the runs).
        conversation_id: the conversation to explain.
    """
    runs = [row for row in await client.runs.list(conversation_id) if row.context_assembly_id]
    explained: Explanation | None = None
    kept_out: OmittedRecord | None = None
    for row in sorted(runs, key=lambda run: run.started_at, reverse=True):  # newest first wins a tie
        explanation = await client.runs.explain(row.model_run_id)
        candidate = _kept_out(explanation)
        if explained is None or (candidate is not None and (kept_out is None or _rank(candidate) < _rank(kept_out))):
            explained, kept_out = explanation, candidate
    record_id = kept_out.ref.partition(":")[2] if kept_out else None
    if explained is not None and explained.model_run_id is not None:
        say(f"$ dossier explain {explained.model_run_id}   (brief; the command also prints the context as sent)")
        for line in _captured(_show_explanation, explained, brief=True):
            say(line)
        if record_id is not None:
            say("")
            say(f"$ dossier why-not {record_id} {explained.model_run_id}")
            for line in _captured(_show_why_not, await client.runs.why_not(record_id, explained.model_run_id)):
                say(line)
    else:
        say("(no model run of this conversation has a stored assembly to explain)")

    login = login_url_for(client)
    search = conversation_search(conversation_id)
    search_url = None
    if client.ui_base:
        search_url = (f"{client.ui_base}/namespaces/{client.settings.temporal_namespace}/workflows?"
                      f"{urllib.parse.urlencode({'query': search})}")
    say("")
    say(f"inspector, signed in as account {client.account_id} (`dossier inspector --url --account "
        f"{client.account_id}` prints it again):")
    say(printable(login))
    say(f"Temporal UI, this conversation's workflows: search {search}")
    if search_url:
        say(printable(search_url))
    return AuditTrail(explained.model_run_id if explained else None, record_id, login, search, search_url)


__all__ = ["RECORD_KINDS", "TELLING", "AuditTrail", "audit_trail", "conversation_search", "login_url_for"]
