"""MCP results as a tool source of the injection part: the corpus through a real MCP server and client.

:func:`hostile_mcp` starts :mod:`harness.harden.mcp_server` over stdio and connects to it
with the worker's own client (:func:`activities.tools.mcp.connect_mcp_servers`);
:func:`mcp_placements` sends it a payload and runs each of its tools through the
registry (the worker's execute path), so the injection part captures exactly the bytes
(text content, structured content) and the error text (an ``isError`` result) an MCP
tool call yields in the worker.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from activities.tools.base import ToolContext, ToolError
from activities.tools.mcp import McpServerConfig, connect_mcp_servers
from activities.tools.registry import ToolRegistry
from harness.harden.corpus import Payload, Placement
from harness.harden.stack import Stack
from policy.enums import PrivacyClass
from policy.tools import ToolSpec

HOSTILE = McpServerConfig(
    name="hostile", transport="stdio", command=(sys.executable, "-m", "harness.harden.mcp_server"),
    # Public, like harden.probe: its results may reach the model raw, the most exposed a result can be.
    privacy=PrivacyClass.PUBLIC, timeout_seconds=60)
"""The hostile server as a worker would be configured with it."""
MCP_FIELDS = {"mcp_text": "note", "mcp_structured": "record", "mcp_error": "fail"}
"""Placement field -> the hostile server's tool that returns the payload there."""
_KEY = "mcp"
"""Where the connected registry lives in :attr:`Stack.extra` while :func:`hostile_mcp` runs."""


@asynccontextmanager
async def hostile_mcp(stack: Stack) -> AsyncIterator[ToolRegistry]:
    """Start and connect the hostile server for as long as the block runs (its tools then join every case).

    Raises:
        McpServerError: the server did not start.
    """
    async with connect_mcp_servers([HOSTILE]) as servers:
        registry = ToolRegistry(servers.tools)
        stack.extra[_KEY] = registry
        try:
            yield registry
        finally:
            stack.extra.pop(_KEY, None)


def mcp_specs(stack: Stack) -> tuple[ToolSpec, ...]:
    """The hostile tools' specs (none unless :func:`hostile_mcp` runs)."""
    registry = stack.extra.get(_KEY)
    return tuple(registry.catalog().tools) if isinstance(registry, ToolRegistry) else ()


async def mcp_placements(stack: Stack, payload: Payload) -> list[Placement]:
    """``payload`` as each hostile tool returns it, called through the registry (none unless connected)."""
    registry = stack.extra.get(_KEY)
    if not isinstance(registry, ToolRegistry):
        return []
    context = ToolContext(account_id="harden", tool_call_id="harden-mcp", attempt=1, workspace=Path("."),
                          artifacts=None, privacy=HOSTILE.privacy)
    out = []
    for field, tool in MCP_FIELDS.items():
        name = f"mcp.{HOSTILE.name}.{tool}"
        try:
            result = await registry.execute(name, context, {"text": payload.text})
        except ToolError as error:  # recorded as the worker records a failed attempt
            out.append(Placement(field, name, "text/plain", f"{type(error).__name__}: {error}".encode(), failed=True))
        else:
            out.append(Placement(field, name, result.content_type, result.payload))
    return out


__all__ = ["HOSTILE", "MCP_FIELDS", "hostile_mcp", "mcp_placements", "mcp_specs"]
