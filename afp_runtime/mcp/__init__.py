"""Tools from MCP servers (docs/mcp.md): ``afp.mcp.stdio(...)`` and ``afp.mcp.http(...)``
declare a server an agent takes tools from (``Agent(..., mcp=[...])``, or ``[[agents.mcp]]``
in an agents file); the host keeps one session per server per agent.

Declaring needs nothing more; running needs the ``mcp`` extra (the official SDK).
"""

from __future__ import annotations

from afp_runtime.mcp._servers import McpServer, McpToolOptions, checked_servers, http, stdio
from afp_runtime.mcp._source import McpTools, sessions_open

__all__ = [
    "McpServer",
    "McpToolOptions",
    "McpTools",
    "checked_servers",
    "http",
    "sessions_open",
    "stdio",
]
