"""Values Postgres cannot hold (U+0000, non-finite JSON numbers) at every write path (issue 11, bad input).

A tool result, a model's arguments, an error, a subagent's report or an id
can carry U+0000, which neither ``text`` nor ``jsonb`` stores, or a ``NaN``
that ``jsonb`` refuses. Before the store's column types handled them, each
write raised an untyped asyncpg error: the result was not ingested, and a
text result with a NUL byte was ingested but made every later assembly of
its participant fail to save. Now each is stored in a fixed form (U+FFFD, the
number's name as a string) with the exact bytes in the artifact, the context
assembles and saves, and an id with U+0000 is a plain ``NotFoundError``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from activities.context import assemble_context
from activities.deps import GraphDeps
from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result, record_attempt_failure
from activities.promotion import promote_child_results
from policy.enums import MessageRole, RuntimeKind, ToolCallStatus
from policy.records import EvidenceRequest, GenerationBoundary
from policy.tools import ToolCatalog, ToolSpec
from store import assemblies, conversations, messages, tools
from store.errors import NotFoundError
from store.payloads import read_artifact_payload
from store.writes import NewMessage, NewToolCall

pytestmark = pytest.mark.integration

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
NUL, FFFD = "\x00", "\ufffd"
CATALOG = ToolCatalog(tools=(
    ToolSpec(name="probe.json", result_kind="json", key_args=("path",)),
    ToolSpec(name="probe.text", result_kind="text", key_args=("path",)),
))


async def test_nul_and_nan_are_stored_in_a_fixed_form_and_the_context_still_saves(graph_deps: GraphDeps) -> None:
    deps = replace(graph_deps, catalog=CATALOG)
    async with deps.sessions() as session, session.begin():
        account = await conversations.create_account(session, name="unstorable values")
        conv = await conversations.create_conversation(session, account, title="t")
        analyst = await conversations.add_participant(session, account, conv.id, name="Analyst", provider="scripted",
                                                      model="m", system_prompt="You are Analyst.")
        child = await conversations.add_participant(session, account, conv.id, name="Researcher", provider="scripted",
                                                    model="m", parent_participant_id=analyst.id)
        await messages.append_message(session, account, conv.id, NewMessage(
            branch_id=conv.root_branch_id, role=MessageRole.USER, content="Read the files."))
    branch = conv.root_branch_id

    async def call(name: str, call_id: str, arguments: dict) -> str:
        return (await begin_tool_call(deps, account, conv.id, NewToolCall(
            branch_id=branch, participant_id=analyst.id, call_id=call_id, name=name, arguments=arguments,
            runtime_kind=RuntimeKind.CHAT, at=T0))).id

    # A model's arguments with U+0000 in a key and a value, and non-finite numbers.
    args_call = await call("probe.json", "call_args", {"path": f"a{NUL}b", f"k{NUL}": [float("nan"), float("-inf")]})
    # A JSON result with escaped U+0000 in a key and a value, and a NaN token; a text result with a NUL byte.
    json_raw = b'{"na\\u0000me": "x\\u0000y", "ratio": NaN, "rows": 3}'
    text_raw = b"first\x00line\nsecond line\n"
    json_call = await call("probe.json", "call_json", {"path": "data.json"})
    text_call = await call("probe.text", "call_text", {"path": "notes.txt"})
    failed_call = await call("probe.json", "call_failed", {"path": "gone.json"})

    json_result = await ingest_tool_result(deps, account, json_call, ToolOutcome(
        status=ToolCallStatus.SUCCEEDED, result=json_raw, content_type="application/json"), captured_at=T0)
    text_result = await ingest_tool_result(deps, account, text_call, ToolOutcome(
        status=ToolCallStatus.SUCCEEDED, result=text_raw, content_type="text/plain"), captured_at=T0)
    await ingest_tool_result(deps, account, args_call, ToolOutcome(
        status=ToolCallStatus.SUCCEEDED, result=b'{"ok": true}', content_type="application/json"), captured_at=T0)
    await record_attempt_failure(deps, account, failed_call, attempt=1, error=f"no such file{NUL}: gone.json",
                                 final=True, at=T0)
    await promote_child_results(deps, account, conv.id, branch, child_participant_id=child.id,
                                parent_participant_id=analyst.id, tool_call_ids=[],
                                report=f"done{NUL} with 3 rows", outcome="succeeded", at=T0)
    async with deps.sessions() as session, session.begin():
        await messages.append_message(session, account, conv.id, NewMessage(
            branch_id=branch, role=MessageRole.ASSISTANT, content=f"Read them{NUL}.", author_participant_id=analyst.id))
        await messages.append_message(session, account, conv.id, NewMessage(
            branch_id=branch, role=MessageRole.USER, content="Go on."))

    async with deps.sessions() as session:
        stored_args = (await tools.get_tool_call(session, account, args_call)).arguments
        failed = await tools.get_tool_call(session, account, failed_call)
        raw_json = await read_artifact_payload(session, deps.artifacts, account, json_result.artifact.id)
        raw_text = await read_artifact_payload(session, deps.artifacts, account, text_result.artifact.id)
    assert stored_args == {"path": f"a{FFFD}b", f"k{FFFD}": ["NaN", "-Infinity"]}
    assert failed.last_error == f"no such file{FFFD}: gone.json"
    assert (raw_json, raw_text) == (json_raw, text_raw), "the artifact keeps the exact bytes"

    boundary = GenerationBoundary(account_id=account, conversation_id=conv.id, branch_id=branch,
                                  participant_id=analyst.id, runtime_kind=RuntimeKind.CHAT, provider_route="local",
                                  now=T0 + timedelta(minutes=1),
                                  evidence_requests=(EvidenceRequest(artifact_id=text_result.artifact.id),))
    assembled = await assemble_context(deps, boundary)
    sent = assembled.result.to_openai()
    assert not any(NUL in (m.get("content") or "") for m in sent)
    shown = json.dumps(sent, ensure_ascii=False)
    assert f"first{FFFD}line\\nsecond line" in shown, "raw evidence shows U+0000 as U+FFFD, the rest exact"
    assert f"na{FFFD}me=x{FFFD}y" in shown and f"report: done{FFFD} with 3 rows" in shown
    async with deps.sessions() as session:
        saved = await assemblies.get_context_assembly(session, account, assembled.assembly_id, with_messages=True)
    assert list(saved.messages) == sent, "the recorded assembly is what the model is sent"

    # An id holding U+0000 matches nothing: a plain NotFoundError, at assembly and at lookup.
    with pytest.raises(NotFoundError):
        await assemble_context(deps, boundary.model_copy(update={"branch_id": NUL}))
    async with deps.sessions() as session:
        with pytest.raises(NotFoundError):
            await tools.get_tool_call(session, account, f"{args_call[:8]}{NUL}")
