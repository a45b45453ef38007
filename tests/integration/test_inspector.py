"""The inspector's routes over the real store: scoping, tokens, escaping.

Two accounts each run a real agent turn (Temporal dev server, in-process
worker, scripted model, real tools over Postgres and S3); account A also holds
a tool result and a message full of hostile text. The app is driven with
Starlette's TestClient-equivalent (httpx over ASGI) as A's viewer.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from activities.providers.factory import ModelProviders
from activities.deps import GraphDeps
from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result
from dossier.client import DossierClient
from dossier.inspector.app import CSP, create_app
from dossier.inspector.auth import COOKIE, issue_token, verify_token
from dossier.runtime import build_worker
from dossier.settings import Settings
from policy.enums import PrivacyClass, RuntimeKind, ToolCallStatus
from policy.tools import ToolCatalog
from store import conversations, messages
from store import tools as tool_store
from store.candidates import load_candidates
from store.payloads import read_artifact_payload
from store.writes import NewToolCall

SECRET = b"inspector-test-secret-0123456789abcdef"
HOSTILE = ("<script>alert('x')</script> <img src=x onerror=alert(1)> \x1b[31mred\x1b[0m "
           "\u202eevil\u202c \x07bell </pre><b>bold</b>")
RAW_MARK = "RAW-BYTES-OF-ACCOUNT-"


@dataclass
class Account:
    """One account's ids after its turn."""

    id: str
    conversation_id: str
    branch_id: str
    run_id: str
    other_run_id: str
    tool_call_id: str
    artifact_id: str
    memory_id: str
    message_id: str


async def _account(temporal_env: WorkflowEnvironment, deps: GraphDeps, name: str) -> Account:
    task_queue = f"inspector-{uuid.uuid4().hex[:8]}"
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name=name)
    client = DossierClient(deps=deps, temporal=temporal_env.client, settings=Settings(temporal_task_queue=task_queue),
                           account_id=account_id, poll_seconds=0.2)
    async with build_worker(temporal_env.client, deps, task_queue=task_queue,
                            workflow_failure_exception_types=[Exception], providers=ModelProviders()):
        outcome = await client.chat("Which region drove Q3 2026 revenue? Write me a short report.")
    assert outcome.result and outcome.result.status == "answered"
    # A tool result and a user message full of hostile text, captured through the live ingest path.
    scope_conversation, branch = outcome.conversation_id, outcome.branch_id
    from contracts import Scope

    message_id = await client.say(Scope(account_id=account_id, conversation_id=scope_conversation,
                                        branch_id=branch), f"user says {HOSTILE}")
    call = await begin_tool_call(deps, account_id, scope_conversation, NewToolCall(
        branch_id=branch, participant_id=outcome.participant_id, call_id=f"call_{uuid.uuid4().hex[:12]}",
        name="workspace.read_file", arguments={"path": "hostile.txt"}, runtime_kind=RuntimeKind.CHAT,
        privacy=PrivacyClass.USER))  # an undeclared tool is secret-class otherwise
    payload = f"{RAW_MARK}{name} {HOSTILE}".encode()
    ingested = await ingest_tool_result(deps, account_id, call.id, ToolOutcome(
        status=ToolCallStatus.SUCCEEDED, result=payload, content_type="text/plain"))
    return Account(account_id, scope_conversation, branch, outcome.result.model_run_ids[-1],
                   outcome.result.model_run_ids[0], call.id, ingested.artifact.id, ingested.memory.id, message_id)


@pytest.fixture(scope="module")
async def accounts(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps) -> tuple[Account, Account]:
    return (await _account(temporal_env, graph_deps, "viewer A"), await _account(temporal_env, graph_deps, "other B"))


@pytest.fixture
async def app(graph_deps: GraphDeps) -> AsyncIterator[httpx.AsyncClient]:
    application = create_app(graph_deps, secret=SECRET, temporal_ui="http://127.0.0.1:8233")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application),
                                 base_url="http://inspector.test") as client:
        yield client


def _as(account: Account) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, account.id)}"}


def _paths(a: Account) -> list[str]:
    """Every page that reads by id, with ``a``'s ids."""
    return [
        f"/conversations/{a.conversation_id}",
        f"/conversations/{a.conversation_id}?branch={a.branch_id}",
        f"/runs/{a.run_id}",
        f"/runs/{a.run_id}/diff?against={a.other_run_id}",
        f"/records/memory/{a.memory_id}",
        f"/records/artifact/{a.artifact_id}",
        f"/records/tool_call/{a.tool_call_id}",
        f"/records/message/{a.message_id}",
    ]


def _unknown(a: Account) -> Account:
    return Account(a.id, *(str(uuid.uuid4()) for _ in range(8)))


def _blank(text: str, *ids: str) -> str:
    for one in ids:
        text = text.replace(one, "<ID>").replace(one[:8], "<ID>")
    return text


async def test_every_page_renders_for_its_own_account(app: httpx.AsyncClient, accounts: tuple[Account, Account]):
    a, _ = accounts
    home = await app.get("/", headers=_as(a))
    assert home.status_code == 200 and a.conversation_id in home.text
    for path in _paths(a):
        page = await app.get(path, headers=_as(a))
        assert page.status_code == 200, (path, page.text[:500])
        assert page.headers["content-security-policy"] == CSP
    run = (await app.get(f"/runs/{a.run_id}", headers=_as(a))).text
    # Both columns, the decisions, a provenance link and the Temporal link.
    assert "What the model saw" in run and "What transcript replay would have sent" in run
    assert re.search(r'href="/records/(memory|tool_call|artifact|message)/[0-9a-f-]{36}"', run)
    assert "http://127.0.0.1:8233/namespaces/default/workflows/turn-" in run
    artifact = (await app.get(f"/records/artifact/{a.artifact_id}", headers=_as(a))).text
    assert f"{RAW_MARK}viewer A" in artifact and "verified against the sha256" in artifact


async def test_a_foreign_id_is_the_same_404_as_an_unknown_one(app: httpx.AsyncClient,
                                                              accounts: tuple[Account, Account]):
    a, b = accounts
    unknown = _unknown(b)
    for foreign_path, unknown_path in zip(_paths(b), _paths(unknown), strict=True):
        foreign = await app.get(foreign_path, headers=_as(a))
        missing = await app.get(unknown_path, headers=_as(a))
        assert foreign.status_code == missing.status_code == 404, foreign_path
        assert _blank(foreign.text, *vars(b).values()) == _blank(missing.text, *vars(unknown).values())
        assert f"{RAW_MARK}other B" not in foreign.text
    # A's own run, B's record as the why-not subject: no B text comes back either.
    for ref in (f"artifact:{b.artifact_id}", f"memory:{b.memory_id}"):
        page = await app.get(f"/runs/{a.run_id}/why-not", params={"record": ref}, headers=_as(a))
        assert f"{RAW_MARK}other B" not in page.text and b.artifact_id not in page.text.replace(ref, "")
    # A malformed id reads like an unknown one too.
    assert (await app.get("/runs/not-a-uuid", headers=_as(a))).status_code == 404


async def test_no_token_a_bad_token_or_an_expired_one_is_refused(app: httpx.AsyncClient,
                                                                accounts: tuple[Account, Account]):
    a, _ = accounts
    good = issue_token(SECRET, a.id)
    forged = issue_token(b"another-secret-0123456789abcdef0123", a.id)
    expired = issue_token(SECRET, a.id, ttl_seconds=-10)
    tampered = good.replace(a.id, str(uuid.uuid4()))
    for headers in ({}, {"Authorization": f"Bearer {forged}"}, {"Authorization": f"Bearer {expired}"},
                    {"Authorization": f"Bearer {tampered}"}, {"Authorization": "Bearer "}):
        for path in ["/", *_paths(a)]:
            refused = await app.get(path, headers=headers)
            assert refused.status_code == 401, (path, headers)
            assert a.conversation_id not in refused.text and RAW_MARK not in refused.text
    assert verify_token(SECRET, good) == a.id
    # The login URL sets an HttpOnly, SameSite=Strict cookie that then works on its own.
    login = await app.get("/login", params={"token": good})
    assert login.status_code == 303
    cookie = login.headers["set-cookie"]
    assert f"{COOKIE}=" in cookie and "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    app.cookies.set(COOKIE, good)
    assert (await app.get("/")).status_code == 200
    app.cookies.clear()
    assert (await app.get("/login", params={"token": forged})).status_code == 401
    assert (await app.get("/healthz")).text == "ok"


async def test_hostile_tool_text_is_escaped_everywhere(app: httpx.AsyncClient, accounts: tuple[Account, Account]):
    a, _ = accounts
    pages = [f"/records/artifact/{a.artifact_id}", f"/records/memory/{a.memory_id}",
             f"/records/tool_call/{a.tool_call_id}", f"/records/message/{a.message_id}",
             f"/conversations/{a.conversation_id}"]
    for path in pages:
        html = (await app.get(path, headers=_as(a))).text
        assert "<script" not in html and "<img" not in html and "<b>bold" not in html, path
        assert "onerror=alert" not in html or "&lt;img" in html, path
        assert "\x1b" not in html and "\u202e" not in html and "\x07" not in html, path
    artifact = (await app.get(f"/records/artifact/{a.artifact_id}", headers=_as(a))).text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in artifact
    assert "\\x1b[31mred" in artifact and "\\u202eevil" in artifact and "&lt;/pre&gt;&lt;b&gt;bold" in artifact


async def test_raw_bytes_are_cut_and_counted(app: httpx.AsyncClient, accounts: tuple[Account, Account],
                                             graph_deps: GraphDeps):
    a, _ = accounts
    call = await begin_tool_call(graph_deps, a.id, a.conversation_id, NewToolCall(
        branch_id=a.branch_id, participant_id=(await _participant(graph_deps, a)),
        call_id=f"call_{uuid.uuid4().hex[:12]}", name="workspace.read_file", arguments={"path": "big.txt"},
        runtime_kind=RuntimeKind.CHAT, privacy=PrivacyClass.USER))
    payload = b"A" * 40_000 + b"TAIL-NOT-SHOWN"
    ingested = await ingest_tool_result(graph_deps, a.id, call.id, ToolOutcome(
        status=ToolCallStatus.SUCCEEDED, result=payload, content_type="text/plain"))
    html = (await app.get(f"/records/artifact/{ingested.artifact.id}", headers=_as(a))).text
    assert "showing 16,384 of 40,014 bytes" in html and "TAIL-NOT-SHOWN" not in html


SECRET_RAW = "SECRET-RAW-sk-live-0123456789"


async def test_secret_class_raw_bytes_are_withheld_unless_a_revealing_viewer_asks(
        app: httpx.AsyncClient, accounts: tuple[Account, Account], graph_deps: GraphDeps,
        caplog: pytest.LogCaptureFixture):
    a, _ = accounts
    call = await begin_tool_call(graph_deps, a.id, a.conversation_id, NewToolCall(
        branch_id=a.branch_id, participant_id=await _participant(graph_deps, a),
        call_id=f"call_{uuid.uuid4().hex[:12]}", name="vault.read_secret", arguments={"name": "stripe"},
        runtime_kind=RuntimeKind.CHAT, privacy=PrivacyClass.SECRET_ADJACENT))
    payload = f"token {SECRET_RAW}".encode()
    ingested = await ingest_tool_result(graph_deps, a.id, call.id, ToolOutcome(
        status=ToolCallStatus.SUCCEEDED, result=payload, content_type="text/plain"))
    page = f"/records/artifact/{ingested.artifact.id}"
    placeholder = f"Raw bytes withheld: secret_adjacent, {len(payload):,} bytes."
    revealing = {"Authorization": f"Bearer {issue_token(SECRET, a.id, reveal=True)}"}
    with caplog.at_level(logging.WARNING, logger="dossier.inspector.reads"):
        # A plain viewer: the class and the size, never the bytes, even when the URL asks.
        for path in (page, f"{page}?reveal=1"):
            html = (await app.get(path, headers=_as(a))).text
            assert placeholder in html and SECRET_RAW not in html, path
            assert "dossier inspector --url --reveal" in html and "?reveal=1" not in html
        # A viewer who may reveal: still withheld until asked, then shown and logged.
        html = (await app.get(page, headers=revealing)).text
        assert placeholder in html and SECRET_RAW not in html and f'href="{page}?reveal=1"' in html
        assert "revealed" not in caplog.text
        shown = (await app.get(f"{page}?reveal=1", headers=revealing)).text
        assert SECRET_RAW in shown and "revealed at your request" in shown
    assert f"account {a.id} revealed the secret_adjacent raw bytes of artifact {ingested.artifact.id}" in caplog.text
    # A class below it is shown as before, to any viewer.
    assert f"{RAW_MARK}viewer A" in (await app.get(f"/records/artifact/{a.artifact_id}", headers=_as(a))).text


async def test_the_replay_column_withholds_secret_class_results(temporal_env: WorkflowEnvironment,
                                                                 graph_deps: GraphDeps, app: httpx.AsyncClient):
    """A turn whose tools' results are all secret-class: the run page's replay column names each by class and
    size, never its bytes (its artifact page is the one place that may reveal them)."""
    secret_tools = ToolCatalog(tools=tuple(spec.model_copy(update={"privacy": PrivacyClass.SECRET_ADJACENT})
                                           for spec in graph_deps.catalog.tools))
    deps = replace(graph_deps, catalog=secret_tools)
    account = await _account(temporal_env, deps, "secret tools")
    async with deps.sessions() as session:
        run = await messages.get_model_run(session, account.id, account.run_id)
        loaded = await load_candidates(session, account.id, account.conversation_id, account.branch_id, deps.limits)
        # The turn's own results (the test's hostile artifact was captured outside the turn, after it).
        artifacts = [artifact for artifact in loaded.artifacts if artifact.id != account.artifact_id]
    assert run.context_assembly_id and artifacts
    assert {artifact.privacy for artifact in artifacts} == {PrivacyClass.SECRET_ADJACENT}
    html = (await app.get(f"/runs/{account.run_id}", headers=_as(account))).text
    replay = html.split("What transcript replay would have sent", 1)[1]
    assert "raw bytes withheld: secret_adjacent" in replay
    for artifact in artifacts:
        async with deps.sessions() as session:
            raw = await read_artifact_payload(session, deps.artifacts, account.id, artifact.id)
        assert raw.decode(errors="replace")[:200] not in replay


async def _participant(deps: GraphDeps, a: Account) -> str:
    async with deps.sessions() as session:
        run = await messages.get_model_run(session, a.id, a.run_id)
        await tool_store.get_tool_call(session, a.id, a.tool_call_id)
    return run.participant_id


@pytest.mark.slow  # the full tier only: starts the inspector service
async def test_the_service_serves_the_login_url_the_cli_prints(accounts: tuple[Account, Account], database_url: str,
                                                                endpoints, s3_bucket: str, tmp_path):
    """`dossier services up inspector` runs it as a process of its own; `dossier inspector --url` signs a viewer in."""
    import asyncio
    import os
    import subprocess
    import sys

    from dossier.services import ensure_services, stop_services
    from dossier.services.process import free_ports

    a, b = accounts
    settings = Settings(dossier_home=tmp_path, database_url=database_url, s3_endpoint=endpoints.s3_endpoint,
                        s3_access_key=endpoints.s3_access_key, s3_secret_key=endpoints.s3_secret_key,
                        s3_bucket=s3_bucket, temporal_ui_url="http://127.0.0.1:8233",
                        inspector_port=free_ports(1)[0])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "S3_", "TEMPORAL_", "DOSSIER_"))}
    env.update(DOSSIER_HOME=str(tmp_path), DATABASE_URL=database_url, S3_ENDPOINT=endpoints.s3_endpoint,
               S3_ACCESS_KEY=endpoints.s3_access_key, S3_SECRET_KEY=endpoints.s3_secret_key, S3_BUCKET=s3_bucket,
               TEMPORAL_UI_URL="http://127.0.0.1:8233", INSPECTOR_PORT=str(settings.inspector_port))
    import socket

    busy = socket.socket()  # the preferred port is taken: the service falls back to a free one
    busy.bind(("127.0.0.1", settings.inspector_port))
    busy.listen()
    try:
        await asyncio.to_thread(ensure_services, settings, ["inspector"])
        done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "dossier.cli", "inspector", "--url",
                                                        "--account", a.id], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        url = done.stdout.strip()
        assert url.startswith("http://127.0.0.1:") and f"/login?token=v1.{a.id}." in url
        assert not url.startswith(f"http://127.0.0.1:{settings.inspector_port}/")
        async with httpx.AsyncClient() as http:
            login = await http.get(url)
            assert login.status_code == 303 and COOKIE in login.headers["set-cookie"]
            http.cookies.set(COOKIE, login.cookies[COOKIE])
            run = await http.get(url.split("/login")[0] + f"/runs/{a.run_id}")
            assert run.status_code == 200 and "http://127.0.0.1:8233/namespaces/default/workflows/turn-" in run.text
            foreign = await http.get(url.split("/login")[0] + f"/runs/{b.run_id}")
            assert foreign.status_code == 404
        refused = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "dossier.cli", "inspector", "--url",
                                                           "--account", str(uuid.uuid4())],
                                          capture_output=True, text=True, env=env)
        assert refused.returncode == 2 and "not found" in refused.stderr
    finally:
        busy.close()
        assert await asyncio.to_thread(stop_services, settings, ["inspector"]) == ["inspector"]


@pytest.mark.slow  # the full tier only: starts a fresh installation's services
async def test_a_fresh_installation_serves_and_says_how_to_sign_in(database_url: str, endpoints, s3_bucket: str,
                                                                    tmp_path):
    """`dossier inspector` with no account yet (a new compose stack) serves, rather than exiting with an error.

    It binds every interface, as the compose service does, and prints a URL a browser can open (not 0.0.0.0).
    """
    import asyncio
    import os
    import subprocess
    import sys

    from dossier.services.process import free_ports

    port = free_ports(1)[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "S3_", "TEMPORAL_", "DOSSIER_"))}
    env.update(DOSSIER_HOME=str(tmp_path), DATABASE_URL=database_url, S3_ENDPOINT=endpoints.s3_endpoint,
               S3_ACCESS_KEY=endpoints.s3_access_key, S3_SECRET_KEY=endpoints.s3_secret_key, S3_BUCKET=s3_bucket)
    server = subprocess.Popen([sys.executable, "-m", "dossier.cli", "inspector", "--host", "0.0.0.0", "--port",
                               str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        first = await asyncio.to_thread(server.stdout.readline)
        second = await asyncio.to_thread(server.stdout.readline)
        assert first.strip() == f"inspector: http://127.0.0.1:{port}", server.stderr.read() if not first else first
        assert second.startswith("no login URL yet: this installation has no account yet")
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200
    finally:
        server.terminate()
        await asyncio.to_thread(server.wait)
    # Printing a login URL still needs an account.
    refused = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "dossier.cli", "inspector", "--url"],
                                      capture_output=True, text=True, env=env)
    assert refused.returncode == 2 and "has no account yet" in refused.stderr


@pytest.mark.slow  # the full tier only: starts the inspector service
async def test_run_summaries_link_to_the_service_on_the_port_it_took(temporal_env: WorkflowEnvironment,
                                                                     graph_deps: GraphDeps, database_url: str,
                                                                     endpoints, s3_bucket: str, tmp_path):
    """Without ``INSPECTOR_URL``, a turn's Temporal summary and memo link to the running service's real port."""
    import asyncio
    import socket

    from dossier.client import with_running_inspector
    from dossier.services import ensure_services, stop_services
    from dossier.services.process import free_ports
    from workflows.visibility import INSPECTOR_MEMO

    preferred = free_ports(1)[0]
    settings = Settings(dossier_home=tmp_path, database_url=database_url, s3_endpoint=endpoints.s3_endpoint,
                        s3_access_key=endpoints.s3_access_key, s3_secret_key=endpoints.s3_secret_key,
                        s3_bucket=s3_bucket, inspector_port=preferred,
                        temporal_task_queue=f"inspector-link-{uuid.uuid4().hex[:8]}")
    assert settings.inspector_url is None
    assert with_running_inspector(settings).inspector_url == f"http://127.0.0.1:{preferred}"  # nothing runs yet
    busy = socket.socket()  # the preferred port is taken: the service falls back to a free one
    busy.bind(("127.0.0.1", preferred))
    busy.listen()
    try:
        await asyncio.to_thread(ensure_services, settings, ["inspector"])
        async with graph_deps.sessions() as session, session.begin():
            account_id = await conversations.create_account(session, name="inspector links")
        client = DossierClient(deps=graph_deps, temporal=temporal_env.client, settings=settings,
                               account_id=account_id, poll_seconds=0.2)
        base = client.settings.inspector_url
        assert base is not None and base.startswith("http://127.0.0.1:") and base != f"http://127.0.0.1:{preferred}"
        async with build_worker(temporal_env.client, graph_deps, task_queue=settings.temporal_task_queue,
                                workflow_failure_exception_types=[Exception], providers=ModelProviders()):
            outcome = await client.chat("Which region drove Q3 2026 revenue?")
        described = await temporal_env.client.get_workflow_handle(outcome.workflow_id).describe()
        assert await described.static_summary() == f"agent turn · chat · {base}/conversations/{outcome.conversation_id}"
        assert (await described.memo())[INSPECTOR_MEMO] == base
        async with httpx.AsyncClient() as http:  # the link's base is the inspector itself
            assert (await http.get(f"{base}/healthz")).status_code == 200
        # A URL set explicitly wins over the running service.
        assert with_running_inspector(settings.model_copy(update={"inspector_url": "http://inspector.example"})
                                      ).inspector_url == "http://inspector.example"
    finally:
        busy.close()
        assert await asyncio.to_thread(stop_services, settings, ["inspector"]) == ["inspector"]


async def test_the_isolation_prober_covers_every_page_and_counts_one_that_reads_with_the_owners_account(
        accounts: tuple[Account, Account], graph_deps: GraphDeps, settings: Settings, endpoints,
        monkeypatch: pytest.MonkeyPatch):
    from sqlalchemy import text

    from dossier.inspector import reads
    from harness.harden.isolation import collect_ids
    from harness.harden.probe import Prober
    from harness.harden.isolation_inspector import inspector_paths
    from harness.harden.report import Figures
    from harness.harden.stack import Stack

    a, b = accounts
    stack = Stack(settings=settings, endpoints=endpoints, deps=graph_deps, services=("postgres", "s3"))
    mine, theirs = await collect_ids(stack, a.id), await collect_ids(stack, b.id)
    clean = Prober(Figures(quick=True))
    await inspector_paths(stack, clean, mine, theirs)
    assert clean.attempts >= 30 and clean.denied == clean.attempts, clean.figures.findings

    # Deliberate break: the run and provenance pages read with the owner's account instead of the viewer's.
    async def owner(table: str, record_id: str, fallback: str) -> str:
        async with graph_deps.sessions() as session:
            found = await session.scalar(text(f"SELECT account_id FROM {table} WHERE id::text=:i"), {"i": record_id})
        return found or fallback

    run_view, provenance = reads.run_view, reads.provenance

    async def leaky_run(deps: GraphDeps, account_id: str, model_run_id: str, **options):
        return await run_view(deps, await owner("model_runs", model_run_id, account_id), model_run_id, **options)

    async def leaky_provenance(deps: GraphDeps, account_id: str, kind: str, record_id: str, **options):
        table = {"artifact": "tool_artifacts", "memory": "tool_memories", "tool_call": "tool_calls",
                 "message": "messages"}[kind]
        return await provenance(deps, await owner(table, record_id, account_id), kind, record_id, **options)

    monkeypatch.setattr(reads, "run_view", leaky_run)
    monkeypatch.setattr(reads, "provenance", leaky_provenance)
    broken = Prober(Figures(quick=True))
    await inspector_paths(stack, broken, mine, theirs)
    leaked = {f["what"] for f in broken.figures.findings}
    assert {"inspector /runs/{model_run_id} is not denied like an unknown id",
            "inspector /records/artifact/{artifact_id} is not denied like an unknown id",
            "inspector /records/artifact/{artifact_id}?reveal=1 is not denied like an unknown id"} <= leaked, leaked


async def test_what_if_replays_a_conversation_and_names_an_unknown_policy(app: httpx.AsyncClient,
                                                                         accounts: tuple[Account, Account]):
    from policy.versions import registered_names

    a, b = accounts
    lean = registered_names()[-1]
    page = await app.get("/what-if", params={"policy": lean, "conversation": a.conversation_id}, headers=_as(a))
    assert page.status_code == 200 and "Assemblies" in page.text and f"/runs/{a.run_id}" in page.text
    unknown = await app.get("/what-if", params={"policy": "no-such-policy/9", "conversation": a.conversation_id},
                            headers=_as(a))
    assert unknown.status_code == 400 and "unknown policy version" in unknown.text
    foreign = await app.get("/what-if", params={"policy": lean, "conversation": b.conversation_id}, headers=_as(a))
    missing = await app.get("/what-if", params={"policy": lean, "conversation": str(uuid.uuid4())}, headers=_as(a))
    assert foreign.status_code == missing.status_code == 404 and foreign.text == missing.text
    diff = await app.get(f"/runs/{a.run_id}/diff", headers=_as(a))
    assert diff.status_code == 200 and "Shared prefix" in diff.text
    # The turn's first call has no previous one: said so for the viewer's own run, a 404 for anyone else's.
    first = await app.get(f"/runs/{a.other_run_id}/diff", headers=_as(a))
    assert first.status_code == 200 and "first call" in first.text
    assert (await app.get(f"/runs/{b.other_run_id}/diff", headers=_as(a))).status_code == 404


async def test_a_plain_viewer_crawling_every_page_never_sees_a_secret_calls_error(
        temporal_env: WorkflowEnvironment, graph_deps: GraphDeps) -> None:
    """Errors of secret-class calls are secret-class content: a failed call's error, a retrying call's
    attempts, on their tool-call, artifact and memory pages and in a later run's replay column. A plain
    viewer crawling every page the inspector links to sees none of it; a viewer who may reveal, asking on
    the artifact page, does."""
    from activities.ingest import record_attempt_failure
    from harness.harden.crawl import crawl

    account = await _account(temporal_env, graph_deps, "secret errors")
    participant = await _participant(graph_deps, account)
    canary = f"sk-live-{uuid.uuid4().hex}"

    async def secret_call(name: str) -> str:
        call = await begin_tool_call(graph_deps, account.id, account.conversation_id, NewToolCall(
            branch_id=account.branch_id, participant_id=participant, call_id=f"call_{uuid.uuid4().hex[:12]}",
            name=name, arguments={"name": "stripe"}, runtime_kind=RuntimeKind.CHAT,
            privacy=PrivacyClass.SECRET_ADJACENT))
        return call.id

    failed = await secret_call("vault.rotate")
    await record_attempt_failure(graph_deps, account.id, failed, attempt=1, final=True,
                                 error=f"AuthError: key {canary} was rejected")
    failed_result = await ingest_tool_result(graph_deps, account.id, failed, ToolOutcome(
        status=ToolCallStatus.FAILED, result=f"AuthError: key {canary} was rejected".encode(),
        content_type="text/plain"))
    retrying = await secret_call("vault.read_secret")
    await record_attempt_failure(graph_deps, account.id, retrying, attempt=1, final=False,
                                 error=f"Timeout reading {canary}")
    # A later turn, so a run's replay column is taken at a snapshot holding both calls.
    task_queue = f"inspector-{uuid.uuid4().hex[:8]}"
    client = DossierClient(deps=graph_deps, temporal=temporal_env.client,
                           settings=Settings(temporal_task_queue=task_queue), account_id=account.id,
                           poll_seconds=0.2)
    async with build_worker(temporal_env.client, graph_deps, task_queue=task_queue,
                            workflow_failure_exception_types=[Exception], providers=ModelProviders()):
        later = await client.chat("And Q4?", conversation_id=account.conversation_id, branch_id=account.branch_id)
    assert later.result is not None

    application = create_app(graph_deps, secret=SECRET, temporal_ui="http://127.0.0.1:8233")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application),
                                 base_url="http://inspector.test") as http:
        pages = await crawl(http, issue_token(SECRET, account.id))
        revealing = issue_token(SECRET, account.id, reveal=True)
        artifact_page = f"/records/artifact/{failed_result.artifact.id}"
        revealed = (await http.get(f"{artifact_page}?reveal=1",
                                   headers={"Authorization": f"Bearer {revealing}"})).text
        runs = [(await http.get(f"/runs/{run}?reveal=1", headers={"Authorization": f"Bearer {revealing}"})).text
                for run in later.result.model_run_ids]
    crawled = {url for url, (status, _) in pages.items() if status == 200}
    assert {f"/records/tool_call/{failed}", f"/records/tool_call/{retrying}", artifact_page,
            f"/records/memory/{failed_result.memory.id}", *(f"/runs/{run}" for run in later.result.model_run_ids)} \
        <= crawled, sorted(crawled)
    leaks = [re.sub(r"[0-9a-f-]{36}", "<id>", url) for url, (_, body) in pages.items() if canary in body]
    assert not leaks, leaks
    assert canary in revealed and any(canary in page for page in runs)
