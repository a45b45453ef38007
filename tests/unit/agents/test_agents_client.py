"""The client takes an agent's name wherever it takes a model spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.providers.base import UnknownModelError
from activities.providers.factory import ModelProviders
from activities.tools.registry import default_registry
from activities.turns import TurnActivities
from dossier.agents import parse_agents
from dossier.client import ClientError, DossierClient
from dossier.runtime import agent_endpoints
from dossier.settings import Settings

AGENTS = parse_agents('[agents.demo]\nmodel = "scripted:analyst"\nsystem_prompt = "Be brief."\n'
                      'tools = ["workspace.read_csv"]\n', "agents.toml")


def _client(agents=AGENTS) -> DossierClient:
    return DossierClient(deps=None, temporal=None,  # type: ignore[arg-type]
                         settings=Settings(_env_file=None), account_id="a", providers=ModelProviders(), agents=agents)


def test_a_name_without_a_colon_is_an_agent():
    client = _client()
    assert client.agent("demo").system_prompt == "Be brief."
    assert client.model_spec("demo") == "scripted:analyst"
    assert client.agent("scripted:analyst") is None and client.model_spec("scripted:analyst") == "scripted:analyst"
    client._check_models("demo", "scripted:analyst")


def test_an_unknown_name_says_what_it_is_not():
    with pytest.raises(ClientError, match=r"'nobody' is neither a model spec .* nor an agent of agents.toml "
                                          r"\(agents: demo\)"):
        _client()._check_models("nobody")


ENDPOINTS = parse_agents(
    '[agents.ollama]\nmodel = "openai:llama3.1"\nendpoint = { base_url = "http://127.0.0.1:11434/v1" }\n'
    '[agents.keyed]\nmodel = "anthropic:claude"\nendpoint = { api_key_env = "MY_ANTHROPIC_KEY" }\n'
    '[agents.plain]\nmodel = "scripted:analyst"\n', "agents.toml")


def test_agent_endpoints_read_the_named_variable_and_never_the_file():
    found = agent_endpoints(ENDPOINTS, {"MY_ANTHROPIC_KEY": "sk-test"})
    assert set(found) == {"ollama", "keyed"}
    assert found["ollama"].base_url == "http://127.0.0.1:11434/v1" and found["ollama"].model_fields_set == {"base_url"}
    assert found["keyed"].api_key.get_secret_value() == "sk-test"
    assert "keyed" not in agent_endpoints(ENDPOINTS, {})  # unset: no key of its own, the worker still starts


def test_an_agent_with_its_own_endpoint_needs_no_installation_endpoint(monkeypatch):
    # No OPENAI_API_KEY/OPENAI_BASE_URL: a bare openai: spec is refused, the Ollama agent is not.
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    client = _client(ENDPOINTS)
    client._check_models("ollama")
    with pytest.raises(ClientError, match="openai provider is not configured"):
        client._check_models("openai:llama3.1")


def test_the_model_call_uses_the_agents_endpoint():
    providers = ModelProviders()
    activities = TurnActivities(deps=None, tools=default_registry(), workspace=Path("."),  # type: ignore[arg-type]
                                providers=providers, agent_endpoints=agent_endpoints(ENDPOINTS, {}))
    provider, model = activities._provider("openai:llama3.1", "ollama")
    assert model == "llama3.1"
    with pytest.raises(UnknownModelError):
        activities._provider("openai:llama3.1", "someone-else")
    assert activities._provider("scripted:analyst", None)[1] == "analyst"
