"""A real agent turn with an ``openai:`` participant: Temporal, Postgres and S3, the SDK, a scripted HTTP server.

The model is :class:`provider_server.ProviderServer` on 127.0.0.1, reached
through the official ``openai`` SDK exactly as OpenAI or the local model
server would be; the tool runs for real in the worker. Each test scripts what
the "model" answers and checks the turn, the graph and what went over the wire.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from activities.deps import GraphDeps
from activities.tools.registry import default_registry
from dossier.client import DossierClient
from policy.budget import reduced_budget
from policy.enums import ToolCallStatus
from provider_server import ProviderServer, Reply, openai_completion, openai_error, openai_request_problems
from provider_turns import provider_dossier
from store import conversations, messages
from store import tools as tool_store
from store.assemblies import get_context_assembly

QUESTION = "Which region drove Q3 2026 revenue?"
NO_USAGE = {"input_tokens": None, "output_tokens": None, "cache_read_tokens": None, "cache_write_tokens": None}


@pytest.fixture
async def dossier(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps,
                  server: ProviderServer) -> AsyncIterator[DossierClient]:
    """A client and an in-process worker whose ``openai:`` models are the test server."""
    async with provider_dossier(temporal_env, graph_deps, server, "provider test") as client:
        yield client


async def _runs(client: DossierClient, run_ids: tuple[str, ...]) -> list:
    async with client.deps.sessions() as session:
        return [await messages.get_model_run(session, client.account_id, run_id) for run_id in run_ids]


async def _assembly(client: DossierClient, assembly_id: str):
    async with client.deps.sessions() as session:
        return await get_context_assembly(session, client.account_id, assembly_id, with_messages=True)


async def test_a_tool_call_outside_the_participants_allow_list_is_recorded_and_fails_as_not_offered(
    dossier: DossierClient, server: ProviderServer
) -> None:
    server.reply(
        Reply(openai_completion(tool_calls=(("call_d", "diag__flaky", '{"fail_times": 0}'),))),
        Reply(openai_completion("I cannot run that check.")),
    )

    outcome = await dossier.chat(QUESTION, model="openai:gpt-test", tools=["workspace.read_csv"],
                                 system_prompt="Answer briefly.")

    assert outcome.result.status == "answered"
    (tool_call_id,) = outcome.result.tool_call_ids
    async with dossier.deps.sessions() as session:
        call = await tool_store.get_tool_call(session, dossier.account_id, tool_call_id)
        artifact = await tool_store.get_artifact_for_tool_call(session, dossier.account_id, tool_call_id)
        participant = await conversations.get_participant(session, dossier.account_id, outcome.participant_id)
        config = await conversations.participant_config(session, dossier.account_id, outcome.participant_id)
    assert (participant.system_prompt, config) == ("Answer briefly.", {"tools": ["workspace.read_csv"]})
    # Only the allow-list went over the wire; the call to another tool ran nothing and failed for good.
    assert [[tool["function"]["name"] for tool in sent.body["tools"]] for sent in server.received] == [
        ["workspace__read_csv"], ["workspace__read_csv"]]
    assert (call.name, call.status, call.attempts) == ("diag.flaky", ToolCallStatus.FAILED, 1)
    assert artifact.status is ToolCallStatus.FAILED
    seen = (await _assembly(dossier, (await _runs(dossier, outcome.result.model_run_ids))[1].context_assembly_id))
    assert "not offered" in json.dumps(seen.messages)


async def test_an_openai_turn_calls_a_tool_then_answers_and_records_usage(
    dossier: DossierClient, server: ProviderServer
) -> None:
    server.reply(
        Reply(openai_completion(tool_calls=(("call_q3", "workspace__read_csv",
                                             '{"path": "sales/2026-q3-orders.csv"}'),),
                                prompt_tokens=910, completion_tokens=21, cached_tokens=0)),
        Reply(openai_completion("EMEA drove Q3 2026 revenue.", prompt_tokens=1480, completion_tokens=9,
                                cached_tokens=896)),
    )

    outcome = await dossier.chat(QUESTION, model="openai:gpt-test")

    result = outcome.result
    assert result.status == "answered" and outcome.answer == "EMEA drove Q3 2026 revenue."
    assert len(result.model_run_ids) == 2
    # The tool ran in the worker, under its canonical name, and its provider call id is kept.
    (tool_call_id,) = result.tool_call_ids
    async with dossier.deps.sessions() as session:
        call = await tool_store.get_tool_call(session, dossier.account_id, tool_call_id)
        artifact = await tool_store.get_artifact_for_tool_call(session, dossier.account_id, tool_call_id)
    assert (call.name, call.status, dict(call.arguments)) == (
        "workspace.read_csv", ToolCallStatus.SUCCEEDED, {"path": "sales/2026-q3-orders.csv"})
    assert call.call_id == f"{result.model_run_ids[0]}:call_q3"
    assert artifact.status is ToolCallStatus.SUCCEEDED
    # Usage as the provider reported it, on both runs.
    first, second = await _runs(dossier, result.model_run_ids)
    assert first.usage == {"input_tokens": 910, "output_tokens": 21, "cache_read_tokens": 0,
                           "cache_write_tokens": None}
    assert second.usage == {"input_tokens": 1480, "output_tokens": 9, "cache_read_tokens": 896,
                            "cache_write_tokens": None}
    assert first.status == second.status == "succeeded"
    # What went over the wire: each call's stored assembly and the registry's tools, in the SDK's shapes.
    sent_first, sent_second = server.received
    for sent, run in ((sent_first, first), (sent_second, second)):
        assert sent.body["model"] == "gpt-test" and sent.headers["authorization"] == "Bearer sk-test"
        assert sent.body["messages"] == list((await _assembly(dossier, run.context_assembly_id)).messages)
        # A real model is offered every tool but the diag.* drills when its participant names none
        # (and load_skill only when its agent lists skills).
        assert [tool["function"]["name"] for tool in sent.body["tools"]] == [
            tool["function"]["name"] for tool in default_registry().schemas()
            if not tool["function"]["name"].startswith("diag__") and tool["function"]["name"] != "load_skill"]
        assert openai_request_problems(sent.body) == []
    # The second call carries the first one's tool call and its result, paired by id.
    [assistant] = [m for m in sent_second.body["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    [tool_message] = [m for m in sent_second.body["messages"] if m["role"] == "tool"]
    assert assistant["tool_calls"][0]["function"]["name"] == "workspace__read_csv"
    assert tool_message["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert tool_message["content"].startswith("order_id,region,product_line,units,revenue_eur\n")
    # `dossier runs --json`: the model spec and the usage, next to Dossier's own count.
    rows = {row.model_run_id: row.to_json() for row in await dossier.runs.list(outcome.conversation_id)}
    assert rows[first.id]["model"] == rows[second.id]["model"] == "openai:gpt-test"
    assert rows[second.id]["usage"] == second.usage and rows[second.id]["assembled_tokens"] > 0


async def test_a_rate_limited_call_is_retried_after_the_providers_retry_after(
    dossier: DossierClient, server: ProviderServer
) -> None:
    server.reply(
        Reply(openai_error(429, "Rate limit reached", code="rate_limit_exceeded"), status=429,
              headers={"retry-after": "3"}),
        Reply(openai_completion("EMEA.", prompt_tokens=700, completion_tokens=2)),
    )

    outcome = await dossier.chat(QUESTION, model="openai:gpt-test")

    assert outcome.result.status == "answered" and outcome.answer == "EMEA."
    refused, answered = server.received
    # Temporal waited what the provider asked for (its own backoff would have been 1 s).
    assert answered.at - refused.at >= 2.8
    (run,) = await _runs(dossier, outcome.result.model_run_ids)
    assert run.status == "succeeded" and run.usage["input_tokens"] == 700


async def test_a_refused_key_fails_the_turn_at_once_with_a_clear_error(
    dossier: DossierClient, server: ProviderServer
) -> None:
    server.reply(Reply(openai_error(401, "Incorrect API key provided: sk-test."), status=401))

    outcome = await dossier.chat(QUESTION, model="openai:gpt-test", wait=False)
    with pytest.raises(WorkflowFailureError):
        await dossier.temporal.get_workflow_handle(outcome.workflow_id).result()

    assert len(server.received) == 1  # non-retryable: no second attempt
    [row] = await dossier.runs.list(outcome.conversation_id)
    (run,) = await _runs(dossier, (row.model_run_id,))
    assert run.status == "failed"
    assert run.error == ("ProviderRequestError: openai model 'gpt-test': HTTP 401 (authentication failed): "
                         "Incorrect API key provided: sk-test.")
    assert row.usage == NO_USAGE


async def test_a_context_too_long_for_the_model_is_reassembled_once_within_a_smaller_budget(
    dossier: DossierClient, server: ProviderServer
) -> None:
    message = ("This model's maximum context length is 1000 tokens. However, your messages resulted in 1500 "
               "tokens. Please reduce the length of the messages.")
    server.reply(
        Reply(openai_error(400, message, code="context_length_exceeded"), status=400),
        Reply(openai_completion("EMEA.", prompt_tokens=640, completion_tokens=2)),
    )

    outcome = await dossier.chat(QUESTION, model="openai:gpt-test")

    assert outcome.result.status == "answered" and outcome.answer == "EMEA."
    refused, retried = await _runs(dossier, outcome.result.model_run_ids)
    assert refused.status == "failed" and refused.error.startswith("ContextTooLongError: openai model 'gpt-test': "
                                                                    "HTTP 400 (bad request): the context is too long")
    assert retried.status == "succeeded" and retried.usage["input_tokens"] == 640
    first = (await _assembly(dossier, refused.context_assembly_id)).record
    smaller = await _assembly(dossier, retried.context_assembly_id)
    # The new budget scales the refused context by the window the provider stated, and the assembly says why.
    assert smaller.record.token_budget == reduced_budget(first.assembled_tokens, first.token_budget, 1000, 1500)
    assert smaller.record.token_budget < first.token_budget
    [decision] = [d for d in smaller.decisions if d.kind == "budget" and d.subject_ref == f"model_run:{refused.id}"]
    assert "refused the context" in decision.reason and "maximum context length is 1000" in decision.reason
    assert len(server.received) == 2


async def test_a_context_refused_again_after_reassembly_fails_the_turn(
    dossier: DossierClient, server: ProviderServer
) -> None:
    refusal = Reply(openai_error(400, "the request exceeds the available context size, try increasing it",
                                 type_="exceed_context_size_error"), status=400)
    server.reply(refusal, refusal, Reply(openai_completion("never asked")))

    outcome = await dossier.chat(QUESTION, model="openai:gpt-test", wait=False)
    with pytest.raises(WorkflowFailureError):
        await dossier.temporal.get_workflow_handle(outcome.workflow_id).result()

    # Once: the refused run, its smaller retry, and no third request.
    assert len(server.received) == 2
    rows = await dossier.runs.list(outcome.conversation_id)
    assert sorted(row.status for row in rows) == ["failed", "failed"]
