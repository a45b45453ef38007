"""Isolation of the inspector: every page that reads by id, with another account's ids and tokens.

The app (:func:`dossier.inspector.app.create_app`) runs in-process over the
stack's store and is called over ASGI, as a browser would call it:

- as ``me``'s viewer (with a token that may reveal secret-class raw bytes), each read path of :data:`dossier.inspector.app.READ_PATHS`
  with ``other``'s ids against fresh ids: the status and the page (ids blanked)
  must be the same, and never a 200;
- why-not on ``me``'s own run naming ``other``'s records;
- each page with ``other``'s account in a token this inspector did not sign,
  and with an expired token of ``other``'s, against a garbage token: the same
  401, which shows nothing.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

import httpx

from harness.harden.probe import AccountIds, Prober, _ids_of
from harness.harden.stack import Stack


def _uuid() -> str:
    return str(uuid.uuid4())


def _first(account: AccountIds, kind: str) -> str:
    found = _ids_of(account, kind)
    return str(found[0]) if found else _uuid()


def _paths(ids: dict[str, str], policy: str) -> list[tuple[str, str]]:
    """``(read path, url)`` for every page that reads by id, filled with ``ids``."""
    filled = [
        ("/conversations/{conversation_id}", f"/conversations/{ids['conversation']}"),
        ("/conversations/{conversation_id}?branch={branch_id}",
         f"/conversations/{ids['conversation']}?branch={ids['branch']}"),
        ("/runs/{model_run_id}", f"/runs/{ids['model_run']}"),
        # The audit pages take a stored assembly's id for its run: seed scenarios assemble without a run.
        ("/runs/{model_run_id}/why-not?record={record_ref}",
         f"/runs/{ids['assembly']}/why-not?record=artifact:{ids['artifact']}"),
        ("/runs/{model_run_id}/diff", f"/runs/{ids['assembly']}/diff"),
        ("/runs/{model_run_id}/diff?against={model_run_id}",
         f"/runs/{ids['assembly']}/diff?against={ids['assembly']}"),
        ("/records/memory/{memory_id}", f"/records/memory/{ids['memory']}"),
        ("/records/artifact/{artifact_id}", f"/records/artifact/{ids['artifact']}"),
        ("/records/artifact/{artifact_id}?reveal=1", f"/records/artifact/{ids['artifact']}?reveal=1"),
        ("/records/tool_call/{tool_call_id}", f"/records/tool_call/{ids['tool_call']}"),
        ("/records/message/{message_id}", f"/records/message/{ids['message']}"),
        ("/what-if?policy={policy}&conversation={conversation_id}",
         f"/what-if?policy={policy}&conversation={ids['conversation']}"),
    ]
    return filled


def _ids(account: AccountIds) -> dict[str, str]:
    branch = account.ids.get("branch") or [(_uuid(), _uuid())]
    return {"conversation": branch[0][0], "branch": branch[0][1], "model_run": _first(account, "model_run"),
            "artifact": _first(account, "artifact"), "memory": _first(account, "memory"),
            "tool_call": _first(account, "tool_call"), "message": _first(account, "message"),
            "assembly": _first(account, "assembly")}


async def inspector_paths(stack: Stack, prober: Prober, me: AccountIds, other: AccountIds) -> None:
    """Every inspector read path as ``me``'s viewer on ``other``'s ids, and with ``other``'s tokens."""
    from dossier.inspector.app import READ_PATHS, create_app
    from dossier.inspector.auth import issue_token

    secret = secrets.token_hex(32).encode()
    app = create_app(stack.deps, secret=secret, temporal_ui="http://127.0.0.1:8233")
    policy = stack.deps.policy.version
    theirs, mine = _ids(other), _ids(me)
    unknown = {kind: _uuid() for kind in theirs}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://inspector.harden") as http:

        def get(token: str) -> Any:
            async def run(url: str) -> tuple[int, str]:
                response = await http.get(url, headers={"Authorization": f"Bearer {token}"})
                return response.status_code, response.text
            return run

        # The strongest viewer: one whose token may reveal secret-class raw payloads.
        viewer = get(issue_token(secret, me.account, reveal=True))
        foreign_paths, unknown_paths = _paths(theirs, policy), _paths(unknown, policy)
        covered = {path for path, _ in foreign_paths}
        missing = set(READ_PATHS) - covered
        if missing:  # a page added without a probe is a gap, reported as a finding
            prober.attempts += 1
            prober.figures.finding("isolation", "inspector read paths without a probe", paths=sorted(missing))
        for (path, foreign_url), (_, unknown_url) in zip(foreign_paths, unknown_paths, strict=True):
            await prober.attempt(f"inspector {path}", foreign_url, unknown_url, viewer,
                                 leak_check=lambda result: result[0] == 200)
        # My own assembly, their records as the why-not subject.
        for kind in ("artifact", "memory", "tool_call", "message"):
            await prober.attempt(
                f"inspector why-not(own run, foreign {kind})",
                f"/runs/{mine['assembly']}/why-not?record={kind}:{theirs[kind]}",
                f"/runs/{mine['assembly']}/why-not?record={kind}:{unknown[kind]}", viewer,
                leak_check=lambda result, t=theirs[kind]: t in result[1])
        # Their account in tokens this inspector will not accept: the same 401 as a garbage token.
        forged = issue_token(secrets.token_hex(32).encode(), other.account, reveal=True)
        expired = issue_token(secret, other.account, ttl_seconds=-60, reveal=True)
        for label, token in (("token signed elsewhere", forged), ("expired token", expired)):
            for path, url in [("/", "/"), *_paths(theirs, policy)]:
                await prober.attempt(f"inspector {path} ({label})", token, f"v1.{_uuid()}.0.garbage",
                                     lambda t, u=url: get(t)(u), leak_check=lambda result: result[0] != 401)


__all__ = ["inspector_paths"]
