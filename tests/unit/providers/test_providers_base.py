"""The provider contract: model specs, requests and responses, the scripted provider's guarantees."""

from __future__ import annotations

import pydantic
import pytest

from activities.providers.factory import ModelProviders
from activities.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderError,
    ProviderUsage,
    UnknownModelError,
    parse_model_spec,
)
from activities.providers.scripted import ScriptedProvider, call_id, offered_tools
from activities.providers.scripted.scripts import SCRIPTS
from activities.tools.registry import default_registry
from policy.enums import MessageRole
from policy.records import ChatMessage, ToolCallRequest

SCRIPT_NAMES = ["analyst", "coordinator", "digest", "echo", "flaky", "panelist", "picker", "researcher", "sleeper"]


@pytest.mark.parametrize(("spec", "expected"), [
    ("scripted:analyst", ("scripted", "analyst")),
    ("openai:gpt-4.1-mini", ("openai", "gpt-4.1-mini")),
    ("ollama:llama3:8b", ("ollama", "llama3:8b")),
])
def test_parse_model_spec(spec, expected):
    assert parse_model_spec(spec) == expected


@pytest.mark.parametrize("spec", ["analyst", "scripted:", ":analyst", "", "scripted: analyst", "scripted:ana lyst",
                                  " scripted:analyst", "scripted:analyst\n"])
def test_bad_model_specs(spec):
    with pytest.raises(UnknownModelError, match="bad model spec"):
        parse_model_spec(spec)


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_the_provider_factory_knows_every_script(name):
    provider, model = ModelProviders()(f"scripted:{name}")
    assert isinstance(provider, ScriptedProvider)
    assert provider.name == "scripted"
    assert model == name


def test_the_scripts_are_exactly_the_documented_ones():
    assert sorted(SCRIPTS) == SCRIPT_NAMES


def test_real_providers_need_their_endpoint_configured():
    with pytest.raises(UnknownModelError, match="the openai provider is not configured"):
        ModelProviders()("openai:gpt-4.1")


def test_an_unknown_script_fails_at_lookup():
    with pytest.raises(UnknownModelError, match="no scripted model 'poet'"):
        ModelProviders()("scripted:poet")
    assert issubclass(UnknownModelError, ProviderError)


def _request(model: str = "echo", run_id: str = "3f2a91c0-1111-4222-8333-444455556666", **fields) -> ModelRequest:
    defaults = dict(
        run_id=run_id, model=model, participant_name="Analyst",
        messages=(ChatMessage(role=MessageRole.SYSTEM, content="You are Analyst."),
                  ChatMessage(role=MessageRole.USER, content="Summarise Q3 revenue by region")),
        tools=tuple(default_registry().schemas()),
    )
    return ModelRequest(**{**defaults, **fields})


async def test_an_unknown_script_fails_at_generation():
    with pytest.raises(UnknownModelError):
        await ScriptedProvider().generate(_request(model="poet"))


def test_requests_and_responses_are_frozen_and_strict():
    request = _request()
    with pytest.raises(pydantic.ValidationError):
        request.model = "analyst"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        ModelResponse(text="", surprise=True)  # type: ignore[call-arg]
    assert ModelResponse(text="hi").tool_calls == ()
    assert ModelResponse(text="hi").usage == ProviderUsage()
    assert ProviderUsage().to_json() == {"input_tokens": None, "output_tokens": None, "cache_read_tokens": None,
                                         "cache_write_tokens": None}


def test_requests_round_trip_as_json():
    request = _request()
    assert ModelRequest.model_validate_json(request.model_dump_json()) == request


async def test_call_ids_derive_from_the_run_id():
    response = await ScriptedProvider().generate(_request(model="analyst"))
    assert response.text == ""
    assert response.tool_calls == (ToolCallRequest(call_id="call_3f2a91c0_0", name="workspace.list_files",
                                                   arguments={}),)
    assert call_id("abc", 2) == "call_abc_2"


@pytest.mark.parametrize("model", SCRIPT_NAMES)
async def test_same_request_same_response(model):
    request = _request(model=model)
    first = await ScriptedProvider().generate(request)
    second = await ScriptedProvider().generate(ModelRequest.model_validate_json(request.model_dump_json()))
    assert first == second


async def test_another_run_gets_other_call_ids_and_the_same_calls():
    first = await ScriptedProvider().generate(_request(model="analyst", run_id="aaaaaaaa-0"))
    second = await ScriptedProvider().generate(_request(model="analyst", run_id="bbbbbbbb-0"))
    assert [c.call_id for c in first.tool_calls] == ["call_aaaaaaaa_0"]
    assert [c.call_id for c in second.tool_calls] == ["call_bbbbbbbb_0"]
    assert [(c.name, c.arguments) for c in first.tool_calls] == [(c.name, c.arguments) for c in second.tool_calls]


def test_offered_tools_are_read_back_to_canonical_names():
    assert offered_tools(tuple(default_registry().schemas())) == frozenset(default_registry().names())
    assert offered_tools(()) == frozenset()


@pytest.mark.parametrize("entry", [{"type": "function"}, {"type": "retrieval", "function": {"name": "x"}},
                                   {"type": "function", "function": {"name": 3}}, "workspace__read_csv"])
def test_malformed_tool_entries_are_provider_errors(entry):
    with pytest.raises(ProviderError, match="malformed tool entry"):
        offered_tools((entry,))


async def test_a_script_without_its_tool_says_so():
    response = await ScriptedProvider().generate(_request(model="analyst", tools=()))
    assert response.tool_calls == ()
    assert response.text == "I need the workspace.list_files tool for this, and it is not available to me in this run."


async def test_echo_repeats_the_latest_user_message():
    response = await ScriptedProvider().generate(_request(model="echo"))
    assert response == ModelResponse(text="You said: Summarise Q3 revenue by region")
