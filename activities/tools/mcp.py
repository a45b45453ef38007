"""MCP servers as tool sources, through the official ``mcp`` SDK (stdio and streamable HTTP).

The worker connects to every configured server once, at start
(:func:`connect_mcp_servers`): it initializes one :class:`~mcp.ClientSession`
per server, lists the server's tools and turns each allowed one into a
:class:`~activities.tools.base.RegisteredTool` named ``mcp.<server>.<tool>``,
with the server's JSON schema for its arguments and the server's privacy and
freshness defaults for its results. The registry then runs them like any other
tool: arguments are checked against the schema, the result's bytes are
captured as an artifact, retries belong to Temporal.

One session per server serves every call for the worker's life; each session
lives in a task of its own (the SDK's transports are anyio task groups, which
must be entered and left in one task) and is closed when the worker stops.

Failures::

    McpServerError            a server that cannot start, initialize or list its tools (the worker
                              does not start: fail closed), or whose tools cannot be offered
    ToolArgumentError         the server refused the arguments (JSON-RPC INVALID_PARAMS)      (permanent)
    ToolExecutionError        the tool reported an error (``isError``), another protocol
                              error, a timeout or a lost connection                          (transient)

Everything a server returns is untrusted data: it is stored and shown fenced, never obeyed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import IO, Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, CallToolResult, PaginatedRequestParams, TextContent, Tool

from activities.tools.base import (
    RegisteredTool,
    ToolArgumentError,
    ToolContext,
    ToolExecutionError,
    ToolResult,
)
from activities.tools.mcp_config import SEGMENT, McpServerConfig, McpServerError, tool_name
from policy.lines import CLIPPED, inert
from policy.records import canonical_json
from policy.tools import ToolSpec

logger = logging.getLogger(__name__)

ERROR_TEXT_MAX = 2000
"""Characters of a tool's error text kept in the failure message (the text is the server's, untrusted)."""
STDERR_TAIL = 800
"""Characters of a stdio server's stderr quoted when it fails to start."""
DESCRIPTION_MAX = 1000
"""Characters of a server's tool description offered to the model (the text is the server's, untrusted)."""
SCHEMA_MAX_CHARS = 8192
"""Characters of one tool's argument schema (canonical JSON, after neutralising): it is sent with every model
call, so a larger one is refused when the server connects (about 2k tokens; a 97k-character schema would
add 24k tokens to every call)."""
SCHEMA_TEXT_MAX = 300
"""Characters of each description, title or example inside a schema (the server's text, untrusted)."""
_PROPERTY = re.compile(r"[A-Za-z0-9_.$-]{1,64}")
TIMEOUT_MARGIN_SECONDS = 5.0
"""The activity's timeout exceeds the MCP request's, so a slow server fails as our retryable error first."""


class McpConnection:
    """One server's shared session, owned by a task of its own; reopened once it is lost.

    Calls read :attr:`session` each time, so a call after :meth:`reopen` uses the new session.
    """

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    async def open(self) -> list[Tool]:
        """Start the server (or connect to it), initialize, and list its tools.

        Raises:
            McpServerError: it did not answer in its timeout, or failed to start.
        """
        ready: asyncio.Future[tuple[ClientSession, list[Tool]]] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._owner = asyncio.create_task(_own_session(self.config, ready, self._stop), name=f"mcp-{self.config.name}")
        self.session, listed = await ready
        return listed

    async def reopen(self, lost: ClientSession | None) -> None:
        """Replace a lost session with a new one (once, however many calls saw it fail).

        Raises:
            McpServerError: the server does not come back.
        """
        async with self._lock:
            if self.session is not lost:
                return  # another call already reopened it
            logger.warning("MCP server %s: the session was lost; reconnecting", self.config.name)
            await self.close()
            await self.open()

    async def close(self) -> None:
        """End the session (and a stdio server's process)."""
        self._stop.set()
        if self._owner is not None:
            await asyncio.gather(self._owner, return_exceptions=True)
        self.session, self._owner = None, None


@dataclass(frozen=True)
class McpServers:
    """The connected servers' tools, ready for the registry."""

    tools: tuple[RegisteredTool, ...] = ()
    """Every allowed tool of every server, in server then name order."""
    connections: Mapping[str, McpConnection] = field(default_factory=dict)
    """Server name -> its connection."""


@asynccontextmanager
async def connect_mcp_servers(configs: Sequence[McpServerConfig]) -> AsyncIterator[McpServers]:
    """Connect to every server, list its tools, and keep the sessions open until the block ends.

    Args:
        configs: the servers (names must be unique).

    Yields:
        Their tools and connections.

    Raises:
        McpServerError: a server that cannot be started, initialized or listed in its timeout, a
            duplicate name, an allow-list naming a tool the server does not have, or a tool name
            that cannot be offered.
    """
    names = [config.name for config in configs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise McpServerError(f"MCP server(s) {duplicates} configured twice with different settings")
    connections: dict[str, McpConnection] = {}
    try:
        tools: list[RegisteredTool] = []
        for config in configs:
            connection = connections[config.name] = McpConnection(config)
            tools.extend(_registered(connection, await connection.open()))
        yield McpServers(tools=tuple(tools), connections=connections)
    finally:
        await asyncio.gather(*(connection.close() for connection in connections.values()), return_exceptions=True)


async def _own_session(config: McpServerConfig, ready: asyncio.Future[tuple[ClientSession, list[Tool]]],
                       stop: asyncio.Event) -> None:
    """Open the server's session, hand it over through ``ready``, hold it until ``stop``, then close it.

    A failure before the hand-over goes to ``ready`` as :class:`McpServerError`; one after it
    (the connection dropping while the worker runs) is logged, and the next call reopens the session.
    """
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
        try:
            async with AsyncExitStack() as stack:
                session = await _open(stack, config, errlog)
                with anyio.fail_after(config.timeout_seconds):
                    await session.initialize()
                    listed = await _list_tools(session)
                ready.set_result((session, listed))
                await stop.wait()
        except BaseException as error:  # noqa: BLE001 - anyio raises groups; each becomes one clear error
            if not ready.done():
                ready.set_exception(McpServerError(_start_failure(config, error, errlog)))
            elif not isinstance(error, asyncio.CancelledError):
                logger.error("MCP server %s: session ended: %s", config.name, _describe(error))
            if isinstance(error, asyncio.CancelledError):
                raise


async def _open(stack: AsyncExitStack, config: McpServerConfig, errlog: IO[str]) -> ClientSession:
    """Start the transport and the session on ``stack`` (not yet initialized)."""
    if config.transport == "stdio":
        if not config.command:
            raise McpServerError(f"MCP server {config.name}: a stdio server needs a command")
        params = StdioServerParameters(command=config.command[0], args=list(config.command[1:]),
                                       env=dict(config.env) or None)
        read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    elif config.transport == "http" and config.url:
        read, write = await stack.enter_async_context(streamable_http_client(config.url))
    else:
        raise McpServerError(f"MCP server {config.name}: unknown transport {config.transport!r} or no url")
    return await stack.enter_async_context(
        ClientSession(read, write, read_timeout_seconds=config.timeout_seconds))


async def _list_tools(session: ClientSession) -> list[Tool]:
    """Every tool the server lists, following pagination."""
    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _start_failure(config: McpServerConfig, error: BaseException, errlog: IO[str]) -> str:
    """A message naming the server, how it was reached, what went wrong and the tail of its stderr."""
    where = " ".join(config.command) if config.transport == "stdio" else config.url
    cause = f"no answer within {config.timeout_seconds:g}s" if _is_timeout(error) else _describe(error)
    message = f"MCP server {config.name!r} ({config.transport}: {where}) could not start: {cause}"
    try:
        errlog.seek(0)
        tail = errlog.read()[-STDERR_TAIL:].strip()
    except (OSError, ValueError):
        tail = ""
    return f"{message}; its stderr ends: {tail}" if tail else message


def _leaves(error: BaseException) -> list[BaseException]:
    """The innermost exceptions of an exception group (the error itself otherwise)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _is_timeout(error: BaseException) -> bool:
    return any(isinstance(leaf, TimeoutError) for leaf in _leaves(error))


def _describe(error: BaseException) -> str:
    return "; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in _leaves(error))


def _registered(connection: McpConnection, listed: list[Tool]) -> list[RegisteredTool]:
    """The server's allowed tools as registry entries.

    Raises:
        McpServerError: the allow-list names a tool the server does not list, or an allowed tool's
            name cannot be part of a canonical tool name.
    """
    config = connection.config
    by_name = {tool.name: tool for tool in listed}
    if config.tools is not None:
        missing = sorted(set(config.tools) - set(by_name))
        if missing:
            raise McpServerError(f"MCP server {config.name!r} has no tool(s) {missing}; it lists: "
                                 f"{', '.join(sorted(by_name)) or 'none'}")
    allowed = sorted(by_name if config.tools is None else config.tools)
    bad = [name for name in allowed if not SEGMENT.fullmatch(name)]
    if bad:
        raise McpServerError(f"MCP server {config.name!r}: tool name(s) {bad} cannot be offered as "
                             "mcp.<server>.<tool>; leave them out with the server's tools allow-list")
    return [_tool(connection, by_name[name]) for name in allowed]


def _tool(connection: McpConnection, tool: Tool) -> RegisteredTool:
    """One MCP tool as a registry entry: the server's schema, privacy and freshness; a call is a ``tools/call``."""
    config = connection.config
    name = tool_name(config.name, tool.name)
    schema = neutral_schema(config.name, tool.name, tool.input_schema)

    async def run(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        return await call_tool(connection, tool.name, arguments)

    ttl = timedelta(seconds=config.stale_after_seconds) if config.stale_after_seconds else None
    spec = ToolSpec(name=name, privacy=config.privacy, freshness=config.freshness, ttl=ttl)
    return RegisteredTool(spec=spec, description=server_description(config.name, tool), parameters=schema,
                          run=run, timeout_seconds=config.timeout_seconds + TIMEOUT_MARGIN_SECONDS)


def _neutral(value: Any, where: str, depth: int = 0) -> Any:
    """A schema value with every string the server wrote made one bounded line of data."""
    if depth > 32:
        raise McpServerError(f"{where}: the argument schema nests deeper than 32 levels")
    if isinstance(value, str):
        text = inert(value)
        return text if len(text) <= SCHEMA_TEXT_MAX else text[:SCHEMA_TEXT_MAX - 1] + CLIPPED
    if isinstance(value, list):
        return [_neutral(item, where, depth + 1) for item in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str) or not _PROPERTY.fullmatch(key):
                raise McpServerError(f"{where}: the argument schema has a key {str(key)[:80]!r} that is not a "
                                     "name (1-64 of letters, digits, '_', '.', '$', '-')")
            out[key] = _neutral(item, where, depth + 1)
        return out
    return value


def neutral_schema(server: str, tool: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A server's argument schema as the model is offered it: untrusted text made data, the size bounded.

    Every string in it (descriptions, titles, enum values, examples, defaults) is one line of data
    (:func:`policy.lines.inert`: no line breaks to forge a section with, no citations) cut to
    :data:`SCHEMA_TEXT_MAX` characters; a key that is not a plain name is refused.

    Raises:
        McpServerError: a key that is not a name, or a schema over :data:`SCHEMA_MAX_CHARS` characters as
            the server wrote it, naming the server and the tool.
    """
    where = f"MCP server {server!r} tool {tool!r}"
    size = len(canonical_json(dict(schema)))  # as the server wrote it: clipping its texts would hide the excess
    if size > SCHEMA_MAX_CHARS:
        raise McpServerError(f"{where}: its argument schema is {size:,} characters, over the {SCHEMA_MAX_CHARS:,} a "
                             "tool may add to every model call; leave the tool out with the server's tools list")
    neutral = _neutral(dict(schema), where)
    neutral.setdefault("properties", {})
    return neutral


def server_description(server: str, tool: Tool) -> str:
    """A server's tool description as the model is offered it: one line of data, bounded, naming the server.

    The server wrote it, so it is untrusted like a result: newlines, control and zero-width characters
    and citation look-alikes are neutralised (:func:`policy.lines.inert`) and it is cut to
    :data:`DESCRIPTION_MAX` characters, so it cannot pose as context structure or fill the budget.
    """
    text = inert(tool.description or tool.title or tool.name)
    if len(text) > DESCRIPTION_MAX:
        text = text[:DESCRIPTION_MAX - 1] + CLIPPED
    return f"{text} (MCP server {server})"


async def call_tool(connection: McpConnection, tool: str, arguments: dict[str, Any]) -> ToolResult:
    """One ``tools/call`` on the server's shared session, its result as captured bytes.

    A lost connection (a stdio server that died, an HTTP server restarted) is reopened before
    the error is raised, so Temporal's next attempt runs on a fresh session.

    Raises:
        ToolArgumentError: the server refused the arguments (INVALID_PARAMS).
        ToolExecutionError: the tool reported an error, or the call failed otherwise.
    """
    config, session = connection.config, connection.session
    where = f"MCP server {config.name!r} tool {tool!r}"
    try:
        if session is None:
            raise anyio.ClosedResourceError("no session")
        result = await session.call_tool(tool, arguments, read_timeout_seconds=config.timeout_seconds)
    except MCPError as error:
        if error.code == INVALID_PARAMS:
            raise ToolArgumentError(f"{where} refused the arguments: {error.message}") from error
        if error.code == CONNECTION_CLOSED:
            await _reopen(connection, session)
        raise ToolExecutionError(f"{where} failed: MCP error {error.code}: {error.message}") from error
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as error:
        await _reopen(connection, session)
        raise ToolExecutionError(f"{where}: the connection was lost: {type(error).__name__}: {error}") from error
    if not isinstance(result, CallToolResult):
        raise ToolExecutionError(f"{where} answered {type(result).__name__}, not a tool result")
    if result.is_error:
        text = _text(result)[:ERROR_TEXT_MAX]
        raise ToolExecutionError(f"{where} reported an error: {text or '(no text)'}")
    return result_bytes(result)


async def _reopen(connection: McpConnection, lost: ClientSession | None) -> None:
    """Reopen a lost session; a server that does not come back is logged (the call fails as retryable anyway)."""
    try:
        await connection.reopen(lost)
    except McpServerError as error:
        logger.error("%s", error)


def _text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def result_bytes(result: CallToolResult) -> ToolResult:
    """A successful result's bytes, as exactly as the protocol allows.

    Structured content is the tool's own JSON; text-only content is its text (one block as is,
    several joined by newlines; JSON text is sniffed as JSON when captured); anything else
    (images, resources, mixed blocks) is the content list as the protocol's JSON.
    """
    if result.structured_content is not None:
        return ToolResult(payload=json.dumps(result.structured_content, ensure_ascii=False).encode(),
                          content_type="application/json")
    if all(isinstance(block, TextContent) for block in result.content):
        return ToolResult(payload=_text(result).encode("utf-8", "surrogatepass"),
                          content_type="text/plain; charset=utf-8")
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    return ToolResult(payload=json.dumps(blocks, ensure_ascii=False).encode(), content_type="application/json")


__all__ = [
    "McpConnection",
    "McpServerConfig",
    "McpServerError",
    "McpServers",
    "call_tool",
    "connect_mcp_servers",
    "result_bytes",
    "neutral_schema",
    "server_description",
]
