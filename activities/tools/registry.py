"""The tool registry: the tools a runtime offers, their schemas, specs and execution.

One registry is built by the worker (:func:`default_registry`) and used three
ways: :meth:`ToolRegistry.schemas` is what the model is offered,
:meth:`ToolRegistry.catalog` is the policy metadata capture and derivation
read, and :meth:`ToolRegistry.execute` runs a call inside the ``execute_tool``
activity, after checking its arguments.

Tool names are dotted (``workspace.read_csv``): that is the name recorded on
tool calls, memories and specs. OpenAI function names may only hold
``[A-Za-z0-9_-]``, so :meth:`ToolRegistry.schemas` offers each tool under its
*wire name* (``workspace__read_csv``). A provider that talks to a real API
maps the names it gets back with :func:`canonical_name` before returning
tool calls, so the rest of the runtime only ever sees canonical names.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

from activities.tools import diag, files, human, runtime, skills, table, workspace
from activities.tools.arguments import check_schema, validate_arguments
from activities.tools.base import (
    DeferredToolError,
    RegisteredTool,
    ToolArgumentError,
    ToolContext,
    ToolError,
    ToolExecutionError,
    ToolResult,
    ToolSchemaError,
    UnknownToolError,
)
from policy.tools import ToolCatalog, canonical_name, wire_name

_CANONICAL = re.compile(r"[A-Za-z][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*(?:\.[A-Za-z][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*)*")
"""Dotted segments of letters, digits, ``-`` and single ``_`` (a double ``_`` encodes the dot)."""
_WIRE_MAX = 64
DRILL_PREFIX = "diag."
"""Failure drills: offered to a real model only when its participant names them."""
MCP_PREFIX = "mcp."
"""MCP servers' tools (``mcp.<server>.<tool>``): offered by default only to the agents that declare the server."""


class ToolRegistry:
    """The tools of one runtime, by canonical name.

    Args:
        tools: the tools to offer.

    Raises:
        ValueError: a duplicate or unencodable name, or a parameters schema that is not an object schema.
        ToolSchemaError: a parameters schema that is not valid JSON Schema (a ``ValueError`` too).
    """

    def __init__(self, tools: Iterable[RegisteredTool]) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        for tool in tools:
            # The dotted name itself must fit: wire_name's hashed fallback is for names a provider made up.
            if not _CANONICAL.fullmatch(tool.name) or len(tool.name.replace(".", "__")) > _WIRE_MAX:
                raise ValueError(f"tool name {tool.name!r} cannot be offered as an OpenAI function name")
            if tool.name in self._tools:
                raise ValueError(f"tool {tool.name!r} is registered twice")
            if not isinstance(tool.parameters, dict) or tool.parameters.get("type") != "object":
                raise ToolSchemaError(f"{tool.name}: parameters must be an object schema")
            check_schema(tool.parameters, f"{tool.name}.parameters")
            self._tools[tool.name] = tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[RegisteredTool]:
        """Tools in name order."""
        return iter(self._tools[name] for name in self.names())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        """Canonical names, sorted."""
        return sorted(self._tools)

    def get(self, name: str) -> RegisteredTool:
        """The tool called ``name`` (canonical, dotted).

        Raises:
            UnknownToolError: no such tool.
        """
        try:
            return self._tools[name]
        except KeyError:
            hint = ""
            if canonical_name(name) in self._tools:
                hint = f" ({name!r} is a wire name; map it with canonical_name() to {canonical_name(name)!r})"
            raise UnknownToolError(f"unknown tool {name!r}{hint}; known tools: {', '.join(self.names())}") from None

    def catalog(self) -> ToolCatalog:
        """The policy metadata of every tool, for capture and derivation."""
        return ToolCatalog(tools=tuple(tool.spec for tool in self))

    def offered(self, provider: str | None, allowed: Sequence[str] | None = None,
                servers: Collection[str] = ()) -> list[str]:
        """The canonical names a participant is offered, sorted.

        Args:
            provider: the participant's provider (``scripted``, ``local``, ``openai`` ...).
            allowed: the participant's allow-list (``config["tools"]``); names not registered are dropped.
            servers: the MCP servers its agent declares (``config["mcp_servers"]``).

        Returns:
            ``allowed`` when given; otherwise every tool for a scripted model (its scripts name the
            tools they call) and every tool but the ``diag.*`` drills for a real model, which would
            call a drill unprompted; either way without the tools of MCP servers its agent does not declare.
        """
        if allowed is not None:
            wanted = set(allowed)
            return [name for name in self.names() if name in wanted]
        own = tuple(f"{MCP_PREFIX}{server}." for server in servers)
        names = [name for name in self.names() if not name.startswith(MCP_PREFIX) or name.startswith(own)]
        if (provider or "scripted") == "scripted":
            return names
        return [name for name in names if not name.startswith(DRILL_PREFIX)]

    def unknown(self, names: Iterable[str]) -> list[str]:
        """The names among ``names`` that are not registered tools."""
        return sorted(set(names) - set(self._tools))

    def schemas(self, allowed: Collection[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI ``tools`` entries, in name order, under wire names.

        Args:
            allowed: offer only these tools (an agent's allow-list); ``None``: every tool.
        """
        return [
            {
                "type": "function",
                "function": {
                    "name": wire_name(tool.name),
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in self
            if allowed is None or tool.name in allowed
        ]

    async def execute(self, name: str, context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        """Check the arguments and run the tool once (one attempt; Temporal owns retries).

        Args:
            name: the tool's canonical name.
            arguments: the arguments the model sent.

        Raises:
            UnknownToolError: no such tool.
            DeferredToolError: a deferred tool (a human answers it).
            ToolArgumentError: arguments that do not fit the schema, or that the tool refused.
            ToolExecutionError: the tool failed; unexpected exceptions are turned into this.
        """
        tool = self.get(name)
        if tool.deferred or tool.run is None:
            raise DeferredToolError(f"{name} is answered by the user, not executed; wait for the answer")
        try:
            checked = validate_arguments(tool.parameters, arguments)
        except ToolArgumentError as error:
            raise ToolArgumentError(f"{name}: {error}") from error
        try:
            result = await tool.run(context, checked)
        except ToolError:
            raise
        except Exception as error:
            # The one place foreign exceptions become ours: a bug or an I/O error in a tool is a failed attempt.
            raise ToolExecutionError(f"{name} failed: {type(error).__name__}: {error}") from error
        if not isinstance(result, ToolResult):
            raise ToolExecutionError(f"{name} returned {type(result).__name__}, not a ToolResult")
        return result


def default_registry() -> ToolRegistry:
    """Every built-in tool: workspace, table, files, the deferred picker, the diagnostics, recall, remember and
    ``load_skill``.

    ``load_skill`` is offered only to participants whose agent lists skills (:mod:`policy.skills`).
    """
    return ToolRegistry([*workspace.TOOLS, *table.TOOLS, *files.TOOLS, *human.TOOLS, *diag.TOOLS,
                         *runtime.TOOLS, *skills.TOOLS])


__all__ = [
    "DRILL_PREFIX",
    "MCP_PREFIX",
    "DeferredToolError",
    "RegisteredTool",
    "ToolArgumentError",
    "ToolContext",
    "ToolError",
    "ToolExecutionError",
    "ToolRegistry",
    "ToolResult",
    "ToolSchemaError",
    "UnknownToolError",
    "canonical_name",
    "default_registry",
    "wire_name",
]
