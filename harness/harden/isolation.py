"""Isolation: every read path tried with another account's and another participant's ids.

Each *attempt* calls one read path twice as the probing account: once with
an id that belongs to someone else (another account, or another participant
of the same account) and once with a fresh id that exists nowhere. The
attempt is *denied* when the two outcomes cannot be told apart after the ids
are blanked: the same error type with the same message, or the same (empty)
result. Returning the other account's data, or failing differently from an
unknown id (which lets a caller probe for ids), is a violation.

Read paths covered: every store getter and lister, the candidate loader,
raw payload reads (inline and S3, by artifact id and by object key), context
assembly in every runtime mode (foreign conversation, branch, participant,
evidence request), provenance checks, the Python client, the CLI (as a
subprocess with another installation's account), the audit reads (explain
with and without its trace, why-not from a foreign run and from my own run
about a foreign record, diff of consecutive calls, of two runs and under
another policy, what-if by conversation, account and last N runs), S3 with a wrong key, and the
runtime tools' paths: user memories (list, forget) and ``recall`` (a real
recall call of mine naming another account's artifact, and its evidence rows),
and every page of the inspector that reads by id, with foreign ids and foreign
tokens (``isolation_inspector``).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from activities import context as context_activity
from activities import ingest, provenance
from harness.harden.report import Figures
from harness.harden.probe import PART, AccountIds, Prober, _blank, _ids_of
from harness.harden.stack import Stack
from policy.enums import RuntimeKind
from policy.records import EvidenceRequest, GenerationBoundary
from store import assemblies, branches, candidates, checkpoints, conversations, messages, payloads, skills
from store import tool_memories, user_memories
from store import tools as tool_store
from store.writes import NewToolCall

ACCOUNT_TABLES = ("conversations", "branches", "participants", "messages", "model_runs", "tool_calls",
                  "tool_artifacts", "tool_memories", "user_memories", "skill_states", "continuation_checkpoints",
                  "context_assemblies", "policy_decisions", "evidence_requests")
SCENARIOS_QUICK = ("participant_visibility", "subagent_child_artifact_capture")
SCENARIOS_FULL = ("deferred_document_picker", "multi_skill_runtime_state", "participant_visibility",
                  "branch_isolation", "subagent_continuation_state", "subagent_child_artifact_capture",
                  "scheduled_job")


async def collect_ids(stack: Stack, account_id: str) -> AccountIds:
    """Read every id of ``account_id`` straight from the tables."""
    queries = {
        "conversation": "SELECT id FROM conversations WHERE account_id=:a ORDER BY id",
        "branch": "SELECT conversation_id, id FROM branches WHERE account_id=:a ORDER BY id",
        "participant": "SELECT conversation_id, id FROM participants WHERE account_id=:a ORDER BY id",
        "message": "SELECT id FROM messages WHERE account_id=:a ORDER BY seq",
        "model_run": "SELECT id FROM model_runs WHERE account_id=:a ORDER BY id",
        "tool_call": "SELECT id, call_id FROM tool_calls WHERE account_id=:a ORDER BY seq",
        "artifact": "SELECT id, storage, storage_key, sha256, visibility, owner_participant_id, conversation_id, "
                    "branch_id FROM tool_artifacts WHERE account_id=:a ORDER BY id",
        "memory": "SELECT id FROM tool_memories WHERE account_id=:a ORDER BY id",
        "checkpoint": "SELECT id FROM continuation_checkpoints WHERE account_id=:a ORDER BY id",
        "skill_state": "SELECT id FROM skill_states WHERE account_id=:a ORDER BY id",
        "assembly": "SELECT id FROM context_assemblies WHERE account_id=:a ORDER BY id",
        "user_memory": "SELECT id, text FROM user_memories WHERE account_id=:a ORDER BY id",
    }
    found = AccountIds(account=account_id)
    async with stack.deps.sessions() as session:
        for kind, sql in queries.items():
            try:
                rows = (await session.execute(text(sql), {"a": account_id})).all()
            except Exception:  # a column this revision does not have: fall back to ids only
                await session.rollback()
                table = sql.split(" FROM ")[-1].split()[0]
                rows = (await session.execute(text(f"SELECT id FROM {table} WHERE account_id=:a"),
                                              {"a": account_id})).all()
            found.ids[kind] = [tuple(r) if len(r) > 1 else r[0] for r in rows]
    return found


async def table_counts(stack: Stack) -> dict[str, int]:
    """Rows per graph table (all accounts)."""
    async with stack.deps.sessions() as session:
        return {t: int(await session.scalar(text(f"SELECT count(*) FROM {t}"))) for t in ACCOUNT_TABLES}


def _uuid() -> str:
    return str(uuid.uuid4())


async def _store_paths(stack: Stack, prober: Prober, me: str, other: AccountIds) -> None:
    """Every store read, as ``me``, on ``other``'s ids."""
    deps = stack.deps

    def session_call(fn: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any):
        async def run(one_id: Any) -> Any:
            async with deps.sessions() as session:
                return await fn(session, me, *(one_id if isinstance(one_id, tuple) else (one_id,)),
                                *args, **kwargs)
        return run

    singles: list[tuple[str, str, Callable[..., Awaitable[Any]], dict[str, Any]]] = [
        ("conversation", "store.get_conversation", conversations.get_conversation, {}),
        ("conversation", "store.list_branches", branches.list_branches, {}),
        ("conversation", "store.list_participants", conversations.list_participants, {}),
        ("participant", "store.get_participant", conversations.get_participant, {}),
        ("message", "store.get_message", messages.get_message, {}),
        ("model_run", "store.get_model_run", messages.get_model_run, {}),
        ("tool_call", "store.get_tool_call", tool_store.get_tool_call, {}),
        ("tool_call", "store.get_tool_call_history", tool_store.get_tool_call_history, {}),
        ("tool_call", "store.get_artifact_for_tool_call", tool_store.get_artifact_for_tool_call, {}),
        ("call_id", "store.get_tool_call_by_call_id", tool_store.get_tool_call_by_call_id, {}),
        ("artifact", "store.get_artifact", tool_store.get_artifact, {}),
        ("artifact", "store.get_artifact_arguments", tool_store.get_artifact_arguments, {}),
        ("artifact", "store.get_inline_payload", tool_store.get_inline_payload, {}),
        ("memory", "store.get_tool_memory", tool_memories.get_tool_memory, {}),
        ("checkpoint", "store.get_checkpoint", checkpoints.get_checkpoint, {}),
        ("skill_state", "store.get_skill_state", skills.get_skill_state, {}),
        ("assembly", "store.get_context_assembly", assemblies.get_context_assembly, {}),
        ("branch", "store.get_branch", branches.get_branch, {}),
        ("branch", "store.load_lineage", branches.load_lineage, {}),
    ]
    for kind, path, fn, kwargs in singles:
        for foreign in _ids_of(other, kind):
            await prober.attempt(path, foreign, _uuid() if kind != "call_id" else f"call_{uuid.uuid4().hex[:12]}",
                                 session_call(fn, **kwargs))

    async def list_runs(conversation_id: str) -> Any:
        async with deps.sessions() as session:
            return await messages.list_model_runs(session, me, conversation_id)

    async def list_assemblies_conv(conversation_id: str) -> Any:
        async with deps.sessions() as session:
            return await assemblies.list_context_assemblies(session, me, conversation_id=conversation_id)

    async def list_assemblies_run(run_id: str) -> Any:
        async with deps.sessions() as session:
            return await assemblies.list_context_assemblies(session, me, model_run_id=run_id)

    for conversation_id in _ids_of(other, "conversation"):
        await prober.attempt("store.list_model_runs", conversation_id, _uuid(), list_runs)
        await prober.attempt("store.list_context_assemblies(conversation)", conversation_id, _uuid(),
                             list_assemblies_conv)
    for run_id in _ids_of(other, "model_run")[:3]:
        await prober.attempt("store.list_context_assemblies(model_run)", run_id, _uuid(), list_assemblies_run)

    async def load(pair: tuple[str, str]) -> Any:
        async with deps.sessions() as session:
            return await candidates.load_candidates(session, me, pair[0], pair[1], deps.limits)

    for conversation_id, branch_id in other.ids.get("branch", []):
        await prober.attempt("store.load_candidates", (conversation_id, branch_id), (_uuid(), _uuid()), load)
        own_conversation = stack.extra.get(f"conversation:{me}")
        if own_conversation:  # my own conversation, someone else's branch
            await prober.attempt("store.load_candidates(own conversation, foreign branch)",
                                 (own_conversation, branch_id), (own_conversation, _uuid()), load)

    async def payload(artifact_id: str) -> Any:
        async with deps.sessions() as session:
            return await payloads.read_artifact_payload(session, deps.artifacts, me, artifact_id)

    async def extra_artifacts(artifact_id: str) -> Any:
        # My own branch, someone else's artifact as an extra id (how evidence requests load).
        conversation_id, branch_id = stack.extra[f"branch:{me}"]
        async with deps.sessions() as session:
            loaded = await candidates.load_candidates(session, me, conversation_id, branch_id, deps.limits,
                                                      extra_artifact_ids=[artifact_id])
        return sorted(a.id for a in loaded.artifacts)

    for row in other.ids.get("artifact", []):
        artifact_id = row[0] if isinstance(row, tuple) else row
        await prober.attempt("store.read_artifact_payload", artifact_id, _uuid(), payload)
        if f"branch:{me}" in stack.extra:
            await prober.attempt("store.load_candidates(extra_artifact_ids)", artifact_id, _uuid(),
                                 extra_artifacts, leak_check=lambda ids, a=artifact_id: a in ids)

    async def user_mems(_: Any) -> Any:
        async with deps.sessions() as session:
            return await user_memories.list_user_memories(session, me)

    foreign_texts = [row[1] for row in other.ids.get("user_memory", []) if isinstance(row, tuple)]
    if foreign_texts:
        await prober.attempt("store.list_user_memories", other.account, _uuid(), user_mems,
                             leak_check=lambda rows: any(r.text in foreign_texts for r in rows))


async def _s3_paths(stack: Stack, prober: Prober, me: str, other: AccountIds) -> None:
    """Object reads by key: another account's keys under my account, and a wrong S3 key."""
    store = stack.deps.artifacts
    rows = [r for r in other.ids.get("artifact", []) if isinstance(r, tuple) and r[2]]
    for _id, _storage, key, sha, *_ in rows:
        unknown_key = f"accounts/{other.account}/sha256/{uuid.uuid4().hex}{uuid.uuid4().hex}"
        await prober.attempt("s3.get", (key, sha), (unknown_key, sha),
                             lambda pair: store.get(me, pair[0], pair[1]))
        await prober.attempt("s3.get_file", (key, sha), (unknown_key, sha),
                             lambda pair: store.get_file(me, pair[0], pair[1]))
        await prober.attempt("s3.stat", key, unknown_key, lambda k: store.stat(me, k))
        await prober.attempt("s3.exists", key, unknown_key, lambda k: store.exists(me, k))
        await prober.attempt("s3.privacy_of", key, unknown_key, lambda k: store.privacy_of(me, k))
    if rows:
        from store.artifacts import ArtifactStore

        _id, _storage, key, sha, *_ = rows[0]
        e = stack.endpoints
        for label, access, secret in (("wrong secret key", e.s3_access_key, "not-the-secret-key-0123456789"),
                                      ("wrong access key", "AKIAHARDENWRONG", e.s3_secret_key),
                                      ("anonymous", None, None)):
            wrong = ArtifactStore(endpoint=e.s3_endpoint, access_key=access, secret_key=secret,
                                  bucket=e.s3_bucket, region=e.s3_region)
            prober.attempts += 1
            try:
                data = await wrong.get(other.account, key, sha)
            except Exception as error:  # noqa: BLE001 - refusal is the expected outcome
                prober.denied += 1
                prober.log.append({"path": f"s3 {label}", "denied": True, "error": type(error).__name__})
            else:
                prober.figures.finding(PART, f"S3 served an object with a {label}", bytes=len(data), key=key)


def _boundary(account: str, conversation: str, branch: str, participant: str, kind: RuntimeKind,
              evidence: tuple[str, ...] = ()) -> GenerationBoundary:
    return GenerationBoundary(
        account_id=account, conversation_id=conversation, branch_id=branch, participant_id=participant,
        runtime_kind=kind, provider_route="openai", token_budget=8192,
        now=datetime(2026, 12, 1, tzinfo=UTC),
        evidence_requests=tuple(EvidenceRequest(artifact_id=a, reason="harden isolation") for a in evidence),
    )


def _context_text(result: Any) -> str:
    parts = []
    for message in result.result.messages:
        parts.append(f"{message.role}:{message.content or ''}")
        parts += [f"{c.call_id} {c.name} {c.arguments}" for c in message.tool_calls]
    return "\n".join(parts)


async def _assembly_paths(stack: Stack, prober: Prober, me: AccountIds, other: AccountIds, quick: bool) -> None:
    """Context assembly, in every runtime mode, on foreign conversations, branches, participants, evidence."""
    deps = stack.deps
    kinds = list(RuntimeKind)
    my_conversation, my_branch = me.ids["branch"][0]
    my_participants = [p[1] for p in me.ids.get("participant", []) if p[0] == my_conversation]
    other_conversation, other_branch = other.ids["branch"][0]
    other_participants = [p[1] for p in other.ids.get("participant", []) if p[0] == other_conversation]
    if not my_participants or not other_participants:
        return

    async def assemble(boundary: GenerationBoundary) -> Any:
        return await context_activity.assemble_context(deps, boundary)

    for kind in kinds:
        # Another account's whole scope.
        await prober.attempt(
            "assemble_context(foreign conversation)", (other_conversation, other_branch, other_participants[0]),
            (_uuid(), _uuid(), _uuid()),
            lambda ids, k=kind: assemble(_boundary(me.account, *ids, k)), mode=kind.value)
        # My conversation, another account's participant.
        await prober.attempt(
            "assemble_context(foreign participant)", other_participants[0], _uuid(),
            lambda pid, k=kind: assemble(_boundary(me.account, my_conversation, my_branch, pid, k)), mode=kind.value)
        # My conversation, another account's branch.
        await prober.attempt(
            "assemble_context(foreign branch)", other_branch, _uuid(),
            lambda bid, k=kind: assemble(_boundary(me.account, my_conversation, bid, my_participants[0], k)),
            mode=kind.value)
        # My own scope, evidence requested from another account's artifacts: must read like an unknown id.
        for row in other.ids.get("artifact", [])[: (1 if quick else 3)]:
            await prober.attempt(
                "assemble_context(foreign evidence)", row[0], _uuid(),
                lambda aid, k=kind: _assembled_text(deps, _boundary(me.account, my_conversation, my_branch,
                                                                    my_participants[0], k, (aid,))),
                mode=kind.value)
    # Another participant of the same account (in another conversation) at my boundary.
    second = stack.extra.get(f"second_participant:{me.account}")
    if second:
        for kind in kinds:
            await prober.attempt(
                "assemble_context(same account, other conversation's participant)", second, _uuid(),
                lambda pid, k=kind: assemble(_boundary(me.account, my_conversation, my_branch, pid, k)),
                mode=kind.value)
    # Another participant's private artifacts, requested as evidence by a participant it is not shared with.
    private = [r for r in me.ids.get("artifact", []) if isinstance(r, tuple) and str(r[4]).endswith("participant_private")
               and r[6] == my_conversation]
    for row in private[: (2 if quick else 6)]:
        owner = row[5]
        for viewer in [p for p in my_participants if p != owner][:1]:
            if await _shared_with(stack, me.account, row[0], viewer):
                continue
            for kind in (kinds[:2] if quick else kinds):
                await prober.attempt(
                    "assemble_context(another participant's private evidence)", row[0], _uuid(),
                    lambda aid, k=kind, v=viewer, b=row[7]: _assembled_text(
                        deps, _boundary(me.account, my_conversation, b, v, k, (aid,))),
                    mode=kind.value)

    async def prov(ids: tuple[str, str]) -> Any:
        return [m.id for m in await provenance.verify_provenance(deps, me.account, ids[0], ids[1])]

    await prober.attempt("verify_provenance", (other_conversation, other_branch), (_uuid(), _uuid()), prov)
    for tool_call in _ids_of(other, "tool_call")[:3]:
        await prober.attempt("ingested_result", tool_call, _uuid(),
                             lambda tid: ingest.ingested_result(deps, me.account, tid))


async def _shared_with(stack: Stack, account: str, artifact_id: str, participant: str) -> bool:
    async with stack.deps.sessions() as session:
        artifact = await tool_store.get_artifact(session, account, artifact_id)
    return participant in (getattr(artifact, "shared_with", ()) or ())


async def _assembled_text(deps: Any, boundary: GenerationBoundary) -> str:
    """The assembled messages at a boundary, as one comparable string (ids blanked by the prober)."""
    result = await context_activity.assemble_context(deps, boundary)
    return _context_text(result)


async def _client_paths(stack: Stack, prober: Prober, me: str, other: AccountIds) -> None:
    """The Python client as ``me`` on another account's ids, audit reads included; nothing may be written."""
    from dossier.client import DossierClient

    client = DossierClient(deps=stack.deps, temporal=None, settings=stack.settings, account_id=me)  # type: ignore[arg-type]
    conversation, branch = other.ids["branch"][0]
    message = _ids_of(other, "message")[0]
    tool_call = _ids_of(other, "tool_call")[0] if other.ids.get("tool_call") else None
    before = await table_counts(stack)
    await prober.attempt("client.transcript", (conversation, branch), (_uuid(), _uuid()),
                         lambda ids: client.transcript(*ids))
    await prober.attempt("client.message_text", message, _uuid(), client.message_text)
    await prober.attempt("client.runs", conversation, _uuid(), lambda c: client.runs.list(c))
    await prober.attempt("client.first_user_message", (conversation, branch), (_uuid(), _uuid()),
                         lambda ids: client.first_user_message(*ids))
    await prober.attempt("client.fork", (conversation, message), (_uuid(), _uuid()),
                         lambda ids: client.fork(*ids))
    if tool_call:
        await prober.attempt("client.answer", tool_call, _uuid(), lambda t: client.answer(t, "{}"))
    for kind in (RuntimeKind.CHAT, RuntimeKind.BRANCH_SEND):
        await prober.attempt("client.chat", (conversation, branch), (_uuid(), _uuid()),
                             lambda ids, k=kind: client.chat("harden probe", conversation_id=ids[0],
                                                             branch_id=ids[1], runtime_kind=k),
                             mode=kind.value)
    await prober.attempt("client.multi", conversation, _uuid(),
                         lambda c: client.multi("harden probe", ["scripted:echo"], conversation_id=c),
                         mode="multi_model")
    await prober.attempt("client.discuss", conversation, _uuid(),
                         lambda c: client.discuss("harden probe", ["scripted:panelist"], conversation_id=c),
                         mode="discussion")
    await prober.attempt("client.subagents", conversation, _uuid(),
                         lambda c: client.subagents("harden probe", [("scripted:researcher", "x")],
                                                    conversation_id=c),
                         mode="subagent_child")
    await _audit_paths(stack, prober, client, me, other)
    after = await table_counts(stack)
    if before != after:
        changed = {t: after[t] - before[t] for t in before if after[t] != before[t]}
        prober.attempts += 1
        prober.figures.finding(PART, "client calls on foreign ids wrote rows", changed=changed)


AUDIT_POLICY = "dossier-lean/1"
"""The policy version the what-if and diff probes recompute under (a registered alternative)."""


async def assembled_runs(stack: Stack, account_id: str) -> list[str]:
    """The account's model runs that have an assembly, oldest first."""
    async with stack.deps.sessions() as session:
        rows = await session.execute(text("SELECT id FROM model_runs WHERE account_id=:a AND context_assembly_id IS "
                                          "NOT NULL ORDER BY started_at, id"), {"a": account_id})
        return [row[0] for row in rows]


async def _audit_paths(stack: Stack, prober: Prober, client: Any, me: str, other: AccountIds) -> None:
    """Explain, why-not, diff and what-if as ``me`` on ``other``'s runs, records, conversation and account."""
    theirs = await assembled_runs(stack, other.account)
    mine = await assembled_runs(stack, me)
    conversation = _ids_of(other, "conversation")[0]
    for run in theirs[:2]:
        await prober.attempt("client.explain", run, _uuid(), client.runs.explain)
        await prober.attempt("client.explain(trace)", run, _uuid(), lambda r: client.runs.explain(r, trace=True))
        await prober.attempt("client.diff(consecutive)", run, _uuid(), client.runs.diff)
        await prober.attempt("client.diff(policy)", run, _uuid(),
                             lambda r: client.runs.diff(r, policy_version=AUDIT_POLICY))
        await prober.attempt("client.why_not(foreign run)", run, _uuid(),
                             lambda r: client.runs.why_not(_ids_of(other, "memory")[0] if other.ids.get("memory")
                                                      else _ids_of(other, "message")[0], r))
        if mine:
            await prober.attempt("client.diff(own run, foreign run)", run, _uuid(),
                                 lambda r: client.runs.diff(mine[0], r))
    if mine:  # my own run, asked about their records: answered exactly as an id that exists nowhere
        for kind in ("memory", "artifact", "tool_call", "message"):
            for record in _ids_of(other, kind)[:2]:
                await prober.attempt(f"client.why_not(own run, foreign {kind})", record, _uuid(),
                                     lambda r: client.runs.why_not(r, mine[0]))
                await prober.attempt(f"client.why_not(own run, foreign {kind} as ref)", (kind, record),
                                     (kind, _uuid()), lambda pair: client.runs.why_not(f"{pair[0]}:{pair[1]}", mine[0]))
    await prober.attempt("client.what_if(conversation)", conversation, _uuid(),
                         lambda c: client.runs.what_if(AUDIT_POLICY, conversation_id=c))
    await prober.attempt("client.what_if(account)", other.account, _uuid(),
                         lambda a: client.runs.what_if(AUDIT_POLICY, account_id=a))
    foreign_runs = set(theirs)
    await prober.attempt("client.what_if(last)", other.account, _uuid(),
                         lambda _: _no_runs(client.runs.what_if(AUDIT_POLICY, last=50)),
                         leak_check=lambda runs: bool(set(runs) & foreign_runs))


async def _no_runs(report: Awaitable[Any]) -> list[str]:
    """The model runs a what-if report covers (compared, not its contents: they are my own)."""
    return sorted(run.before.model_run_id or "" for run in (await report).runs)


async def _runtime_tool_paths(stack: Stack, prober: Prober, me: str, other: AccountIds) -> None:
    """User memories (client and store) and ``recall`` as ``me`` on ``other``'s ids; nothing of theirs changes."""
    from activities.ingest import begin_tool_call
    from activities.tools.base import ToolContext
    from activities.tools.runtime import RECALL, TOOLS
    from dossier.client import DossierClient
    from store import evidence

    deps = stack.deps
    client = DossierClient(deps=deps, temporal=None, settings=stack.settings, account_id=me)  # type: ignore[arg-type]
    theirs = [row for row in other.ids.get("user_memory", []) if isinstance(row, tuple)]
    for memory_id, memory_text in theirs[:2]:
        await prober.attempt("client.forget_memory", memory_id, _uuid(), client.memories.forget)
        await prober.attempt("client.memories", memory_id, _uuid(), lambda _: client.memories.list(),
                             leak_check=lambda rows, t=memory_text: any(r.text == t for r in rows))

        async def forget(one_id: str) -> bool:
            async with deps.sessions() as session:  # never committed: a probe must not delete
                return await user_memories.forget_user_memory(session, me, one_id)

        await prober.attempt("store.forget_user_memory", memory_id, _uuid(), forget)
    for tool_call_id in _ids_of(other, "tool_call")[:3]:
        async def requests(one_id: str) -> Any:
            async with deps.sessions() as session:
                return await evidence.evidence_requests(session, me, tool_call_id=one_id)

        await prober.attempt("store.evidence_requests", tool_call_id, _uuid(), requests)
    if f"branch:{me}" not in stack.extra:
        return
    conversation_id, branch_id = stack.extra[f"branch:{me}"]
    async with deps.sessions() as session:
        participant_id = (await conversations.list_participants(session, me, conversation_id))[0].id
    recall = next(tool for tool in TOOLS if tool.name == RECALL)
    for row in other.ids.get("artifact", [])[:3]:
        artifact_id = row[0] if isinstance(row, tuple) else row
        # A real recall call of mine naming their artifact: answered exactly as an id that exists nowhere.
        call = await begin_tool_call(deps, me, conversation_id, NewToolCall(
            branch_id=branch_id, participant_id=participant_id, call_id=f"call_{uuid.uuid4().hex[:12]}", name=RECALL,
            arguments={"id": artifact_id}, runtime_kind=RuntimeKind.CHAT))
        context = ToolContext(account_id=me, tool_call_id=call.id, attempt=1, workspace=Path("."),
                              artifacts=deps.artifacts, graph=deps)
        await prober.attempt("tool.recall", artifact_id, _uuid(),
                             lambda one_id, c=context: recall.run(c, {"id": one_id}),  # type: ignore[misc]
                             leak_check=lambda result: b'"denied"' not in result.payload)


def cli_commands(conversation: str, branch: str, message: str, tool_call: str | None, *,
                 model_run: str | None = None, own_run: str | None = None,
                 record: str | None = None) -> list[tuple[str, list[str]]]:
    """The CLI invocations that take ids, one per read path and runtime mode.

    ``model_run`` is a run of the probed ids' account, ``own_run`` one of the prober's own (why-not asks it about
    ``record``); the audit commands are listed when they are given.
    """
    commands = [
        ("cli runs", ["runs", "--conversation", conversation, "--json"]),
        ("cli chat", ["chat", "--conversation", conversation, "--branch", branch, "--no-wait", "harden probe"]),
        ("cli branch fork", ["branch", "fork", "--conversation", conversation, "--at", message]),
        ("cli multi", ["multi", "--conversation", conversation, "--model", "scripted:echo", "harden probe"]),
        ("cli discuss", ["discuss", "--conversation", conversation, "--model", "scripted:panelist", "--rounds", "1",
                         "harden probe"]),
        ("cli subagents", ["subagents", "--conversation", conversation, "--task", "scripted:researcher=x",
                           "harden probe"]),
        ("cli schedule create", ["schedule", "create", f"harden-{uuid.uuid4().hex[:8]}", "--every", "3600",
                                 "--paused", "--conversation", conversation, "harden probe"]),
    ]
    if tool_call:
        commands.append(("cli answer", ["answer", tool_call, "{}"]))
    if model_run:
        commands += [
            ("cli explain", ["explain", model_run, "--trace", "--json"]),
            ("cli explain (human)", ["explain", model_run]),
            ("cli diff", ["diff", model_run, "--json"]),
            ("cli diff --policy", ["diff", model_run, "--policy", AUDIT_POLICY, "--json"]),
            ("cli what-if", ["what-if", "--policy", AUDIT_POLICY, "--conversation", conversation, "--json"]),
        ]
        if own_run and record:
            commands.append(("cli why-not", ["why-not", record, own_run, "--json"]))
    return commands


AUDIT_CLI = ("cli explain", "cli why-not", "cli what-if", "cli diff")
"""The audit commands, probed in the quick run too."""


def run_cli(stack: Stack, args: list[str], *, home: Path, stdin: str | None = None,
            timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``dossier ARGS`` in a subprocess on this stack, with ``home`` as its installation (account file)."""
    return subprocess.run([sys.executable, "-m", "dossier.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=timeout, env=stack.env(DOSSIER_HOME=str(home)),
                          cwd=str(stack.settings.dossier_home))


async def _cli_paths(stack: Stack, prober: Prober, me: str, other: AccountIds, quick: bool) -> None:
    """The CLI of another installation (account ``me``) on ``other``'s ids."""
    from dossier.client import ACCOUNT_FILE

    home = Path(tempfile.mkdtemp(prefix="harden-cli-", dir=stack.settings.dossier_home))
    (home / ACCOUNT_FILE).write_text(me + "\n")
    conversation, branch = other.ids["branch"][0]
    message = _ids_of(other, "message")[0]
    tool_call = _ids_of(other, "tool_call")[0] if other.ids.get("tool_call") else None
    theirs, mine = await assembled_runs(stack, other.account), await assembled_runs(stack, me)
    record = (_ids_of(other, "memory") or _ids_of(other, "message"))[0]
    commands = cli_commands(conversation, branch, message, tool_call, model_run=theirs[0] if theirs else None,
                            own_run=mine[0] if mine else None, record=record)
    unknown = cli_commands(_uuid(), _uuid(), _uuid(), _uuid() if tool_call else None,
                           model_run=_uuid() if theirs else None, own_run=mine[0] if mine else None, record=_uuid())
    if quick:
        keep = [i for i, (path, _) in enumerate(commands)
                if i < 3 or path == "cli answer" or path.startswith(AUDIT_CLI)]
        commands, unknown = [commands[i] for i in keep], [unknown[i] for i in keep]
    for (path, foreign_args), (_, unknown_args) in zip(commands, unknown, strict=True):
        ids = [a for a in foreign_args + unknown_args if re.fullmatch(r"[0-9a-f-]{36}", a)]
        before = await table_counts(stack)

        async def outcome(args: list[str]) -> tuple[int, str, str]:
            done = await asyncio.to_thread(run_cli, stack, args, home=home)
            return done.returncode, _blank(done.stdout, ids), _blank(done.stderr.strip().splitlines()[-1]
                                                                      if done.stderr.strip() else "", ids)

        foreign = await outcome(foreign_args)
        after = await table_counts(stack)
        unknown_outcome = await outcome(unknown_args)
        prober.attempts += 1
        if foreign == unknown_outcome and before == after:
            prober.denied += 1
            prober.log.append({"path": path, "denied": True})
        else:
            changed = {t: after[t] - before[t] for t in before if after[t] != before[t]}
            prober.figures.finding(PART, f"{path} on another account's ids is not denied like an unknown id",
                                   reproducer=f"DOSSIER_HOME=<other install> dossier {' '.join(foreign_args)}",
                                   foreign=str(foreign)[:300], unknown=str(unknown_outcome)[:300], wrote=changed)


async def build_accounts(stack: Stack, quick: bool) -> list[AccountIds]:
    """Seed scenarios written through the live capture code, one account each, plus a second conversation."""
    from harness.scenarios import scenario as seed
    from harness.scenarios.runner import run_scenario

    accounts: list[AccountIds] = []
    for name in SCENARIOS_QUICK if quick else SCENARIOS_FULL:
        outcome = await run_scenario(seed(name), stack.deps)
        ids = await collect_ids(stack, outcome.account_id)
        async with stack.deps.sessions() as session, session.begin():
            second = await conversations.create_conversation(session, outcome.account_id, title="second")
            participant = await conversations.add_participant(
                session, outcome.account_id, second.id, name="Second", role="assistant",
                provider="scripted", model="echo", system_prompt="second conversation")
            # A user memory per account, so the memory list/forget paths always have a foreign id to try.
            await user_memories.put_user_memory(session, outcome.account_id, f"harden memory of {name}")
        ids.ids["user_memory"] = (await collect_ids(stack, outcome.account_id)).ids["user_memory"]
        stack.extra[f"second_participant:{outcome.account_id}"] = participant.id
        stack.extra[f"conversation:{outcome.account_id}"] = outcome.conversation_id
        stack.extra[f"branch:{outcome.account_id}"] = ids.ids["branch"][0]
        accounts.append(ids)
    return accounts


async def run_isolation(stack: Stack, figures: Figures, *, quick: bool = False, cli: bool = True) -> Prober:
    """The isolation part: sets ``isolation_attempts`` and ``isolation_denied``."""
    from harness.harden.isolation_inspector import inspector_paths

    prober = Prober(figures)
    accounts = await build_accounts(stack, quick)
    # Each account probes the next one's ids (a ring: every account is prober and target once).
    pairs = [(accounts[i], accounts[(i + 1) % len(accounts)]) for i in range(len(accounts))]
    if quick:
        pairs = pairs[:1]
    for me, other in pairs:
        await _store_paths(stack, prober, me.account, other)
        await _s3_paths(stack, prober, me.account, other)
        await _assembly_paths(stack, prober, me, other, quick)
        await _client_paths(stack, prober, me.account, other)
        await _runtime_tool_paths(stack, prober, me.account, other)
        await inspector_paths(stack, prober, me, other)
    if cli and "temporal" in stack.services:
        me, other = pairs[0]
        await _cli_paths(stack, prober, me.account, other, quick)
    figures.set(isolation_attempts=prober.attempts, isolation_denied=prober.denied)
    return prober
