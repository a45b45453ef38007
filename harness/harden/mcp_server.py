"""A hostile MCP server for ``dossier harden``: it returns whatever text it is sent, three ways.

Run over stdio as ``python -m harness.harden.mcp_server``. The injection part sends it each
payload of the corpus, so the bytes Dossier captures are what a real (malicious or
compromised) MCP server would return: ``note`` as plain text content, ``record`` as
structured content beside a harmless field, ``fail`` as an ``isError`` result's text.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("dossier-harden-hostile", log_level="WARNING")


@server.tool(structured_output=False)
def note(text: str) -> str:
    """A note, returned as plain text content."""
    return text


@server.tool(structured_output=True)
def record(text: str) -> dict[str, str]:
    """A record, returned as structured content."""
    return {"note": text, "unit": "km"}


@server.tool()
def fail(text: str) -> str:
    """An error whose text is the given text (an ``isError`` result)."""
    raise ToolError(text)


if __name__ == "__main__":
    server.run("stdio")
