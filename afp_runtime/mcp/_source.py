"""An agent's MCP servers as one source of tools (docs/mcp.md#sessions): the host runs their
sessions for as long as it runs the agent; the agent reads their latest tools each time it
builds a request."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio

from afp_runtime.mcp._connection import McpConnection
from afp_runtime.mcp._servers import McpServer
from afp_runtime.records import Clock
from afp_runtime.tools import Tool

__all__ = ["McpTools", "sessions_open"]


class McpTools:
    """The sessions of one agent with each of its servers, and the tools they list."""

    def __init__(self, servers: Sequence[McpServer], *, agent_id: str) -> None:
        self.servers = tuple(servers)
        self.connections = tuple(McpConnection(s, agent_id=agent_id) for s in self.servers)
        self._running = False

    @property
    def started(self) -> bool:
        """Whether a host or a store runs the sessions now."""
        return self._running

    @property
    def version(self) -> tuple[int, ...]:
        """Changes whenever a server's tool list is read again."""
        return tuple(connection.version for connection in self.connections)

    def tools(self) -> tuple[Tool, ...]:
        """Every server's latest tools, in the order the servers are declared."""
        return tuple(tool for connection in self.connections for tool in connection.tools)

    async def wait_ready(self) -> None:
        """Return once every server's first try to open its session has ended (opened, failed
        or timed out)."""
        for connection in self.connections:
            await connection.ready.wait()

    async def run(self, clock: Clock) -> None:
        """Open every server's session and keep them open until cancelled."""
        if self._running:
            # Another runner (a host, an open store) holds the sessions: one per server.
            await anyio.sleep_forever()
        self._running = True
        try:
            async with anyio.create_task_group() as group:
                for connection in self.connections:
                    group.start_soon(connection.run, clock)
        finally:
            self._running = False


@asynccontextmanager
async def sessions_open(source: McpTools | None, clock: Clock) -> AsyncIterator[None]:
    """The block runs with the agent's MCP sessions open (once each first try has ended);
    they close when it ends. An exception of the block is raised as itself."""
    if source is None:
        yield
        return
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(source.run, clock)
            await source.wait_ready()
            yield
            group.cancel_scope.cancel()
    except BaseExceptionGroup as failed:
        if len(failed.exceptions) == 1:
            raise failed.exceptions[0] from None
        raise
