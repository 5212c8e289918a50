"""A real MCP server written with the SDK, for the MCP tests (docs/mcp.md#how-this-is-tested):
``python lab_server.py`` serves stdio, ``python lab_server.py --http PORT`` streamable HTTP on
the loopback (every request must carry ``Authorization: Bearer lab-token``).

``LAB_NOTES`` names a file each ``note`` and ``lookup`` call appends a line to; ``slow`` waits
until the file ``LAB_RELEASE`` exists, after noting that it started.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

lab = MCPServer("lab")


def _note(line: str) -> None:
    with open(os.environ["LAB_NOTES"], "a", encoding="utf-8") as notes:
        notes.write(line + "\n")


@lab.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@lab.tool()
def note(text: str) -> str:
    """Write a note down (not read-only, not idempotent: MCP's defaults)."""
    _note(f"note {text}")
    return f"noted {text}"


@lab.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
def lookup(key: str) -> str:
    """Look a key up."""
    _note(f"lookup {key}")
    return f"{key} is 42"


@lab.tool()
def fail(why: str) -> CallToolResult:
    """Answer with an error."""
    return CallToolResult(content=[TextContent(type="text", text=f"cannot: {why}")], is_error=True)


@lab.tool(structured_output=False)
def picture() -> list[Any]:
    """A caption and a picture."""
    pixels = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    return [
        TextContent(type="text", text="a square"),
        ImageContent(type="image", data=pixels, mime_type="image/png"),
    ]


@lab.tool(structured_output=False)
def document() -> list[Any]:
    """A text resource and a link to another."""
    return [
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///a.csv", mime_type="text/csv", text="a,b\n1,2"
            ),
        ),
        ResourceLink(type="resource_link", uri="file:///b.csv", name="b"),
    ]


@lab.tool()
async def grow(ctx: Context) -> str:
    """Add the tool echo to this server's list and say the list changed."""

    def echo(text: str) -> str:
        """Say the text back."""
        return text

    ctx.mcp_server.add_tool(echo, name="echo", description="Say the text back.")
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    return "grown"


@lab.tool()
def crash() -> str:
    """End the server's process in the middle of the call."""
    os._exit(3)


@lab.tool()
def slow(tag: str = "") -> str:
    """Note the start, then wait until the release file exists."""
    _note(f"slow started {tag}".rstrip())
    while not os.path.exists(os.environ["LAB_RELEASE"]):
        time.sleep(0.02)
    return f"slow done {tag}".rstrip()


def _http(port: int) -> None:
    import uvicorn

    app = lab.streamable_http_app(host="127.0.0.1")

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and headers.get(b"authorization") != b"Bearer lab-token":
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no token"})
            return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        _http(int(sys.argv[2]))
    else:
        lab.run()
