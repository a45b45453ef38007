"""What an MCP server is configured with, and how its tools are named: no SDK import here.

:mod:`activities.tools.mcp` connects; this module is what the agents file and the
registry need without loading the SDK (the CLI parses agents files on every start).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from activities.tools.registry import MCP_PREFIX
from policy.enums import STRICTEST_PRIVACY, FreshnessClass, PrivacyClass

PREFIX = MCP_PREFIX
"""Every MCP tool's canonical name starts with it: ``mcp.<server>.<tool>``."""
SEGMENT = re.compile(r"[A-Za-z][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*")
"""A server or tool name that fits one segment of a canonical tool name (see the registry)."""


class McpServerError(Exception):
    """An MCP server could not be connected, initialized or listed, or offers a tool that cannot be registered.

    Raised at worker start: a worker never runs with a configured server missing.
    """


@dataclass(frozen=True)
class McpServerConfig:
    """One MCP server, as an agents file configures it (``dossier.agents.McpServer.config`` builds it)."""

    name: str
    """Its name: its tools are offered as ``mcp.<name>.<tool>``."""
    transport: str
    """``stdio`` (a program the worker starts) or ``http`` (streamable HTTP at ``url``)."""
    command: tuple[str, ...] = ()
    """``stdio``: the program and its arguments."""
    url: str | None = None
    """``http``: the endpoint (``http://127.0.0.1:8000/mcp``)."""
    privacy: PrivacyClass = STRICTEST_PRIVACY
    """Privacy class of every call and result (unknown: the strictest, fail closed)."""
    freshness: FreshnessClass = FreshnessClass.SESSION
    """Freshness class of its results."""
    stale_after_seconds: float | None = None
    """Lifetime of a result (the spec's ttl); ``None``: the policy's default for the class."""
    tools: tuple[str, ...] | None = None
    """Allow-list of the server's tool names (``None``: every tool it lists)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """``stdio``: variables set for the server, over the SDK's safe default environment (PATH, HOME ...)."""
    timeout_seconds: float = 30.0
    """Bound on starting the server and on each call."""


def tool_name(server: str, tool: str) -> str:
    """The canonical name of a server's tool (``mcp.git.git_status``)."""
    return f"{PREFIX}{server}.{tool}"


def passed_env(names: Sequence[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables named in ``names`` that are set in ``environ`` (default ``os.environ``)."""
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in names if name in environ}


__all__ = ["PREFIX", "SEGMENT", "McpServerConfig", "McpServerError", "passed_env", "tool_name"]
