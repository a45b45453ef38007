"""Retention that really forgets: a canary in every text field of a call, searched for everywhere afterwards.

For each removing rule (``redact``, ``hash_only``, ``delete``) the part writes, through the live I/O steps,
a call that succeeded and a call that failed after retries, each field carrying its own canary: the
arguments, the raw result, each retry's error, the final error. It assembles a context (the first reads,
a stored assembly), applies the rules (:func:`store.retention.collect_batch`, what the retention
activity runs), and then searches, rather than lists, every place text can be:

* every column of every account table (:func:`store.text_sites.text_sites`, derived from the models);
* every object under the account's prefix in the bucket;
* a context assembled afterwards, and ``explain``'s JSON of it;
* every inspector page of the conversation, as a viewer whose token may reveal secret payloads;
* the worker's kept first-read texts (:attr:`activities.deps.GraphDeps.rendered`), the runtime metrics'
  exposition, and every log record written while the part ran.

A **survivor** is a canary found in a place the docs do not name for its rule
(:data:`policy.retention.RULE_KEEPS`: under ``redact`` and ``delete`` a succeeded result's compact text
in its memory and in the contexts and pages that show it). The agent's trace rule matches the result's, so
the assembly stored before the collection loses what it sent too; without one it would keep it (documented). Figures: ``retention_sites`` (places searched, per canary) and
``retention_survivors``.
"""

from __future__ import annotations

import json
import logging
import secrets
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from prometheus_client import generate_latest

from activities.context import assemble_context
from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result, record_attempt_failure
from harness.harden.report import Figures
from harness.harden.stack import Stack
from policy.enums import RuntimeKind, ToolCallStatus
from policy.records import GenerationBoundary
from policy.retention import RecordKind, RetentionSpec
from policy.tools import ToolSpec
from store import conversations
from store.models import ToolArtifact, ToolCall, ToolMemory
from store.retention import collect_batch
from store.text_sites import searched_columns, text_sites
from store.writes import NewToolCall

PART = "retention"
RULES = ("redact", "hash_only", "delete")
FIELDS = ("argument", "result", "retry_error", "final_error")
"""Where a canary is planted: the call's arguments, its raw result (succeeded call), each retry's error and
the final error (failed call: its error is its result)."""
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

#: Where a succeeded result's compact text may stay under ``redact`` and ``delete`` (RULE_KEEPS).
COMPACT_TEXT = {("tool_memories", "summary"), ("tool_memories", "payload")}


class _Logs(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is kept as its raw message
            self.lines.append(str(record.msg))


def _spec(rule: str) -> ToolSpec:
    return ToolSpec(name=f"harden.keep_{rule}", result_kind="json", retention=RetentionSpec.model_validate(
        {"artifacts": {"kind": rule, "after_days": 1}}))


async def _collect(deps: Any, now: datetime) -> None:
    """Every due row of every kind, as the retention workflow's batches would."""
    for kind in (RecordKind.ARTIFACT, RecordKind.MEMORY, RecordKind.TRACE):
        after: str | None = None
        while True:
            batch = await collect_batch(deps.sessions, deps.artifacts, kind, now, after_id=after, limit=200)
            after = batch.last_id
            if batch.done:
                break


async def _plant(deps: Any, rule: str, canaries: dict[str, str]) -> dict[str, str]:
    """One account with a succeeded and a failed call carrying the canaries; returns its ids."""
    spec = _spec(rule)
    async with deps.sessions() as session, session.begin():
        account = await conversations.create_account(session, name=f"harden retention {rule}")
        conversation = await conversations.create_conversation(session, account, title="retention canaries")
        # The agent's trace rule drops stored assemblies with the results (else they keep what they sent).
        assistant = await conversations.add_participant(
            session, account, conversation.id, name="Assistant", provider="scripted", model="m",
            config={"agent": "harden", "retention": {"traces": {"kind": "redact", "after_days": 1}}})
    ids = {"account": account, "conversation": conversation.id, "branch": conversation.root_branch_id,
           "participant": assistant.id}

    def call(arguments: dict[str, Any]) -> NewToolCall:
        return NewToolCall(branch_id=ids["branch"], participant_id=assistant.id, call_id=f"call_{uuid.uuid4().hex}",
                           name=spec.name, arguments=arguments, runtime_kind=RuntimeKind.CHAT, at=T0)

    ok = await begin_tool_call(deps, account, conversation.id, call({"patient": canaries["argument"] + "-ok"}))
    await ingest_tool_result(deps, account, ok.id, ToolOutcome(
        status=ToolCallStatus.SUCCEEDED, content_type="application/json",
        result=json.dumps({"plan": canaries["result"], "note": "a result"}).encode()), captured_at=T0)
    failed = await begin_tool_call(deps, account, conversation.id, call({"patient": canaries["argument"] + "-bad"}))
    for attempt, final in ((1, False), (2, False), (3, True)):
        error = canaries["final_error" if final else "retry_error"]
        await record_attempt_failure(deps, account, failed.id, attempt=attempt, final=final, at=T0,
                                     error=f"PermissionError: no access for {error} (attempt {attempt})")
    await ingest_tool_result(deps, account, failed.id, ToolOutcome(
        status=ToolCallStatus.FAILED, content_type="text/plain", attempts=3,
        result=f"Traceback (most recent call last):\nPermissionError: no access for {canaries['final_error']}"
        .encode()), captured_at=T0)
    ids.update(ok=ok.id, failed=failed.id)
    return ids


def _boundary(ids: dict[str, str]) -> GenerationBoundary:
    return GenerationBoundary(account_id=ids["account"], conversation_id=ids["conversation"],
                              branch_id=ids["branch"], participant_id=ids["participant"],
                              runtime_kind=RuntimeKind.CHAT, provider_route="local", now=T0)


async def _pages(deps: Any, ids: dict[str, str], assemblies: list[str]) -> dict[str, str]:
    """Every inspector page of the conversation, as the strongest viewer (its token may reveal)."""
    from dossier.inspector.app import create_app
    from dossier.inspector.auth import issue_token

    secret = secrets.token_hex(32).encode()
    app = create_app(deps, secret=secret, temporal_ui="http://127.0.0.1:8233")
    token = issue_token(secret, ids["account"], reveal=True)
    urls = [f"/conversations/{ids['conversation']}", f"/conversations/{ids['conversation']}?branch={ids['branch']}"]
    async with deps.sessions() as session:
        for model, kind in ((ToolCall, "tool_call"), (ToolArtifact, "artifact"), (ToolMemory, "memory")):
            rows = await session.scalars(model.__table__.select().with_only_columns(model.id).where(
                model.account_id == ids["account"]))
            for row_id in rows:
                urls.append(f"/records/{kind}/{row_id}")
                if kind == "artifact":
                    urls.append(f"/records/artifact/{row_id}?reveal=1")
    for assembly in assemblies:
        urls += [f"/runs/{assembly}", f"/runs/{assembly}/diff"]
    pages: dict[str, str] = {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://inspector.harden") as http:
        for url in urls:
            response = await http.get(url, headers={"Authorization": f"Bearer {token}"})
            pages[url] = f"{response.status_code} {response.text}"
    return pages


async def run_rule(stack: Stack, rule: str, logs: _Logs) -> tuple[int, list[dict[str, Any]]]:
    """Plant, collect and search for one rule; returns ``(sites searched, survivors)``."""
    from dossier.audit import explain

    deps = replace(stack.deps, catalog=stack.deps.catalog.model_copy(
        update={"tools": (*stack.deps.catalog.tools, _spec(rule))}))
    canaries = {place: f"CNRY{rule.replace('_', '')}{place.replace('_', '')}{uuid.uuid4().hex[:10]}"
                for place in FIELDS}
    ids = await _plant(deps, rule, canaries)
    before = await assemble_context(deps, _boundary(ids))  # first reads and a stored assembly, before
    await _collect(deps, datetime.now(UTC) + timedelta(days=2))  # rows are written at the real time
    from activities.retention import forget_rendered  # what the worker's retention activity does after a batch
    forget_rendered(deps)
    after = await assemble_context(deps, _boundary(ids))
    explained = (await explain(deps, ids["account"], after.assembly_id)).model_dump_json()
    pages = await _pages(deps, ids, [before.assembly_id, after.assembly_id])
    objects = []
    for key in await deps.artifacts.list_keys(ids["account"]):
        try:
            objects.append((key, (await deps.artifacts.get(ids["account"], key, key.rsplit("/", 1)[-1])).decode(
                "utf-8", "replace")))
        except Exception as error:  # noqa: BLE001 - an object that cannot be read is reported, not searched
            objects.append((key, f"unreadable: {type(error).__name__}"))
    surfaces: dict[str, str] = {
        "assembly after retention": json.dumps([m.to_openai() for m in after.result.messages]),
        "explain": explained,
        "first-read cache": json.dumps(list(deps.rendered.values())),
        "metrics": generate_latest(deps.metrics.registry).decode(),
        "logs": "\n".join(logs.lines),
        **{f"inspector {url}": page for url, page in pages.items()},
        **{f"object {key}": body for key, body in objects},
    }
    searched = 0
    survivors: list[dict[str, Any]] = []
    for place, canary in canaries.items():
        compact_ok = place == "result" and rule != "hash_only"
        async with deps.sessions() as session:
            sites = await text_sites(session, ids["account"], canary)
        searched += len(searched_columns()) + len(surfaces)
        for site in sites:
            allowed = compact_ok and ((site.table, site.column) in COMPACT_TEXT or (
                (site.table, site.column) == ("context_assemblies", "messages") and site.row_id == after.assembly_id))
            if not allowed:
                survivors.append({"rule": rule, "field": place, "where": f"{site.table}.{site.column}"})
        for surface, body in surfaces.items():
            shown = surface in ("assembly after retention", "explain") or surface.startswith("inspector ")
            if canary in body and not (compact_ok and shown):  # compact text, shown where memories are shown
                survivors.append({"rule": rule, "field": place, "where": surface})
    return searched, survivors


async def run_retention(stack: Stack, figures: Figures, *, quick: bool = False,
                        progress: Callable[[str], None] = lambda line: None) -> None:
    """Every removing rule; fills ``retention_sites`` and ``retention_survivors``."""
    logs = _Logs()
    root = logging.getLogger()
    level = root.level
    root.addHandler(logs)
    root.setLevel(logging.DEBUG)
    searched, survivors = 0, []
    try:
        for rule in RULES:
            count, found = await run_rule(stack, rule, logs)
            searched += count
            survivors += found
            progress(f"harden: retention {rule}: {count} sites searched, {len(found)} survivors")
    finally:
        root.removeHandler(logs)
        root.setLevel(level)
    for survivor in survivors:
        figures.finding(PART, "retention left a call's text behind", **survivor)
    figures.details["retention_fields"] = list(FIELDS)
    figures.details["retention_rules"] = list(RULES)
    figures.set(retention_sites=searched, retention_survivors=len(survivors))


__all__ = ["run_retention", "run_rule"]
