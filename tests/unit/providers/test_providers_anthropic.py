"""The Anthropic provider over real HTTP: the official SDK against a scripted server on 127.0.0.1.

The request's shape (system blocks, tool_use / tool_result pairing, turn
merging, cache breakpoints, tool schemas) is checked on what arrived at the
server, against the SDK's own request types; replies are built from the SDK's
response types and parsed back by the SDK.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from pydantic import SecretStr
from temporalio.exceptions import ApplicationError

from activities.errors import is_retryable, sorted_failures
from activities.providers.anthropic_messages import AnthropicProvider, anthropic_tools, to_anthropic
from activities.providers.base import (
    ContextTooLongError,
    ModelRequest,
    ProviderRequestError,
    ProviderUnavailableError,
    ProviderUsage,
    RateLimitedError,
)
from activities.providers.config import ANTHROPIC_MAX_OUTPUT_TOKENS, EndpointConfig
from activities.tools.registry import default_registry
from policy.enums import MessageRole
from policy.records import ChatMessage, ToolCallRequest
from provider_server import ProviderServer, Reply, anthropic_error, anthropic_message, anthropic_request_problems

RUN_ID = "3f2a91c0-1111-4222-8333-444455556666"
EPHEMERAL = {"type": "ephemeral"}

# An epoch's shape: prompt, runtime sections, the conversation (prefix ends at 3), then the appended
# tool step with two results and a runtime note after them.
MESSAGES = (
    ChatMessage(role=MessageRole.SYSTEM, content="You are Analyst."),
    ChatMessage(role=MessageRole.SYSTEM, content="## Runtime state\n- [m:1a2b] Q2 revenue 310"),
    ChatMessage(role=MessageRole.USER, content="Which region drove Q3 revenue?"),
    ChatMessage(role=MessageRole.USER, content="And write it down."),
    ChatMessage(role=MessageRole.ASSISTANT, content="Reading the data.", tool_calls=(
        ToolCallRequest(call_id="call_aaa", name="workspace__read_csv", arguments={"path": "q3.csv"}),
        ToolCallRequest(call_id="call_bbb", name="workspace__list_files", arguments={}),
    )),
    ChatMessage(role=MessageRole.TOOL, content="region,revenue\nEMEA,120", tool_call_id="call_aaa"),
    ChatMessage(role=MessageRole.TOOL, content='["q3.csv"]', tool_call_id="call_bbb"),
    ChatMessage(role=MessageRole.USER, content="[runtime] [t:aaa] CONFLICTS with [m:1a2b]"),
)
BREAKPOINTS = (0, 3, 7)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def _provider(server: ProviderServer, **endpoint) -> AnthropicProvider:
    return AnthropicProvider(EndpointConfig(base_url=server.url, api_key=SecretStr("sk-ant-test"), **endpoint))


def _request(**fields) -> ModelRequest:
    return ModelRequest(**{"run_id": RUN_ID, "model": "claude-test", "participant_name": "Analyst",
                           "messages": MESSAGES, "tools": tuple(default_registry().schemas()),
                           "cache_breakpoints": BREAKPOINTS, **fields})


async def test_the_request_has_anthropics_shape(server: ProviderServer) -> None:
    server.reply(Reply(anthropic_message([{"type": "text", "text": "EMEA."}])))

    await _provider(server).generate(_request())

    [sent] = server.received
    assert sent.path == "/v1/messages"
    # The key as the SDK sends it (``x-api-key`` in 1.x, a bearer token in 2.x).
    bearer = sent.headers.get("authorization", "").removeprefix("Bearer ")
    assert "sk-ant-test" in (sent.headers.get("x-api-key"), bearer)
    body = sent.body
    assert anthropic_request_problems(body) == []
    assert (body["model"], body["max_tokens"]) == ("claude-test", ANTHROPIC_MAX_OUTPUT_TOKENS)
    # Leading system messages are the system blocks; the prompt's block carries breakpoint 0.
    assert body["system"] == [
        {"type": "text", "text": "You are Analyst.", "cache_control": EPHEMERAL},
        {"type": "text", "text": "## Runtime state\n- [m:1a2b] Q2 revenue 310"},
    ]
    assert body["messages"] == [
        # Two user messages in a row merge into one turn; the prefix ends at message 3, its block is marked.
        {"role": "user", "content": [
            {"type": "text", "text": "Which region drove Q3 revenue?"},
            {"type": "text", "text": "And write it down.", "cache_control": EPHEMERAL},
        ]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading the data."},
            {"type": "tool_use", "id": "call_aaa", "name": "workspace__read_csv", "input": {"path": "q3.csv"}},
            {"type": "tool_use", "id": "call_bbb", "name": "workspace__list_files", "input": {}},
        ]},
        # Tool results in one user turn right after their calls, then the note; the last message is marked.
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_aaa", "content": "region,revenue\nEMEA,120"},
            {"type": "tool_result", "tool_use_id": "call_bbb", "content": '["q3.csv"]'},
            {"type": "text", "text": "[runtime] [t:aaa] CONFLICTS with [m:1a2b]", "cache_control": EPHEMERAL},
        ]},
    ]
    assert body["tools"] == [
        {"name": schema["function"]["name"], "description": schema["function"]["description"],
         "input_schema": schema["function"]["parameters"]}
        for schema in default_registry().schemas()
    ]
    assert "temperature" not in body


async def test_a_tool_call_comes_back_under_its_canonical_name_with_its_id(server: ProviderServer) -> None:
    server.reply(Reply(anthropic_message(
        [{"type": "text", "text": "Let me read Q2."},
         {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "workspace__read_csv",
          "input": {"path": "sales/2026-q2-orders.csv"}}],
        input_tokens=21, output_tokens=48, cache_read=1870, cache_write=312)))

    response = await _provider(server).generate(_request())

    assert response.text == "Let me read Q2."
    assert response.tool_calls == (ToolCallRequest(call_id="toolu_01A09q90qw90lq917835lq9", name="workspace.read_csv",
                                                   arguments={"path": "sales/2026-q2-orders.csv"}),)
    assert response.usage == ProviderUsage(input_tokens=21, output_tokens=48, cache_read_tokens=1870,
                                           cache_write_tokens=312)


async def test_a_final_answer_without_cache_figures(server: ProviderServer) -> None:
    server.reply(Reply(anthropic_message([{"type": "text", "text": "EMEA "}, {"type": "text", "text": "led."}],
                                         input_tokens=900, output_tokens=5)))

    response = await _provider(server).generate(_request())

    assert (response.text, response.tool_calls) == ("EMEA led.", ())
    assert response.usage == ProviderUsage(input_tokens=900, output_tokens=5)


async def test_temperature_and_extra_fields_go_in_the_body(server: ProviderServer) -> None:
    server.reply(Reply(anthropic_message([{"type": "text", "text": "ok"}])))

    await _provider(server, temperature=0.2, max_output_tokens=512, extra_body={"top_k": 5}).generate(_request())

    body = server.received[0].body
    assert (body["temperature"], body["max_tokens"], body["top_k"]) == (0.2, 512, 5)


# --------------------------------------------------------------------------- the conversion on its own


async def test_the_longer_cache_tier_goes_on_every_breakpoint(server: ProviderServer) -> None:
    """An assembly that asked for the 1-hour tier (its epoch's cache_ttl_seconds) gets it at each breakpoint;
    Anthropic wants longer entries before shorter ones, so one request never mixes them."""
    server.reply(Reply(anthropic_message([{"type": "text", "text": "ok"}], input_tokens=1, output_tokens=1)))
    await _provider(server).generate(_request(cache_ttl_seconds=3600))
    [sent] = server.received
    assert anthropic_request_problems(sent.body) == []
    marks = [block["cache_control"] for block in [*sent.body["system"],
                                                  *(b for turn in sent.body["messages"] for b in turn["content"])]
             if "cache_control" in block]
    assert marks == [{"type": "ephemeral", "ttl": "1h"}] * 3
    # The default lifetime asks for nothing: the provider's 5 minutes.
    assert to_anthropic(MESSAGES, BREAKPOINTS, None)[0][0]["cache_control"] == EPHEMERAL


def test_without_breakpoints_no_block_is_marked() -> None:
    system, turns = to_anthropic(MESSAGES)
    assert "cache_control" not in str(system) + str(turns)


def test_a_breakpoint_past_the_messages_or_on_a_skipped_message_is_ignored() -> None:
    messages = (ChatMessage(role=MessageRole.USER, content="hi"),
                ChatMessage(role=MessageRole.ASSISTANT, content="  "))
    system, turns = to_anthropic(messages, (1, 9))
    assert system == [] and turns == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


def test_a_system_message_after_the_conversation_started_becomes_a_labelled_user_turn() -> None:
    _, turns = to_anthropic((ChatMessage(role=MessageRole.USER, content="hi"),
                             ChatMessage(role=MessageRole.SYSTEM, content="be brief")))
    assert turns == [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                                  {"type": "text", "text": "System: be brief"}]}]


def test_tool_schemas_become_input_schemas() -> None:
    assert anthropic_tools([{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]) == [
        {"name": "t", "input_schema": {"type": "object"}}]


# --------------------------------------------------------------------------- failures


async def _failure(server: ProviderServer, reply: Reply) -> Exception:
    server.reply(reply)
    with pytest.raises(Exception) as caught:
        await _provider(server).generate(_request())
    assert len(server.received) == 1, "the SDK retried by itself: Temporal owns retries"
    return caught.value


async def test_a_rate_limit_waits_for_retry_after(server: ProviderServer) -> None:
    body = anthropic_error("Number of requests has exceeded your rate limit", "rate_limit_error")
    error = await _failure(server, Reply(body, status=429, headers={"retry-after": "12"}))

    assert isinstance(error, RateLimitedError) and error.retry_after == 12.0

    @sorted_failures
    async def call_model() -> None:
        raise error

    with pytest.raises(ApplicationError) as caught:
        await call_model()
    assert caught.value.next_retry_delay == timedelta(seconds=12) and not caught.value.non_retryable


@pytest.mark.parametrize("status", [500, 529])
async def test_an_overloaded_or_failing_server_is_retried(server: ProviderServer, status: int) -> None:
    error = await _failure(server, Reply(anthropic_error("Overloaded", "overloaded_error"), status=status))

    assert isinstance(error, ProviderUnavailableError) and is_retryable(error)


async def test_prompt_is_too_long_is_context_too_long(server: ProviderServer) -> None:
    error = await _failure(server, Reply(anthropic_error("prompt is too long: 210000 tokens > 200000 maximum"),
                                         status=400))

    assert isinstance(error, ContextTooLongError) and not is_retryable(error)
    assert (error.limit_tokens, error.prompt_tokens) == (200000, 210000)


async def test_an_invalid_key_is_final_and_named(server: ProviderServer) -> None:
    error = await _failure(server, Reply(anthropic_error("invalid x-api-key", "authentication_error"), status=401))

    assert type(error) is ProviderRequestError and not is_retryable(error)
    assert str(error) == "anthropic model 'claude-test': HTTP 401 (authentication failed): invalid x-api-key"
