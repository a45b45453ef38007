"""The client takes an agent's name wherever it takes a model spec."""

from __future__ import annotations

import pytest

from activities.providers.factory import ModelProviders
from dossier.agents import parse_agents
from dossier.client import ClientError, DossierClient
from dossier.settings import Settings

AGENTS = parse_agents('[agents.demo]\nmodel = "scripted:analyst"\nsystem_prompt = "Be brief."\n'
                      'tools = ["workspace.read_csv"]\n', "agents.toml")


def _client(agents=AGENTS) -> DossierClient:
    return DossierClient(deps=None, temporal=None, settings=Settings(_env_file=None), account_id="a",  # type: ignore[arg-type]
                         providers=ModelProviders(), agents=agents)


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
