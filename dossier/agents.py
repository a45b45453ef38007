"""Agent definitions: a TOML file (``agents.toml``) of named agents.

Each ``[agents.NAME]`` table defines one agent::

    skills_dir = "skills"                 # top level: the skills folder, relative to this file

    [agents.analyst]
    model = "openai:gpt-4o-mini"          # a model SPEC: openai:, anthropic:, local:, scripted:
    system_prompt = "You are a careful analyst. Cite result ids."
    tools = ["workspace.read_csv", "table.aggregate"]   # allow-list; absent: every tool
    tool_modules = ["examples.tools_example"]           # modules whose @tool functions the worker registers
    skills = ["csv-analysis"]                           # skills it may load (load_skill); see below
    token_budget = 16000
    route = { allowed = ["public", "user"], raw_allowed = ["public"] }
    endpoint = { base_url = "http://127.0.0.1:11434/v1", api_key_env = "OLLAMA_API_KEY" }
    retention = { artifacts = { kind = "delete", after_days = 30 }, traces = { kind = "redact", after_days = 7 } }

    [agents.analyst.mcp_servers.time]                   # its tools are offered as mcp.time.<tool>
    transport = "stdio"                                 # or "http" with url = "http://127.0.0.1:8000/mcp"
    command = ["mcp-server-time", "--local-timezone", "UTC"]
    privacy = "public"                                  # of every call and result (default: the strictest)
    freshness = "volatile"
    stale_after_seconds = 60
    tools = ["get_current_time"]                        # the server's allow-list (absent: all its tools)
    env_from = ["TZ"]                                   # worker variables the stdio server gets
    timeout_seconds = 30

``endpoint.api_key_env`` names the environment variable that holds the key:
a key itself is refused in the file.

Where a model spec is taken (``dossier chat --model NAME``, ``DossierClient.chat(model=NAME)``),
a name without ``:`` is an agent: its participant gets the agent's model and
system prompt, and its ``config`` stores the rest of the definition. In force
today: the ``tools`` allow-list (what the model is offered and what
``execute_tool`` runs), ``endpoint`` (its model calls), ``tool_modules`` (the
worker registers their tools at start), ``route`` (every assembly's provider
route is narrowed to it, never widened), ``token_budget`` (every assembly's
budget, or a smaller one after a context refused as too long), ``mcp_servers``
(the worker connects to each server at start, one shared session per server,
and registers its allowed tools as ``mcp.<server>.<tool>``: see
:mod:`activities.tools.mcp`; an agent without a ``tools`` allow-list is offered
the tools of its own servers, never another agent's) and ``skills``: the skills
(folders ``<skills_dir>/<name>/SKILL.md``, :mod:`activities.skills`) its
context's skill catalog lists and its ``load_skill`` tool may load; a tool a
skill grants is offered only once the skill is loaded (:mod:`policy.skills`).
The skills folder is ``DOSSIER_SKILLS_DIR``, else the file's top-level
``skills_dir``; a skill no folder has stops the worker.

Every problem is an :class:`AgentsFileError` naming the file, the agent and the field.
The file is :attr:`~dossier.settings.Settings.dossier_agents_file` (``DOSSIER_AGENTS_FILE``),
else ``agents.toml`` in the working directory when there is one (:func:`agents_file_path`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from activities.providers.base import UnknownModelError, parse_model_spec
from activities.providers.factory import PROVIDERS
from activities.tools.mcp_config import PREFIX as MCP_PREFIX
from activities.tools.mcp_config import SEGMENT as MCP_NAME
from activities.tools.mcp_config import McpServerConfig, passed_env
from policy.enums import STRICTEST_PRIVACY, FreshnessClass, PrivacyClass
from policy.retention import RetentionSpec

DEFAULT_AGENTS_FILE = "agents.toml"
"""Looked for in the working directory when ``DOSSIER_AGENTS_FILE`` is unset."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


class AgentsFileError(ValueError):
    """An agents file that cannot be read or does not fit the format.

    Attributes:
        file: the file.
        agent: the agent the problem is in (``None``: the file as a whole).
        field: the dotted field (``route.allowed[1]``; ``None``: the agent or file as a whole).
        problem: what is wrong.
    """

    def __init__(self, file: Path | str, problem: str, *, agent: str | None = None, field: str | None = None) -> None:
        self.file, self.agent, self.field, self.problem = Path(file), agent, field, problem
        where = ".".join(part for part in ("agents" if agent else None, agent, field) if part)
        super().__init__(f"{file}: {where + ': ' if where else ''}{problem}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Route(_Strict):
    """Which privacy classes the agent's provider may receive: it narrows the provider's route, never widens it."""

    allowed: tuple[PrivacyClass, ...] = ()
    """Classes it may receive summarised."""
    raw_allowed: tuple[PrivacyClass, ...] = ()
    """Classes it may receive raw (each must also be in ``allowed``)."""

    @model_validator(mode="after")
    def _raw_is_allowed(self) -> Route:
        extra = [cls.value for cls in self.raw_allowed if cls not in self.allowed]
        if extra:
            raise ValueError(f"raw_allowed {extra} must also be in allowed")
        return self


class Endpoint(_Strict):
    """An agent's own endpoint, over the installation's (``ModelProviders.for_spec``'s override)."""

    base_url: str | None = None
    """The API's base URL (``http://127.0.0.1:11434/v1`` for Ollama)."""
    api_key_env: str | None = None
    """The NAME of the environment variable holding the key (never the key)."""

    @model_validator(mode="before")
    @classmethod
    def _no_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and "api_key" in data:
            raise ValueError("api_key: never put a key in the file; name its environment variable in api_key_env")
        return data

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {value!r}")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError(f"api_key_env must be an environment variable's name, got {value!r}")
        return value


class McpServer(_Strict):
    """An MCP server an agent uses: the worker connects to it at start (:mod:`activities.tools.mcp`)."""

    name: str
    """The server's name (its table key); its tools are offered as ``mcp.NAME.tool``."""
    transport: Literal["stdio", "http"]
    """``stdio``: the worker starts ``command``; ``http``: streamable HTTP at ``url``."""
    command: tuple[str, ...] | None = None
    """``stdio``: the program and its arguments."""
    url: str | None = None
    """``http``: the server's URL."""
    privacy: PrivacyClass = STRICTEST_PRIVACY
    """Privacy class of its calls and results (default: the strictest, fail closed)."""
    freshness: FreshnessClass = FreshnessClass.SESSION
    """Freshness class of its results."""
    stale_after_seconds: float | None = Field(default=None, gt=0)
    """Lifetime of a result (``None``: the policy's default for its freshness class)."""
    tools: tuple[str, ...] | None = None
    """Allow-list of its tools, by the server's names (``None``: all)."""
    env_from: tuple[str, ...] = ()
    """``stdio``: names of the worker's environment variables passed to the server (values never in the file)."""
    timeout_seconds: float = Field(default=30.0, gt=0)
    """Bound on starting the server and on each call."""

    @field_validator("name")
    @classmethod
    def _segment(cls, value: str) -> str:
        if not MCP_NAME.fullmatch(value):
            raise ValueError(f"an MCP server's name is a letter, then letters, digits, '-' or single '_': {value!r}")
        return value

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value

    @field_validator("env_from")
    @classmethod
    def _env_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [name for name in value if not _ENV_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"env_from names environment variables; not names: {bad}")
        return value

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServer:
        if self.transport == "stdio" and (not self.command or self.url is not None):
            raise ValueError("a stdio server has a command and no url")
        if self.transport == "http" and (self.command is not None or not self.url
                                         or not self.url.startswith(("http://", "https://")) or self.env_from):
            raise ValueError("an http server has an http(s) url, and no command or env_from")
        return self

    def config(self, environ: Mapping[str, str] | None = None) -> McpServerConfig:
        """What the worker connects with: this definition, with the ``env_from`` variables read from ``environ``."""
        return McpServerConfig(
            name=self.name, transport=self.transport, command=self.command or (), url=self.url,
            privacy=self.privacy, freshness=self.freshness, stale_after_seconds=self.stale_after_seconds,
            tools=self.tools, env=passed_env(self.env_from, environ), timeout_seconds=self.timeout_seconds)


class AgentDefinition(_Strict):
    """One ``[agents.NAME]`` table."""

    name: str
    model: str
    """A model SPEC (``openai:gpt-4o-mini``)."""
    system_prompt: str = ""
    tools: tuple[str, ...] | None = None
    """Allow-list of tool names (``None``: every registered tool)."""
    tool_modules: tuple[str, ...] = ()
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    skills: tuple[str, ...] = ()
    token_budget: int | None = Field(default=None, gt=0)
    route: Route | None = None
    endpoint: Endpoint | None = None
    retention: RetentionSpec | None = None
    """Overrides the tools' retention for this agent's artifacts and memories, and sets its
    assembly traces' (``[agents.NAME.retention]`` with ``artifacts``, ``memories``, ``traces``)."""

    @field_validator("model")
    @classmethod
    def _spec(cls, value: str) -> str:
        try:
            provider, _ = parse_model_spec(value)
        except UnknownModelError as error:
            raise ValueError(str(error)) from None
        if provider not in PROVIDERS:
            raise ValueError(f"unknown model provider {provider!r}: known providers are {', '.join(PROVIDERS)}")
        return value

    @field_validator("tool_modules")
    @classmethod
    def _modules(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [name for name in value if not _MODULE.fullmatch(name)]
        if bad:
            raise ValueError(f"not importable module names: {bad}")
        return value

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        if isinstance(value, list):  # [[agents.x.mcp_servers]] with name = ...
            value = {item.get("name") if isinstance(item, dict) else None: item for item in value}
        if isinstance(value, dict):
            return {key: {**item, "name": item.get("name", key)} if isinstance(item, dict) else item
                    for key, item in value.items()}
        return value

    def participant_config(self) -> dict[str, Any]:
        """What the participant row's ``config`` stores of this agent (JSON)."""
        return self.model_dump(mode="json", exclude={"model", "system_prompt", "name"}, exclude_none=True) | {
            "agent": self.name}


class AgentsFile(_Strict):
    """A parsed agents file."""

    path: Path
    agents: dict[str, AgentDefinition] = Field(default_factory=dict)
    skills_dir: Path | None = None
    """The top-level ``skills_dir``, resolved against the file's folder (``None``: not given)."""

    def get(self, name: str) -> AgentDefinition | None:
        """The agent called ``name``, if the file defines it."""
        return self.agents.get(name)

    def tool_modules(self) -> list[str]:
        """Every agent's ``tool_modules``, each once, in file order (what the worker imports)."""
        return list(dict.fromkeys(module for agent in self.agents.values() for module in agent.tool_modules))

    def mcp_servers(self) -> list[McpServer]:
        """Every agent's MCP servers, each name once, in file order (what the worker connects to).

        Raises:
            AgentsFileError: two agents define a server of the same name differently.
        """
        servers: dict[str, McpServer] = {}
        for agent in self.agents.values():
            for name, server in agent.mcp_servers.items():
                if servers.setdefault(name, server) != server:
                    raise AgentsFileError(self.path, "another agent defines an MCP server of this name differently; "
                                          "give one of them another name", agent=agent.name,
                                          field=f"mcp_servers.{name}")
        return list(servers.values())

    def check_tools(self, known: Iterable[str]) -> None:
        """Refuse an allow-list naming a tool that is not registered, or an MCP tool of another agent's server.

        Before the worker has connected to the MCP servers (``known`` without their tools), a name
        under one of the agent's own servers (``mcp.<server>.``) passes.

        Raises:
            AgentsFileError: the agent, the field and the unknown names.
        """
        names = set(known)
        for agent in self.agents.values():
            unknown = [tool for tool in agent.tools or () if not _allowed_name(tool, names, agent.mcp_servers)]
            if unknown:
                raise AgentsFileError(self.path, f"unknown tool(s) {unknown}; registered: {', '.join(sorted(names))}",
                                      agent=agent.name, field="tools")


    def check_skills(self, known: Iterable[str]) -> None:
        """Refuse an agent's ``skills`` naming a skill the skills folder does not have.

        Raises:
            AgentsFileError: the agent, the field and the unknown names.
        """
        names = set(known)
        for agent in self.agents.values():
            unknown = [skill for skill in agent.skills if skill not in names]
            if unknown:
                where = f"skills in {self.skills_dir}" if self.skills_dir else "no skills folder (skills_dir)"
                raise AgentsFileError(self.path, f"unknown skill(s) {unknown}; {where}: "
                                      f"{', '.join(sorted(names)) or 'none'}", agent=agent.name, field="skills")


def _allowed_name(tool: str, known: set[str], servers: Iterable[str]) -> bool:
    """Whether an allow-list may name ``tool``: a registered tool, or one of the agent's own MCP servers'.

    An MCP tool must be under one of the agent's servers; while that server's tools are not in
    ``known`` (not connected yet) any name under it passes, once they are it must be one of them.
    """
    if not tool.startswith(MCP_PREFIX):
        return tool in known
    server = next((name for name in servers if tool.startswith(f"{MCP_PREFIX}{name}.")), None)
    if server is None:
        return False
    connected = any(name.startswith(f"{MCP_PREFIX}{server}.") for name in known)
    return tool in known or not connected


def parse_agents(text: str, path: Path | str = DEFAULT_AGENTS_FILE) -> AgentsFile:
    """Parse an agents file's text.

    Raises:
        AgentsFileError: bad TOML, an unknown top-level key, a bad agent name or field.
    """
    path = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise AgentsFileError(path, f"not valid TOML: {error}") from error
    unknown = sorted(set(data) - {"agents", "skills_dir"})
    if unknown:
        raise AgentsFileError(path, f"unknown top-level key(s) {unknown}; agents are [agents.NAME] tables")
    skills_dir = data.get("skills_dir")
    if skills_dir is not None and (not isinstance(skills_dir, str) or not skills_dir):
        raise AgentsFileError(path, "skills_dir must be a folder's path (a string)", field="skills_dir")
    tables = data.get("agents", {})
    if not isinstance(tables, dict):
        raise AgentsFileError(path, "agents must be a table of [agents.NAME] tables")
    agents: dict[str, AgentDefinition] = {}
    for name, table in tables.items():
        if not _NAME.fullmatch(name):
            raise AgentsFileError(path, "an agent's name is a letter, then letters, digits, '-' or '_'", agent=name)
        if not isinstance(table, dict):
            raise AgentsFileError(path, "must be a table", agent=name)
        try:
            agents[name] = AgentDefinition.model_validate({**table, "name": name})
        except ValidationError as error:
            first = error.errors()[0]
            field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
            raise AgentsFileError(path, first["msg"].removeprefix("Value error, "), agent=name,
                                  field=field or None) from error
    return AgentsFile(path=path, agents=agents,
                      skills_dir=path.parent / skills_dir if skills_dir is not None else None)


def load_agents(path: Path | str) -> AgentsFile:
    """Read and parse an agents file.

    Raises:
        AgentsFileError: unreadable, or see :func:`parse_agents`.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise AgentsFileError(path, f"cannot read: {error}") from error
    return parse_agents(text, path)


def agents_file_path(configured: Path | None, cwd: Path | None = None) -> Path | None:
    """The agents file in force: the configured one, else ``agents.toml`` in ``cwd`` if it exists."""
    if configured is not None:
        return configured
    default = (cwd or Path.cwd()) / DEFAULT_AGENTS_FILE
    return default if default.is_file() else None


def agents_for(configured: Path | None) -> AgentsFile:
    """The agents of the file in force (none when there is no file).

    Raises:
        AgentsFileError: a configured file that is missing or bad, or a bad default file.
    """
    path = agents_file_path(configured)
    return load_agents(path) if path is not None else AgentsFile(path=Path(DEFAULT_AGENTS_FILE))


__all__ = [
    "DEFAULT_AGENTS_FILE",
    "AgentDefinition",
    "AgentsFile",
    "AgentsFileError",
    "Endpoint",
    "McpServer",
    "Route",
    "agents_file_path",
    "agents_for",
    "load_agents",
    "parse_agents",
]
