"""Arguments and results of any size and shape go through the live capture path (issue 25, ingest anything).

A coding agent writes a file whole, sends a patch or a long shell command: a few KB of arguments. Before the
subject key was bounded, the memory's subject (the tool name and the canonical JSON of every argument) went
into a btree index whose rows hold at most 2,704 bytes, and ingestion failed with ``index row size ...
exceeds btree version 4 maximum 2704``. Now a long subject keeps a readable head and a digest of the whole,
so equal arguments still share a subject (and supersede) and different ones never do.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from activities.context import assemble_context
from activities.deps import GraphDeps
from activities.ingest import Ingested, ToolOutcome, begin_tool_call, ingest_tool_result
from policy.enums import MessageRole, RuntimeKind, ToolCallStatus
from policy.records import GenerationBoundary
from policy.tools import ToolCatalog, ToolSpec
from store import conversations, messages, tool_memories, tools
from store.payloads import read_artifact_payload
from store.writes import NewMessage, NewToolCall

pytestmark = pytest.mark.integration

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
CATALOG = ToolCatalog(tools=(
    ToolSpec(name="editor.write", result_kind="text"),  # no key_args: every argument identifies the call
    ToolSpec(name="shell.run", result_kind="text"),
    ToolSpec(name="probe.json", result_kind="json"),
))
# ~12 KB that Postgres cannot compress below the index row limit (a real file's text rarely repeats itself).
FILE_BODY = "".join(f"def handler_{i}(request):  # ünïcödé ✓\n    return {hashlib.sha256(str(i).encode()).hexdigest()!r}\n"
                    for i in range(120))


async def _conversation(deps: GraphDeps, name: str) -> tuple[str, str, str, str]:
    async with deps.sessions() as session, session.begin():
        account = await conversations.create_account(session, name=name)
        conv = await conversations.create_conversation(session, account, title="t")
        coder = await conversations.add_participant(session, account, conv.id, name="Coder", provider="scripted",
                                                    model="m", system_prompt="You are Coder.")
        await messages.append_message(session, account, conv.id, NewMessage(
            branch_id=conv.root_branch_id, role=MessageRole.USER, content="Fix the handlers."))
    return account, conv.id, conv.root_branch_id, coder.id


async def _run(deps: GraphDeps, account: str, conv: str, branch: str, participant: str, call_id: str,
               name: str, arguments: dict, result: bytes, content_type: str = "text/plain") -> Ingested:
    call = await begin_tool_call(deps, account, conv, NewToolCall(
        branch_id=branch, participant_id=participant, call_id=call_id, name=name, arguments=arguments,
        runtime_kind=RuntimeKind.CHAT, at=T0))
    return await ingest_tool_result(deps, account, call.id, ToolOutcome(
        status=ToolCallStatus.SUCCEEDED, result=result, content_type=content_type), captured_at=T0)


async def test_a_file_written_whole_is_ingested_and_supersedes_by_its_whole_arguments(graph_deps: GraphDeps) -> None:
    deps = replace(graph_deps, catalog=CATALOG)
    account, conv, branch, coder = await _conversation(deps, "large arguments")
    write = {"path": "app/handlers.py", "content": FILE_BODY}
    first = await _run(deps, account, conv, branch, coder, "c1", "editor.write", write, b"wrote 10.4 KB")
    again = await _run(deps, account, conv, branch, coder, "c2", "editor.write", write, b"wrote 10.4 KB again")
    other = await _run(deps, account, conv, branch, coder, "c3", "editor.write",
                       {"path": "app/handlers.py", "content": FILE_BODY + "# one more line\n"}, b"wrote 10.5 KB")
    command = {"command": "python -m pytest " + " ".join(
        f"tests/test_{hashlib.md5(str(i).encode()).hexdigest()}.py" for i in range(150))}
    await _run(deps, account, conv, branch, coder, "c4", "shell.run", command, b"150 passed in 3.2s\n")

    async with deps.sessions() as session:
        memories = [await tool_memories.get_tool_memory(session, account, done.memory.id)
                    for done in (first, again, other)]
        stored = await tools.get_tool_call(session, account, first.artifact.tool_call_id)
    assert stored.arguments == write, "the call keeps its arguments whole"
    keys = [memory.subject_key for memory in memories]
    assert all(len(key.encode()) <= 512 for key in keys), keys
    assert keys[0].startswith('editor.write:{"content":"def handler_0(request):'), "the head stays readable"
    assert keys[0] == keys[1] != keys[2], "equal arguments share a subject, different ones do not"
    assert memories[0].superseded_by == memories[1].id
    assert memories[2].superseded_by is None

    boundary = GenerationBoundary(account_id=account, conversation_id=conv, branch_id=branch, participant_id=coder,
                                  runtime_kind=RuntimeKind.CHAT, provider_route="local",
                                  now=T0 + timedelta(minutes=1))
    assembled = await assemble_context(deps, boundary)
    assert "150 passed" in json.dumps(assembled.result.to_openai())


_leaf = st.one_of(
    st.text(max_size=40),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),  # binary-looking text
)
_json_values = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=30)
_big_text = st.integers(min_value=0, max_value=3 * 1024 * 1024).map(lambda n: ("Zeile ✓ " * (n // 10 + 1))[:n])


def _deep(depth: int) -> object:
    value: object = "bottom"
    for level in range(depth):
        value = {f"ébène_{level}": [value]}
    return value


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(arguments=st.dictionaries(st.text(min_size=1, max_size=30), _json_values, max_size=5),
       big_argument=_big_text, big_result=_big_text, depth=st.integers(min_value=0, max_value=120),
       as_json=st.booleans())
async def test_any_arguments_and_result_are_captured_and_derived(
        graph_deps: GraphDeps, arguments: dict, big_argument: str, big_result: str, depth: int, as_json: bool) -> None:
    deps = replace(graph_deps, catalog=CATALOG)
    account, conv, branch, coder = await _conversation(deps, "any shape")
    arguments = {**arguments, "body": big_argument, "nested": _deep(depth)}
    if as_json:
        result, content_type, name = json.dumps({"text": big_result, "nested": _deep(depth)}).encode(), \
            "application/json", "probe.json"
    else:
        result, content_type, name = big_result.encode(), "text/plain", "shell.run"
    done = await _run(deps, account, conv, branch, coder, "c1", name, arguments, result, content_type)
    async with deps.sessions() as session:
        call = await tools.get_tool_call(session, account, done.artifact.tool_call_id)
        memory = await tool_memories.get_tool_memory(session, account, done.memory.id)
        raw = await read_artifact_payload(session, deps.artifacts, account, done.artifact.id)
    assert call.status == ToolCallStatus.SUCCEEDED
    assert raw == result, "the artifact keeps the exact bytes"
    assert len(memory.subject_key.encode()) <= 512


async def test_a_provider_call_id_of_any_length_is_stored_and_stays_idempotent(graph_deps: GraphDeps) -> None:
    """The provider's call id is the idempotency key (unique per account): a server may send any string."""
    deps = replace(graph_deps, catalog=CATALOG)
    account, conv, branch, coder = await _conversation(deps, "long call ids")
    long_id = "call_" + "".join(hashlib.sha512(str(i).encode()).hexdigest() for i in range(40))  # 5 KB
    other_id = long_id[:-1] + "0"

    async def begin(call_id: str) -> str:
        return (await begin_tool_call(deps, account, conv, NewToolCall(
            branch_id=branch, participant_id=coder, call_id=call_id, name="shell.run",
            arguments={"command": "ls"}, runtime_kind=RuntimeKind.CHAT, at=T0))).id

    first, again, other = await begin(long_id), await begin(long_id), await begin(other_id)
    assert first == again != other, "a repeated id returns the stored call; a different one is a new call"
    async with deps.sessions() as session:
        assert (await tools.get_tool_call_by_call_id(session, account, long_id)).id == first
