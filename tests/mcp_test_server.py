"""An MCP server the tests start themselves, over stdio or streamable HTTP, built with the SDK's ``MCPServer``.

Run ``python tests/mcp_test_server.py stdio`` or ``python tests/mcp_test_server.py http PORT``.
Its tools cover each way a call can end: ``echo`` (text), ``lookup`` (structured content, or
a JSON-RPC INVALID_PARAMS error for a key it does not know), ``fail`` (a result flagged
``isError``) and ``secret`` (which an allow-list leaves out; calling it appends a line to
the file named by ``MCP_TEST_MARKER``, so a test can prove it never ran).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

REGIONS = {"emea": 1_250_000, "amer": 980_000, "apac": 640_000}
"""What ``lookup`` knows: Q3 2026 revenue by region."""

server = MCPServer("dossier-test", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Return the text as it was sent."""
    return text


@server.tool()
def lookup(region: str) -> dict:
    """Q3 2026 revenue of a region (emea, amer or apac)."""
    if region not in REGIONS:
        raise MCPError(INVALID_PARAMS, f"unknown region {region!r}; known: {', '.join(sorted(REGIONS))}")
    return {"region": region, "revenue": REGIONS[region], "currency": "EUR"}


@server.tool()
def fail(reason: str) -> str:
    """Fail with the given reason (an ``isError`` result)."""
    raise ToolError(f"the backend is down: {reason}")


@server.tool()
def secret() -> str:
    """A tool the allow-list leaves out; it records that it ran."""
    marker = os.environ.get("MCP_TEST_MARKER")
    if marker:
        with Path(marker).open("a", encoding="utf-8") as out:
            out.write("secret ran\n")
    return "the launch codes"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
