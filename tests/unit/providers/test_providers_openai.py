"""The OpenAI-compatible provider over real HTTP: the official SDK against a scripted server on 127.0.0.1.

Nothing of the SDK is mocked: requests go through ``openai.AsyncOpenAI`` to
:class:`provider_server.ProviderServer`, whose replies are built from the SDK's
own response types and whose recorded requests are checked against its
request types.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import timedelta

import pytest
from pydantic import SecretStr
from temporalio.exceptions import ApplicationError

from activities.errors import is_retryable, sorted_failures
from activities.providers.base import (
    ContextTooLongError,
    ModelRequest,
    ProviderRequestError,
    ProviderUnavailableError,
    ProviderUsage,
    RateLimitedError,
)
from activities.providers.config import EndpointConfig
from activities.providers.openai_compat import UNPARSED_ARGUMENTS, OpenAICompatProvider
from activities.tools.registry import default_registry
from policy.enums import MessageRole
from policy.records import ChatMessage, ToolCallRequest
from provider_server import ProviderServer, Reply, openai_completion, openai_error, openai_request_problems

RUN_ID = "3f2a91c0-1111-4222-8333-444455556666"

MESSAGES = (
    ChatMessage(role=MessageRole.SYSTEM, content="You are Analyst."),
    ChatMessage(role=MessageRole.SYSTEM, content="## Runtime state\n- nothing yet"),
    ChatMessage(role=MessageRole.USER, content="Which region drove Q3 revenue?"),
    ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=(
        ToolCallRequest(call_id="call_0a1b2c3d", name="workspace__read_csv",
                        arguments={"path": "sales/2026-q3-orders.csv"}),)),
    ChatMessage(role=MessageRole.TOOL, content="region,revenue\nEMEA,120\nAPAC,80", tool_call_id="call_0a1b2c3d"),
)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def _provider(server: ProviderServer, name: str = "openai", **endpoint) -> OpenAICompatProvider:
    return OpenAICompatProvider(name, EndpointConfig(base_url=server.openai_url, api_key=SecretStr("sk-test"),
                                                     **endpoint))


def _request(**fields) -> ModelRequest:
    return ModelRequest(**{"run_id": RUN_ID, "model": "gpt-test", "participant_name": "Analyst",
                           "messages": MESSAGES, "tools": tuple(default_registry().schemas()), **fields})


# --------------------------------------------------------------------------- requests and answers


async def test_a_tool_call_round_trip(server: ProviderServer) -> None:
    server.reply(Reply(openai_completion(
        tool_calls=(("call_Xy12", "workspace__read_csv", '{"path": "sales/2026-q2-orders.csv"}'),),
        prompt_tokens=812, completion_tokens=23, cached_tokens=512)))

    response = await _provider(server).generate(_request())

    # The answer: the call under its canonical name, with the provider's id and arguments.
    assert response.text == ""
    assert response.tool_calls == (ToolCallRequest(call_id="call_Xy12", name="workspace.read_csv",
                                                   arguments={"path": "sales/2026-q2-orders.csv"}),)
    assert response.usage == ProviderUsage(input_tokens=812, output_tokens=23, cache_read_tokens=512,
                                           cache_write_tokens=None)
    # The request: the assembled messages as stored and the registry's tool schemas, once, no retries.
    [sent] = server.received
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["model"] == "gpt-test"
    assert sent.body["messages"] == [json.loads(json.dumps(m.to_openai())) for m in MESSAGES]
    assert sent.body["tools"] == default_registry().schemas()
    assert "temperature" not in sent.body and "stream" not in sent.body
    assert openai_request_problems(sent.body) == []


async def test_llama_cpps_timings_cache_n_is_its_cache_read_when_usage_has_no_details(
        server: ProviderServer) -> None:
    """llama.cpp reports prompt-cache reuse only as ``timings.cache_n`` beside ``usage``."""
    body = openai_completion("OK", prompt_tokens=640, completion_tokens=2)
    body["timings"] = {"cache_n": 512, "prompt_n": 128, "predicted_n": 2}
    server.reply(Reply(body))
    assert (await _provider(server).generate(_request())).usage == ProviderUsage(
        input_tokens=640, output_tokens=2, cache_read_tokens=512)

    # prompt_tokens_details wins where both are present; a malformed cache_n is no count at all.
    body = openai_completion("OK", prompt_tokens=640, completion_tokens=2, cached_tokens=256)
    body["timings"] = {"cache_n": 512}
    server.reply(Reply(body))
    assert (await _provider(server).generate(_request())).usage.cache_read_tokens == 256
    for bad in ("512", -1, True, None):
        body = openai_completion("OK", prompt_tokens=640, completion_tokens=2)
        body["timings"] = {"cache_n": bad}
        server.reply(Reply(body))
        assert (await _provider(server).generate(_request())).usage.cache_read_tokens is None


async def test_a_final_answer_with_usage_but_no_cache_details(server: ProviderServer) -> None:
    server.reply(Reply(openai_completion("EMEA drove Q3 revenue (120 of 200).", prompt_tokens=640,
                                         completion_tokens=12)))

    response = await _provider(server).generate(_request())

    assert response.text == "EMEA drove Q3 revenue (120 of 200)."
    assert response.tool_calls == ()
    assert response.usage == ProviderUsage(input_tokens=640, output_tokens=12)


async def test_a_server_that_reports_no_usage_leaves_every_count_unknown(server: ProviderServer) -> None:
    body = openai_completion("done")
    del body["usage"]
    server.reply(Reply(body))

    assert (await _provider(server).generate(_request())).usage == ProviderUsage()


async def test_calls_without_an_id_or_with_a_repeated_one_get_ids_derived_from_the_run(server: ProviderServer) -> None:
    server.reply(Reply(openai_completion(tool_calls=(
        (None, "workspace__list_files", "{}"),
        ("dup", "workspace__read_csv", '{"path": "a.csv"}'),
        ("dup", "workspace__read_csv", '{"path": "b.csv"}'),
    ))))

    response = await _provider(server).generate(_request())

    assert [call.call_id for call in response.tool_calls] == ["call_3f2a91c0_0", "dup", "call_3f2a91c0_2"]
    assert [call.name for call in response.tool_calls] == ["workspace.list_files", "workspace.read_csv",
                                                           "workspace.read_csv"]


@pytest.mark.parametrize(("raw", "expected"), [
    ('{"path": "a.csv"', {UNPARSED_ARGUMENTS: '{"path": "a.csv"'}),
    ('["a.csv"]', {UNPARSED_ARGUMENTS: '["a.csv"]'}),
    ("", {}),
])
async def test_arguments_that_are_not_a_json_object_are_kept_as_text(server: ProviderServer, raw: str,
                                                                     expected: dict) -> None:
    server.reply(Reply(openai_completion(tool_calls=(("call_1", "workspace__read_csv", raw),))))

    [call] = (await _provider(server).generate(_request())).tool_calls

    assert call.arguments == expected


async def test_the_local_provider_sends_temperature_zero_and_max_tokens(server: ProviderServer) -> None:
    server.reply(Reply(openai_completion("ok")), Reply(openai_completion("ok")))

    await _provider(server, "local", temperature=0.0, max_output_tokens=256).generate(_request(model="qwen"))
    await _provider(server, "openai", max_output_tokens=256, extra_body={"seed": 7}).generate(_request())

    local, hosted = (received.body for received in server.received)
    assert (local["model"], local["temperature"], local["max_tokens"]) == ("qwen", 0.0, 256)
    assert "max_completion_tokens" not in local
    assert (hosted["max_completion_tokens"], hosted["seed"]) == (256, 7)
    assert "temperature" not in hosted and "max_tokens" not in hosted
    assert openai_request_problems(local) == [] and openai_request_problems(hosted) == []


# --------------------------------------------------------------------------- failures, sorted once


async def _failure(server: ProviderServer, reply: Reply, **endpoint) -> Exception:
    server.reply(reply)
    with pytest.raises(Exception) as caught:
        await _provider(server, **endpoint).generate(_request())
    assert len(server.received) == 1, "the SDK retried by itself: Temporal owns retries"
    return caught.value


async def test_a_rate_limit_is_retried_after_the_wait_the_provider_asked_for(server: ProviderServer) -> None:
    body = openai_error(429, "Rate limit reached for gpt-test", code="rate_limit_exceeded", type_="requests")
    error = await _failure(server, Reply(body, status=429, headers={"retry-after": "7"}))

    assert isinstance(error, RateLimitedError) and is_retryable(error)
    assert error.retry_after == 7.0 and error.status == 429

    @sorted_failures
    async def call_model() -> None:
        raise error

    with pytest.raises(ApplicationError) as caught:
        await call_model()
    assert caught.value.next_retry_delay == timedelta(seconds=7)
    assert not caught.value.non_retryable and caught.value.type == "RateLimitedError"
    assert caught.value.__cause__ is error


async def test_retry_after_ms_wins_over_retry_after(server: ProviderServer) -> None:
    error = await _failure(server, Reply(openai_error(429, "slow down"), status=429,
                                         headers={"retry-after-ms": "1500", "retry-after": "9"}))

    assert isinstance(error, RateLimitedError) and error.retry_after == 1.5


async def test_an_exhausted_quota_is_not_retried(server: ProviderServer) -> None:
    error = await _failure(server, Reply(openai_error(429, "You exceeded your current quota",
                                                      code="insufficient_quota"), status=429))

    assert isinstance(error, ProviderRequestError) and not is_retryable(error)
    assert "quota is exhausted" in str(error)


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_a_server_error_is_retried(server: ProviderServer, status: int) -> None:
    error = await _failure(server, Reply(openai_error(status, "The server had an error", type_="server_error"),
                                         status=status))

    assert isinstance(error, ProviderUnavailableError) and is_retryable(error)
    assert f"HTTP {status}" in str(error)


@pytest.mark.parametrize(("status", "message", "named"), [
    (401, "Incorrect API key provided: sk-test.", "HTTP 401 (authentication failed): Incorrect API key"),
    (403, "Project does not have access to model gpt-test", "HTTP 403 (permission denied)"),
    (404, "The model `gpt-test` does not exist", "HTTP 404 (not found)"),
    (400, "Invalid value for 'temperature'", "HTTP 400 (bad request): Invalid value for 'temperature'"),
])
async def test_a_refused_request_is_final_and_says_who_refused_what(server: ProviderServer, status: int, message: str,
                                                                    named: str) -> None:
    error = await _failure(server, Reply(openai_error(status, message), status=status))

    assert type(error) is ProviderRequestError and not is_retryable(error)
    assert str(error).startswith(f"openai model 'gpt-test': {named}")

    @sorted_failures
    async def call_model() -> None:
        raise error

    with pytest.raises(ApplicationError) as caught:
        await call_model()
    assert caught.value.non_retryable and caught.value.type == "ProviderRequestError"


async def test_openais_context_length_error_is_context_too_long(server: ProviderServer) -> None:
    message = ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 "
               "tokens. Please reduce the length of the messages.")
    error = await _failure(server, Reply(openai_error(400, message, code="context_length_exceeded"), status=400))

    assert isinstance(error, ContextTooLongError) and not is_retryable(error)
    assert (error.limit_tokens, error.prompt_tokens, error.status) == (8192, 9000, 400)
    assert "openai model 'gpt-test': HTTP 400" in str(error)


async def test_llama_cpp_context_size_error_is_context_too_long(server: ProviderServer) -> None:
    body = {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                      "type": "exceed_context_size_error", "n_prompt_tokens": 5210, "n_ctx": 4096}}
    error = await _failure(server, Reply(body, status=400), name="local")

    assert isinstance(error, ContextTooLongError)
    assert (error.limit_tokens, error.prompt_tokens) == (4096, 5210)
    assert str(error).startswith("local model 'gpt-test': HTTP 400")


async def test_a_slow_answer_times_out_as_retryable(server: ProviderServer) -> None:
    error = await _failure(server, Reply(openai_completion("late"), delay_seconds=2.0), timeout_seconds=0.3)

    assert isinstance(error, ProviderUnavailableError) and is_retryable(error)
    assert "no answer within 0.3 s" in str(error)


async def test_no_server_listening_is_retryable() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAICompatProvider("local", EndpointConfig(base_url=f"http://127.0.0.1:{port}/v1"))

    with pytest.raises(ProviderUnavailableError, match="cannot connect") as caught:
        await provider.generate(_request())
    assert is_retryable(caught.value)


async def test_an_answer_without_choices_is_retryable(server: ProviderServer) -> None:
    body = openai_completion("x")
    body["choices"] = []
    error = await _failure(server, Reply(body))

    assert isinstance(error, ProviderUnavailableError) and "no choices" in str(error)
