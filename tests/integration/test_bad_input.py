"""Bad input gets a clear, typed error and loses nothing (issue 11, class 6).

Each case goes through a public entry point, the Python client or the
``dossier`` command, and checks two things: the error is the typed one (for
the command: one line on stderr and a non-zero exit), and no row was written
(every graph table is counted before and after). The commands run as real
processes against the session's Postgres, S3 and Temporal dev server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from activities.deps import GraphDeps
from cli_inprocess import run_cli
from contracts import TurnResult
from dossier.client import AnswerRefusedError, ClientError, DossierClient, InvalidInputError
from dossier.services.models import Endpoints
from policy.enums import ToolCallStatus
from store import conversations, messages
from store import tools as tool_store
from store.errors import NotFoundError

ROOT = Path(__file__).resolve().parents[2]

TABLES = ("conversations", "branches", "participants", "messages", "model_runs", "tool_calls", "tool_artifacts",
          "tool_memories", "context_assemblies", "continuation_checkpoints")
"""Every table a bad request could leave something in."""

PICK = "I want to review one of the sales files; let me pick it."
"""Makes ``scripted:picker`` open a deferred ``user.pick_file`` call."""


async def _counts(deps: GraphDeps) -> dict[str, int]:
    async with deps.sessions() as session:
        return {table: (await session.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one()
                for table in TABLES}


# --------------------------------------------------------------------------- the client


@pytest.mark.parametrize("message", ["", "   \n\t ", "nul \x00 byte", "bad \udcff utf-8", "x" * (4 * 1024 * 1024 + 1)],
                         ids=["empty", "blank", "nul", "surrogate", "too-long"])
async def test_a_bad_message_is_refused_before_anything_is_written(dossier: DossierClient, message: str) -> None:
    before = await _counts(dossier.deps)
    with pytest.raises(InvalidInputError):
        await dossier.chat(message)
    conversation_id, _ = await dossier.new_conversation("existing")
    existing = await _counts(dossier.deps)
    for call in (lambda: dossier.chat(message, conversation_id=conversation_id),
                 lambda: dossier.multi(message, ["scripted:analyst", "scripted:echo"]),
                 lambda: dossier.subagents(message, [("scripted:researcher", "Analyse Q3")]),
                 lambda: dossier.subagents("Audit", [("scripted:researcher", message)]),
                 lambda: dossier.discuss(message, ["scripted:panelist"]),
                 lambda: dossier.discuss("Topic", ["scripted:panelist"], directive=message)):
        with pytest.raises(InvalidInputError):
            await call()
    assert await _counts(dossier.deps) == existing
    assert existing["conversations"] == before["conversations"] + 1


@pytest.mark.parametrize("kwargs", [
    {"conversation_id": "not-a-uuid"},
    {"conversation_id": str(uuid.uuid4()), "branch_id": "not-a-uuid"},
])
async def test_a_malformed_id_is_refused_before_anything_is_written(dossier: DossierClient, kwargs: dict) -> None:
    before = await _counts(dossier.deps)
    with pytest.raises(InvalidInputError, match="not a valid id"):
        await dossier.chat("hello", **kwargs)
    with pytest.raises(InvalidInputError, match="not a valid id"):
        await dossier.runs.list("not-a-uuid")
    with pytest.raises(InvalidInputError, match="not a valid id"):
        await dossier.answer("not-a-uuid", "{}")
    assert await _counts(dossier.deps) == before


async def test_runs_of_an_unknown_conversation_is_an_error(dossier: DossierClient) -> None:
    with pytest.raises(ClientError, match="not found"):
        await dossier.runs.list(str(uuid.uuid4()))


async def test_forking_at_a_message_of_a_sibling_branch_is_refused(dossier: DossierClient) -> None:
    conversation_id, root = await dossier.new_conversation("siblings")
    scope = await dossier._scope(conversation_id, None, "")
    first = await dossier.say(scope, "first")
    left = await dossier.fork(conversation_id, first, name="left")
    right = await dossier.fork(conversation_id, first, name="right")
    on_left = await dossier.say(scope.model_copy(update={"branch_id": left}), "only on the left")
    before = await _counts(dossier.deps)
    with pytest.raises(InvalidInputError, match="not in the lineage"):
        await dossier.fork(conversation_id, on_left, branch_id=right)
    with pytest.raises(InvalidInputError, match="not a valid id"):
        await dossier.fork(conversation_id, "not-a-uuid", branch_id=right)
    assert await _counts(dossier.deps) == before
    assert root not in (left, right)


async def _deferred_call(dossier: DossierClient) -> tuple[str, str]:
    pending = await dossier.chat(PICK, model="scripted:picker", wait=False)
    (tool_call_id,) = await dossier.wait_until_waiting(pending.workflow_id)
    return pending.workflow_id, tool_call_id


async def _call_status(dossier: DossierClient, tool_call_id: str) -> ToolCallStatus:
    async with dossier.deps.sessions() as session:
        return (await tool_store.get_tool_call(session, dossier.account_id, tool_call_id)).status


async def _has_artifact(dossier: DossierClient, tool_call_id: str) -> bool:
    async with dossier.deps.sessions() as session:
        try:
            await tool_store.get_artifact_for_tool_call(session, dossier.account_id, tool_call_id)
        except NotFoundError:
            return False
    return True


@pytest.mark.parametrize("answer", ["sales/2026-q2-orders.csv", "{'path': 'a.csv'}", "", "  ", "{\"path\": \"a\x00\"}"])
async def test_a_non_json_answer_to_the_picker_is_refused_and_the_call_stays_open(
    dossier: DossierClient, answer: str
) -> None:
    workflow_id, tool_call_id = await _deferred_call(dossier)
    before = await _counts(dossier.deps)
    with pytest.raises(InvalidInputError):
        await dossier.answer(tool_call_id, answer)
    assert await _counts(dossier.deps) == before
    assert await _call_status(dossier, tool_call_id) is ToolCallStatus.DEFERRED
    assert await dossier.wait_until_waiting(workflow_id) == (tool_call_id,)
    # The call was not consumed: a proper answer still resumes the turn.
    await dossier.answer(tool_call_id, json.dumps({"path": "sales/2026-q2-orders.csv"}))
    done = await dossier.temporal.get_workflow_handle(workflow_id, result_type=TurnResult).result()
    assert done.status == "answered"
    assert await _call_status(dossier, tool_call_id) is ToolCallStatus.SUCCEEDED


async def test_answering_a_call_whose_workflow_ended_is_refused_and_leaves_the_call_deferred(
    dossier: DossierClient,
) -> None:
    workflow_id, tool_call_id = await _deferred_call(dossier)
    await dossier.temporal.get_workflow_handle(workflow_id).terminate(reason="test: the turn ends while waiting")
    before = await _counts(dossier.deps)
    with pytest.raises(AnswerRefusedError, match="nothing was captured"):
        await dossier.answer(tool_call_id, json.dumps({"path": "sales/2026-q2-orders.csv"}))
    assert await _counts(dossier.deps) == before
    assert await _call_status(dossier, tool_call_id) is ToolCallStatus.DEFERRED
    assert not await _has_artifact(dossier, tool_call_id)


async def test_a_signal_that_fails_after_the_capture_rolls_the_capture_back(
    dossier: DossierClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workflow ends between the check and the signal: capture and signal are one step."""
    workflow_id, tool_call_id = await _deferred_call(dossier)
    before = await _counts(dossier.deps)

    async def ended(*args: object, **kwargs: object) -> None:
        raise RPCError("workflow execution already completed", RPCStatusCode.NOT_FOUND, b"")

    monkeypatch.setattr("temporalio.client.WorkflowHandle.signal", ended)
    with pytest.raises(AnswerRefusedError, match="nothing was captured"):
        await dossier.answer(tool_call_id, json.dumps({"path": "sales/2026-q2-orders.csv"}))
    monkeypatch.undo()
    assert await _counts(dossier.deps) == before
    assert await _call_status(dossier, tool_call_id) is ToolCallStatus.DEFERRED
    assert not await _has_artifact(dossier, tool_call_id)
    await dossier.answer(tool_call_id, json.dumps({"path": "sales/2026-q2-orders.csv"}))
    assert await _call_status(dossier, tool_call_id) is ToolCallStatus.SUCCEEDED
    await dossier.temporal.get_workflow_handle(workflow_id).result()


# --------------------------------------------------------------------------- the command line


def _cli_env(tmp_path: Path, database_url: str, endpoints: Endpoints, s3_bucket: str,
             temporal_env: WorkflowEnvironment) -> dict[str, str]:
    return {
        **os.environ,
        "DOSSIER_HOME": str(tmp_path / ".dossier"),
        "DATABASE_URL": database_url,
        "S3_ENDPOINT": endpoints.s3_endpoint,
        "S3_ACCESS_KEY": endpoints.s3_access_key or "",
        "S3_SECRET_KEY": endpoints.s3_secret_key or "",
        "S3_REGION": endpoints.s3_region,
        "S3_BUCKET": s3_bucket,
        "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
        "TEMPORAL_TASK_QUEUE": f"dossier-bad-input-cli-{uuid.uuid4().hex[:8]}",  # no worker: turns stay queued
    }


@pytest.fixture
def cli(tmp_path: Path, database_url: str, endpoints: Endpoints, s3_bucket: str, temporal_env: WorkflowEnvironment,
        graph_deps: GraphDeps):
    """Run ``dossier ARGS`` through the CLI's ``main`` in this process, on the session's services."""
    base = _cli_env(tmp_path, database_url, endpoints, s3_bucket, temporal_env)

    def run(*args: str | bytes, stdin: bytes = b"", env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[bytes]:
        return run_cli(args, env={**base, **(env or {})}, cwd=tmp_path, stdin=stdin)

    return run


@pytest.fixture
def cli_process(tmp_path: Path, database_url: str, endpoints: Endpoints, s3_bucket: str,
                temporal_env: WorkflowEnvironment, graph_deps: GraphDeps):
    """Run ``dossier ARGS`` as a real process on the session's services; returns the completed process."""
    base = _cli_env(tmp_path, database_url, endpoints, s3_bucket, temporal_env)

    def run(*args: str | bytes, stdin: bytes = b"", env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "dossier.cli", *args], input=stdin, env={**base, **(env or {})},
                              cwd=tmp_path, capture_output=True, timeout=120)

    return run


def _one_line_error(proc: subprocess.CompletedProcess[bytes]) -> str:
    assert proc.returncode != 0, proc
    lines = proc.stderr.decode(errors="replace").splitlines()
    assert len(lines) == 1 and lines[0].startswith("dossier: error: "), proc.stderr
    assert proc.stdout == b""
    return lines[0]


@pytest.mark.parametrize(("args", "stdin", "says"), [
    (("runs", "--conversation", "not-a-uuid"), b"", "not a valid id"),
    (("chat", "   "), b"", "blank"),
    (("chat", b"bad \xff utf-8"), b"", "UTF-8"),
    (("chat", "-"), b"a NUL \x00 byte", "NUL"),
    (("chat", "-"), b"bad \xc3\x28 utf-8", "UTF-8"),
    (("chat", "-"), b"\n", "blank"),
    (("chat", "-"), b"x" * (4 * 1024 * 1024 + 1), "limit"),
    (("chat", "--conversation", "not-a-uuid", "hello"), b"", "not a valid id"),
    (("branch", "fork", "--conversation", "not-a-uuid", "--at", "x"), b"", "not a valid id"),
    (("answer", "not-a-uuid", "{}"), b"", "not a valid id"),
    (("discuss", "--model", "scripted:panelist", "--rounds", "0", "Topic"), b"", "rounds"),
    (("retention", "run", "--now", "2027-01-01"), b"", "needs a time zone"),
    (("retention", "run", "--now", "0001-01-01T00:00:00+00:00"), b"", "must lie between"),
])
async def test_every_cli_error_is_one_line_with_a_non_zero_exit_and_nothing_written(
    cli, graph_deps: GraphDeps, args: tuple, stdin: bytes, says: str
) -> None:
    before = await _counts(graph_deps)
    line = _one_line_error(cli(*args, stdin=stdin))
    assert says in line
    assert await _counts(graph_deps) == before


UNKNOWN = str(uuid.uuid4())


@pytest.mark.parametrize(("args", "env"), [
    (("chat", "--model", "nonsense:model", "hi"), {}),
    (("chat", "--model", "scripted:nope", "hi"), {}),
    (("chat", "--model", "scripted:", "hi"), {}),
    (("chat", "--conversation", UNKNOWN, "hi"), {}),
    (("chat", "--branch", UNKNOWN, "hi"), {}),
    (("answer", UNKNOWN, "{}"), {}),
    (("answer", UNKNOWN, "{not json"), {}),
    (("multi", "--model", "scripted:echo", "--model", "bogus:x", "hi"), {}),
    (("discuss", "--model", "scripted:panelist", "--rounds", "two", "t"), {}),
    (("subagents", "--task", "scripted:researcher=", "hi"), {}),
    (("subagents", "--task", "nope:x=do it", "hi"), {}),
    (("subagents", "--child-timeout", "-5", "--task", "scripted:researcher=x", "hi"), {}),
    (("schedule", "create", "bad-every", "--every", "0", "p"), {}),
    (("schedule", "create", "bad-prompt", "--every", "60", " "), {}),
    (("schedule", "create", "bad-model", "--every", "60", "--model", "x:y", "p"), {}),
    (("schedule", "trigger", f"nope-{UNKNOWN[:8]}"), {}),
    (("services", "up", "mysql"), {}),
    (("runs",), {"DATABASE_URL": "mysql://u@h/db"}),  # a bad setting is one line too
    (("runs",), {"S3_ENDPOINT": "http://127.0.0.1:1"}),
    (("runs",), {"MESSAGE_MAX_BYTES": "0"}),
    (("frobnicate",), {}),
])
async def test_other_refused_commands_are_one_line_too(cli, graph_deps: GraphDeps, args: tuple, env: dict) -> None:
    before = await _counts(graph_deps)
    _one_line_error(cli(*args, env=env))
    assert await _counts(graph_deps) == before


async def test_an_agent_naming_skills_with_no_skills_folder_is_refused_before_anything_is_written(
        cli, graph_deps: GraphDeps, tmp_path) -> None:
    agents = tmp_path / "agents.toml"
    agents.write_text('[agents.analyst]\nmodel = "scripted:echo"\nskills = ["csv-analysis"]\n')
    before = await _counts(graph_deps)
    line = _one_line_error(cli("chat", "--model", "analyst", "hi", env={"DOSSIER_AGENTS_FILE": str(agents)}))
    assert "unknown skill(s) ['csv-analysis']" in line and "no skills folder" in line
    assert await _counts(graph_deps) == before


async def test_chat_reads_a_message_longer_than_argv_allows_from_stdin(cli_process, graph_deps: GraphDeps) -> None:
    message = ("Summarise these orders: " + "order,region,revenue\n" * 150_000)[:3 * 1024 * 1024]
    with pytest.raises(OSError):  # E2BIG: the kernel refuses such an argv
        subprocess.run([sys.executable, "-c", "pass", message], capture_output=True)
    proc = cli_process("chat", "--no-wait", "-", stdin=message.encode() + b"\n")
    assert proc.returncode == 0, proc.stderr
    conversation_id = next(line.split()[1] for line in proc.stdout.decode().splitlines()
                           if line.startswith("conversation"))
    async with graph_deps.sessions() as session:
        stored = (await session.execute(text("SELECT content FROM messages WHERE conversation_id = :c"),
                                        {"c": conversation_id})).scalars().all()
    assert stored == [message]  # exactly what was piped, less the one trailing newline


@pytest.mark.parametrize(("args", "stdin", "env"), [
    (("chat", "-"), b"a NUL \x00 byte", {}),
    (("runs",), b"", {"DATABASE_URL": "mysql://u@h/db"}),
    (("frobnicate",), b"", {}),
])
async def test_a_real_process_exits_non_zero_with_the_same_one_line(cli, cli_process, args: tuple, stdin: bytes,
                                                                     env: dict) -> None:
    """The matrices above run in-process; a few cases again as a process: exit code, stderr, nothing on stdout."""
    process, in_process = cli_process(*args, stdin=stdin, env=env), cli(*args, stdin=stdin, env=env)
    assert _one_line_error(process) == _one_line_error(in_process)
    assert process.returncode == in_process.returncode


async def test_an_unknown_conversation_is_a_one_line_error(cli) -> None:
    line = _one_line_error(cli("runs", "--conversation", str(uuid.uuid4())))
    assert "not found" in line
