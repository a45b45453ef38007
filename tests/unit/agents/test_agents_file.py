"""Agent definition files: good files parse into typed definitions, bad ones fail naming the file, agent and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.tools.registry import default_registry
from dossier.agents import (
    AgentsFile,
    AgentsFileError,
    agents_file_path,
    agents_for,
    load_agents,
    parse_agents,
)
from dossier.settings import Settings
from dossier.tools import load_tool_modules, registry_with
from policy.enums import STRICTEST_PRIVACY, FreshnessClass, PrivacyClass

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "agents.toml"

GOOD = """
[agents.analyst]
model = "openai:gpt-4o-mini"
system_prompt = "Be careful."
tools = ["workspace.read_csv", "mcp.files.read"]
tool_modules = ["examples.tools_example"]
skills = ["csv"]
token_budget = 8000
route = { allowed = ["public", "user"], raw_allowed = ["public"] }
endpoint = { base_url = "http://127.0.0.1:11434/v1", api_key_env = "OLLAMA_KEY" }

[agents.analyst.mcp_servers.files]
transport = "stdio"
command = "mcp-files --root data"
tools = ["read"]

[agents.analyst.mcp_servers.web]
transport = "http"
url = "https://mcp.example.com/"
privacy = "public"
freshness = "volatile"
stale_after_seconds = 60

[agents.bare]
model = "scripted:analyst"
"""


def test_a_good_file_parses_into_typed_definitions():
    agents = parse_agents(GOOD, "a.toml")
    analyst = agents.get("analyst")
    assert analyst is not None and analyst.model == "openai:gpt-4o-mini" and analyst.token_budget == 8000
    assert analyst.tools == ("workspace.read_csv", "mcp.files.read") and analyst.skills == ("csv",)
    assert analyst.route.allowed == (PrivacyClass.PUBLIC, PrivacyClass.USER)
    assert analyst.endpoint.api_key_env == "OLLAMA_KEY"
    files, web = analyst.mcp_servers["files"], analyst.mcp_servers["web"]
    assert files.name == "files" and files.command == ("mcp-files", "--root", "data")
    assert files.privacy == STRICTEST_PRIVACY  # fails closed unless declared
    assert web.freshness is FreshnessClass.VOLATILE and web.stale_after_seconds == 60
    bare = agents.get("bare")
    assert bare.tools is None and bare.route is None and bare.system_prompt == ""
    assert agents.tool_modules() == ["examples.tools_example"]
    config = analyst.participant_config()
    assert config["agent"] == "analyst"
    assert config["route"] == {"allowed": ["public", "user"], "raw_allowed": ["public"]}
    assert config["tools"] == ["workspace.read_csv", "mcp.files.read"] and "model" not in config


def test_allow_lists_are_checked_against_the_registry():
    agents = parse_agents(GOOD)
    agents.check_tools(default_registry().names())  # mcp.files.read belongs to the 'files' MCP server
    with pytest.raises(AgentsFileError, match=r"agents\.x\.tools: unknown tool\(s\) \['nope\.tool'\]"):
        parse_agents('[agents.x]\nmodel = "scripted:analyst"\ntools = ["nope.tool"]').check_tools(["a.b"])


@pytest.mark.parametrize(("text", "agent", "field", "message"), [
    ("[agents.x\n", None, None, "not valid TOML"),
    ("model = 'openai:x'", None, None, "unknown top-level key"),
    ("[agents.x]\nsystem_prompt = 'hi'", "x", "model", "Field required"),
    ("[agents.x]\nmodel = 'gpt-4o'", "x", "model", "bad model spec"),
    ("[agents.x]\nmodel = 'acme:m'", "x", "model", "unknown model provider 'acme'"),
    ("[agents.x]\nmodel = 'openai:m'\ntemperature = 1", "x", "temperature", "Extra inputs"),
    ("[agents.x]\nmodel = 'openai:m'\ntoken_budget = 0", "x", "token_budget", "greater than 0"),
    ("[agents.x]\nmodel = 'openai:m'\ntools = 'all'", "x", "tools", "tuple"),
    ("[agents.x]\nmodel = 'openai:m'\ntool_modules = ['a-b']", "x", "tool_modules", "not importable"),
    ("[agents.x]\nmodel = 'openai:m'\nroute = { allowed = ['everyone'] }", "x", "route.allowed[0]", "Input should be"),
    ("[agents.x]\nmodel = 'openai:m'\nroute = { allowed = ['user'], raw_allowed = ['public'] }", "x", "route",
     "must also be in allowed"),
    ("[agents.x]\nmodel = 'openai:m'\nendpoint = { api_key = 'sk-123' }", "x", "endpoint", "never put a key"),
    ("[agents.x]\nmodel = 'openai:m'\nendpoint = { api_key_env = 'sk-123' }", "x", "endpoint.api_key_env",
     "environment variable"),
    ("[agents.x]\nmodel = 'openai:m'\nendpoint = { base_url = 'localhost:1' }", "x", "endpoint.base_url", "http"),
    ("[agents.x]\nmodel = 'openai:m'\n[agents.x.mcp_servers.s]\ntransport = 'ws'", "x", "mcp_servers.s.transport",
     "Input should be"),
    ("[agents.x]\nmodel = 'openai:m'\n[agents.x.mcp_servers.s]\ntransport = 'stdio'", "x", "mcp_servers.s",
     "has a command"),
    ("[agents.x]\nmodel = 'openai:m'\n[agents.x.mcp_servers.s]\ntransport = 'http'\nurl = 'ftp://h'", "x",
     "mcp_servers.s", "http\\(s\\) url"),
    ("[agents.'has:colon']\nmodel = 'openai:m'", "has:colon", None, "an agent's name"),
])
def test_bad_files_name_the_file_agent_and_field(text, agent, field, message):
    with pytest.raises(AgentsFileError, match=message) as caught:
        parse_agents(text, "bad.toml")
    error = caught.value
    assert (error.file, error.agent, error.field) == (Path("bad.toml"), agent, field)
    assert str(error).startswith("bad.toml: ")


def test_the_file_in_force(tmp_path, monkeypatch):
    assert agents_file_path(None, tmp_path) is None
    (tmp_path / "agents.toml").write_text('[agents.a]\nmodel = "scripted:analyst"\n')
    assert agents_file_path(None, tmp_path) == tmp_path / "agents.toml"
    assert agents_file_path(Path("/x.toml"), tmp_path) == Path("/x.toml")
    monkeypatch.chdir(tmp_path)
    assert list(agents_for(None).agents) == ["a"]
    with pytest.raises(AgentsFileError, match="cannot read"):
        agents_for(tmp_path / "missing.toml")
    monkeypatch.setenv("DOSSIER_AGENTS_FILE", str(tmp_path / "agents.toml"))
    assert Settings().dossier_agents_file == tmp_path / "agents.toml"


def test_the_example_file_and_tool_module_load(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO))
    agents = load_agents(EXAMPLE)
    assert isinstance(agents, AgentsFile)
    assert {"analyst", "reviewer", "ollama", "local", "demo"} <= set(agents.agents)
    assert agents.get("ollama").endpoint.base_url == "http://127.0.0.1:11434/v1"
    assert [agent.model.split(":")[0] for agent in agents.agents.values()][:4] == ["openai", "anthropic", "openai",
                                                                                   "local"]
    assert [t.name for t in load_tool_modules(agents.tool_modules())] == ["examples.convert_units"]
    agents.check_tools(registry_with(agents.tool_modules()).names())


def test_the_docs_agents_block_parses_with_one_agent_per_provider_and_only_known_tools() -> None:
    """The TOML block the Models page shows is a valid agents file, not an illustration that drifted."""
    readme = (Path(__file__).resolve().parents[3] / "docs" / "models.md").read_text(encoding="utf-8")
    blocks = [block.split("```", 1)[0] for block in readme.split("```toml\n")[1:]]
    [block] = [block for block in blocks if "[agents.analyst]" in block]
    agents = parse_agents(block, "docs/models.md")
    providers = {name: agent.model.split(":", 1)[0] for name, agent in agents.agents.items()}
    assert providers == {"analyst": "openai", "reviewer": "anthropic", "ollama": "openai", "local": "local"}
    assert agents.agents["ollama"].endpoint is not None
    assert agents.agents["ollama"].endpoint.base_url == "http://127.0.0.1:11434/v1"
    agents.check_tools([*default_registry().names(), "mcp.time.get_current_time"])


def test_an_agents_retention_override_reaches_its_participants_config():
    agents = parse_agents('[agents.medic]\nmodel = "scripted:analyst"\n'
                          '[agents.medic.retention]\nartifacts = { kind = "delete", after_days = 7 }\n'
                          'traces = { kind = "redact", after_days = 1 }\n', "a.toml")
    config = agents.get("medic").participant_config()
    assert config["retention"] == {"artifacts": {"kind": "delete", "after_days": 7},
                                   "traces": {"kind": "redact", "after_days": 1}}
    with pytest.raises(AgentsFileError, match="retention"):
        parse_agents('[agents.medic]\nmodel = "scripted:analyst"\nretention = { artifacts = { kind = "shred" } }\n',
                     "a.toml")


def test_the_readmes_tour_agent_is_a_valid_agents_file() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    [block] = [block.split("```", 1)[0] for block in readme.split("```toml\n")[1:]]
    agents = parse_agents(block, "README.md")
    assert agents.get("analyst").model == "openai:gpt-4o-mini"
    agents.check_tools(default_registry().names())
