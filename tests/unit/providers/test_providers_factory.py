"""Model specs to configured providers, and the failure sorting both real providers share."""

from __future__ import annotations

import email.utils

import pytest
from pydantic import SecretStr

from activities.providers.anthropic_messages import AnthropicProvider
from activities.providers.base import (
    ContextTooLongError,
    ProviderRequestError,
    ProviderUnavailableError,
    RateLimitedError,
    UnknownModelError,
    settled_call_ids,
)
from activities.providers.config import EndpointConfig, ProvidersConfig
from activities.providers.factory import ModelProviders
from activities.providers.failures import MAX_RETRY_AFTER_SECONDS, retry_after_seconds, status_failure
from activities.providers.openai_compat import OpenAICompatProvider
from activities.providers.scripted import ScriptedProvider

CONFIGURED = ProvidersConfig(
    openai=EndpointConfig(api_key=SecretStr("sk-test")),
    anthropic=EndpointConfig(api_key=SecretStr("sk-ant-test")),
    local_base_url="http://127.0.0.1:8080/v1",
)


@pytest.mark.parametrize(("spec", "kind", "model"), [
    ("scripted:analyst", ScriptedProvider, "analyst"),
    ("openai:gpt-4o-mini", OpenAICompatProvider, "gpt-4o-mini"),
    ("local:qwen2.5-coder-1.5b", OpenAICompatProvider, "qwen2.5-coder-1.5b"),
    ("anthropic:claude-sonnet-4-5", AnthropicProvider, "claude-sonnet-4-5"),
])
def test_every_provider_is_reachable_by_spec(spec: str, kind: type, model: str) -> None:
    provider, name = ModelProviders(CONFIGURED)(spec)
    assert isinstance(provider, kind) and name == model
    assert provider.name == spec.split(":")[0]


def test_the_local_provider_calls_the_configured_url_at_temperature_zero() -> None:
    provider, _ = ModelProviders(CONFIGURED)("local:qwen")
    assert provider.base_url == "http://127.0.0.1:8080/v1"
    assert provider.endpoint.temperature == 0.0
    hosted, _ = ModelProviders(CONFIGURED)("openai:gpt-4o-mini")
    assert hosted.base_url == "https://api.openai.com/v1" and hosted.endpoint.temperature is None


@pytest.mark.parametrize(("spec", "message"), [
    ("local:qwen", "the local model service is not configured"),
    ("openai:gpt-4o-mini", "the openai provider is not configured: set OPENAI_API_KEY"),
    ("anthropic:claude-sonnet-4-5", "the anthropic provider is not configured: set ANTHROPIC_API_KEY"),
    ("gemini:pro", "unknown model provider 'gemini'"),
    ("scripted:poet", "no scripted model 'poet'"),
])
def test_unconfigured_or_unknown_providers_are_refused_at_lookup(spec: str, message: str) -> None:
    with pytest.raises(UnknownModelError, match=message):
        ModelProviders()(spec)


def test_a_compatible_server_without_a_key_is_enough_for_openai() -> None:
    provider, _ = ModelProviders(ProvidersConfig(openai=EndpointConfig(base_url="http://127.0.0.1:9/v1")))("openai:m")
    assert provider.base_url == "http://127.0.0.1:9/v1"


def test_one_provider_per_endpoint_and_an_agents_override_gets_its_own() -> None:
    providers = ModelProviders(CONFIGURED)
    first, _ = providers("openai:gpt-4o-mini")
    again, _ = providers("openai:gpt-4o")
    override = EndpointConfig(base_url="http://127.0.0.1:9999/v1", temperature=0.7)
    agents, _ = providers.for_spec("openai:gpt-4o-mini", override)
    assert first is again and agents is not first
    # Only what the override sets replaces the installation's endpoint: the key stays.
    assert agents.endpoint.base_url == "http://127.0.0.1:9999/v1" and agents.endpoint.temperature == 0.7
    assert agents.endpoint.api_key == CONFIGURED.openai.api_key


def test_an_endpoint_never_shows_its_key() -> None:
    assert "sk-test" not in repr(CONFIGURED) and "sk-test" not in CONFIGURED.model_dump_json()


# --------------------------------------------------------------------------- failure sorting


@pytest.mark.parametrize(("status", "body", "kind"), [
    (429, {"message": "slow down"}, RateLimitedError),
    (408, {"message": "timeout"}, ProviderUnavailableError),
    (409, {"message": "conflict"}, ProviderUnavailableError),
    (503, {"message": "unavailable"}, ProviderUnavailableError),
    (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, ProviderUnavailableError),
    (413, {"type": "error", "error": {"type": "request_too_large", "message": "Request too large"}},
     ContextTooLongError),
    (400, {"message": "Please reduce the length of the messages.", "code": None}, ContextTooLongError),
    (400, {"message": "Invalid 'messages[2].tool_call_id'", "code": None}, ProviderRequestError),
    (422, {"message": "unprocessable"}, ProviderRequestError),
])
def test_status_failure_sorts_by_status_and_body(status: int, body: dict, kind: type) -> None:
    error = status_failure("openai", "m", status, body, {})
    assert type(error) is kind


def test_a_retry_after_date_and_absurd_values() -> None:
    now = 1_700_000_000.0
    in_30s = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_seconds({"retry-after": in_30s}, now=now) == 30.0
    assert retry_after_seconds({"retry-after": "999999"}) == MAX_RETRY_AFTER_SECONDS
    assert retry_after_seconds({"retry-after": "-5"}) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None


def test_settled_call_ids_keep_the_providers_and_fill_gaps() -> None:
    assert settled_call_ids("abcdef12-x", ["call_1", None, " ", "call_1"]) == [
        "call_1", "call_abcdef12_1", "call_abcdef12_2", "call_abcdef12_3"]
    # A provider that itself answered with a derived-looking id does not collide with one we derive.
    assert settled_call_ids("abcdef12-x", ["call_abcdef12_1", None]) == ["call_abcdef12_1", "call_abcdef12_1_"]
