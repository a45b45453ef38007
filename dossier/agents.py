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

    [agents.analyst.mcp_servers.files]                  # parsed and checked only (MCP comes later)
    transport = "stdio"
    command = ["mcp-files", "--root", "data"]
    privacy = "user"
    tools = ["read"]

``endpoint.api_key_env`` names the environment variable that holds the key:
a key itself is refused in the file.

Where a model spec is taken (``dossier chat --model NAME``, ``DossierClient.chat(model=NAME)``),
a name without ``:`` is an agent: its participant gets the agent's model and
system prompt, and its ``config`` stores the rest of the definition. In force
today: the ``tools`` allow-list (what the model is offered and what
``execute_tool`` runs), ``endpoint`` (its model calls), ``tool_modules`` (the
worker registers their tools at start), ``route`` (every assembly's provider
route is narrowed to it, never widened), ``token_budget`` (every assembly's
budget, or a smaller one after a context refused as too long) and ``skills``:
the skills (folders ``<skills_dir>/<name>/SKILL.md``, :mod:`activities.skills`)
its context's skill catalog lists and its ``load_skill`` tool may load; a tool a
skill grants is offered only once the skill is loaded (:mod:`policy.skills`).
The skills folder is ``DOSSIER_SKILLS_DIR``, else the file's top-level
``skills_dir``; a skill no folder has stops the worker. Parsed and stored only:
``mcp_servers``.

Every problem is an :class:`AgentsFileError` naming the file, the agent and the field.
The file is :attr:`~dossier.settings.Settings.dossier_agents_file` (``DOSSIER_AGENTS_FILE``),
else ``agents.toml`` in the working directory when there is one (:func:`agents_file_path`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from activities.providers.base import UnknownModelError, parse_model_spec
from activities.providers.factory import PROVIDERS
from policy.enums import STRICTEST_PRIVACY, FreshnessClass, PrivacyClass

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
    """An MCP server an agent may use (parsed and checked only; MCP itself is not wired yet)."""

    name: str
    """The server's name (its table key); its tools are offered as ``NAME.tool``."""
    transport: Literal["stdio", "http"]
    command: tuple[str, ...] | None = None
    """``stdio``: the program and its arguments."""
    url: str | None = None
    """``http``: the server's URL."""
    privacy: PrivacyClass = STRICTEST_PRIVACY
    """Privacy class of its calls and results (default: the strictest, fail closed)."""
    freshness: FreshnessClass = FreshnessClass.SESSION
    stale_after_seconds: float | None = Field(default=None, gt=0)
    tools: tuple[str, ...] | None = None
    """Allow-list of its tools (``None``: all)."""

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServer:
        if self.transport == "stdio" and (not self.command or self.url is not None):
            raise ValueError("a stdio server has a command and no url")
        if self.transport == "http" and (self.command is not None or not self.url
                                         or not self.url.startswith(("http://", "https://"))):
            raise ValueError("an http server has an http(s) url and no command")
        return self


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

    def check_tools(self, known: Iterable[str]) -> None:
        """Refuse an allow-list naming a tool that is not registered (MCP servers' tools excepted).

        Raises:
            AgentsFileError: the agent, the field and the unknown names.
        """
        names = set(known)
        for agent in self.agents.values():
            servers = tuple(f"{server}." for server in agent.mcp_servers)
            unknown = [tool for tool in agent.tools or () if tool not in names and not tool.startswith(servers)]
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
