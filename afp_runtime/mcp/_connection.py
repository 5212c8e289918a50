"""One agent's session with one MCP server (docs/mcp.md#sessions): opened when the host starts,
kept open across turns, its tool list read again when the server says it changed, and opened
again after a failure.

Built on the official SDK (the ``mcp`` extra), imported here only.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from contextlib import AsyncExitStack
from typing import Any

import anyio

from afp_runtime._logging import get_logger
from afp_runtime._version import VERSION
from afp_runtime.errors import ConfigError, McpServerError
from afp_runtime.mcp._servers import McpServer
from afp_runtime.mcp._tools import as_tool
from afp_runtime.records import Clock
from afp_runtime.tools import Tool, ToolContext

__all__ = ["McpConnection"]

log = get_logger()

# Reopening after a failure: the first try soon, then doubling up to a minute.
_RETRY_FIRST_S = 0.5
_RETRY_LAST_S = 60.0
# Checkpoints a reply waits for the notifications that came before it (see ``call``).
_NOTIFICATION_CHECKPOINTS = 5
# Pages of a tool list read at most (a server that pages forever is refused).
_PAGES = 100


_SDK_MODULES = (
    "mcp",
    "jsonschema",  # the SDK checks structured results with it, importing it at first use
    "mcp.types",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.subscriptions",
    "httpx2",
)


def _import_sdk() -> Any:
    try:
        for name in _SDK_MODULES:
            importlib.import_module(name)
    except ImportError as exc:  # the extra is not installed
        raise ConfigError(
            "an agent declares MCP servers but the MCP SDK is not installed: "
            "pip install 'afp-runtime[mcp]'"
        ) from exc
    return sys.modules["mcp"]


async def _sdk() -> Any:
    """The SDK, imported in a worker thread the first time (an import reads files)."""
    loaded = sys.modules.get("mcp")
    if loaded is not None and all(name in sys.modules for name in _SDK_MODULES):
        return loaded
    return await anyio.to_thread.run_sync(_import_sdk)


def _reason(exc: BaseException) -> str:
    """The first real failure inside the task groups' exception groups, in words."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (inner or list(exc.exceptions))[0]
    if isinstance(exc, McpServerError):
        return exc.message
    text = str(exc) or "(no message)"
    return f"{type(exc).__name__}: {text}"


class McpConnection:
    """The session of one agent with one server, and the tools it lists."""

    def __init__(self, server: McpServer, *, agent_id: str) -> None:
        self.server = server
        # Sessions run beside the agent's worker, not in it: their log lines name the agent.
        self._agent_id = agent_id
        self.tools: tuple[Tool, ...] = ()
        """The agent's tools from the server's latest list (kept while it is down)."""
        self.version = 0
        """Counts the lists read, so the agent knows when to build its tool set again."""
        self.down: str | None = "not connected yet"
        """Why there is no session now (None while there is one)."""
        self.ready = anyio.Event()
        """Set once the first try to open the session has ended, opened or not."""
        self._client: Any = None
        self._up = anyio.Event()
        self._broken: anyio.Event = anyio.Event()
        self._broken_why = ""
        self._changed = anyio.Event()
        # Changes the server announced, and how many of them the latest list reflects.
        self._changes = 0
        self._changes_listed = 0
        self._relisted = anyio.Event()
        self._opened = False

    # -- the session's life ------------------------------------------------------------------

    async def run(self, clock: Clock) -> None:
        """Keep a session open until cancelled: open, list, follow changes; after a failure,
        log it, wait (0.5 s doubling up to 60 s on ``clock``) and open again."""
        failures = 0
        while True:
            was_up = False
            try:
                await self._session(clock)
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:
                was_up = self._opened
                self._lost(_reason(exc))
            failures = 1 if was_up else failures + 1
            wait_s = min(_RETRY_LAST_S, _RETRY_FIRST_S * 2 ** min(failures - 1, 16))
            log.warning(
                "mcp server unavailable",
                agent_id=self._agent_id,
                server=self.server.name,
                transport=self.server.transport,
                error=self.down,
                retry_in_s=wait_s,
            )
            await clock.sleep(wait_s)

    def _lost(self, why: str) -> None:
        self.down = why
        self._client = None
        if self._up.is_set():  # calls waiting now wait for the next session
            self._up = anyio.Event()
        self.ready.set()

    async def _session(self, clock: Clock) -> None:
        mcp = await _sdk()
        self._opened = False
        self._broken = anyio.Event()
        self._broken_why = ""
        self._changed = anyio.Event()
        async with anyio.create_task_group() as group, AsyncExitStack() as stack:
            opened = anyio.Event()
            group.start_soon(self._watch_start, clock, opened)
            client = await stack.enter_async_context(
                mcp.Client(
                    await self._transport(stack),
                    message_handler=self._on_message,
                    cache=None,
                    client_info=mcp.types.Implementation(name="afp-runtime", version=VERSION),
                )
            )
            # The change stream opens before the first list, so no change falls between.
            await group.start(self._follow_changes, client)
            await self._list(client)
            opened.set()
            self._client = client
            self._opened = True
            self.down = None
            self._up.set()
            self.ready.set()
            log.info(
                "mcp server connected",
                agent_id=self._agent_id,
                server=self.server.name,
                protocol=getattr(client, "protocol_version", None),
                tools=len(self.tools),
            )
            await self._broken.wait()
            raise McpServerError(self._broken_why, server=self.server.name)

    async def _watch_start(self, clock: Clock, opened: anyio.Event) -> None:
        with clock.move_on_after(self.server.connect_timeout_s):
            await opened.wait()
            return
        raise McpServerError(
            f"MCP server {self.server.name!r} did not start and list its tools within "
            f"{self.server.connect_timeout_s:g} s",
            server=self.server.name,
        )

    async def _transport(self, stack: AsyncExitStack) -> Any:
        server = self.server
        if server.command is not None:
            from mcp import StdioServerParameters

            return StdioServerParameters(
                command=server.command,
                args=list(server.args),
                env=dict(server.env) or None,
                cwd=server.cwd,
            )
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert server.url is not None
        # Reads wait as long as a call may take: the host's clock times calls out.
        # Made in a worker thread: a client reads its certificate store when it is made.
        made = await anyio.to_thread.run_sync(
            lambda: httpx2.AsyncClient(
                headers=dict(server.headers),
                timeout=httpx2.Timeout(server.connect_timeout_s, read=None),
            )
        )
        http = await stack.enter_async_context(made)
        return streamable_http_client(server.url, http_client=http)

    async def _on_message(self, message: Any) -> None:
        import mcp.types

        if isinstance(message, mcp.types.ToolListChangedNotification):
            self._changes += 1
            self._changed.set()
        elif isinstance(message, Exception):
            # A message that is not MCP: the session cannot be trusted to pair replies with
            # calls any more, so it is closed and opened again.
            self.broke(
                f"MCP server {self.server.name!r} sent a malformed message: {_reason(message)}"
            )

    def broke(self, why: str) -> None:
        """End the session now (it is opened again): ``why`` is what calls are told; calls
        from now on wait for the new session."""
        if not self._broken.is_set():
            self._broken_why = why
            self._broken.set()
            self._client = None
            self.down = why
            if self._up.is_set():
                self._up = anyio.Event()

    async def _follow_changes(
        self, client: Any, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Read the list again whenever the server says it changed; started once the server's
        change stream is open (or known not to exist)."""
        from mcp.client.subscriptions import ListenNotSupportedError

        async with anyio.create_task_group() as group:
            # An older server has no change stream: it pushes the notification instead, which
            # ``_on_message`` hears.
            with contextlib.suppress(ListenNotSupportedError):
                await group.start(self._listen, client)
            task_status.started()
            while True:
                await self._changed.wait()
                self._changed = anyio.Event()
                await self._list(client)

    async def _listen(
        self, client: Any, *, task_status: anyio.abc.TaskStatus[bool] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the server's change stream (MCP 2026-07-28 and later) open; each change it
        tells makes the list be read again."""
        try:
            async with client.listen(tools_list_changed=True) as changes:
                task_status.started(True)
                async for _ in changes:
                    self._changes += 1
                    self._changed.set()
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            from mcp.client.subscriptions import ListenNotSupportedError

            if isinstance(exc, ListenNotSupportedError):
                raise
            self.broke(f"MCP server {self.server.name!r} dropped its change stream: {_reason(exc)}")

    async def _list(self, client: Any) -> None:
        reflects = self._changes  # a change said while this list is read needs another
        listed: list[Any] = []
        cursor = None
        for _ in range(_PAGES):
            page = await client.list_tools(cursor=cursor)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        tools: dict[str, Tool] = {}
        for item in listed:
            tool = as_tool(self.server, item, self.call)
            if tool is None:
                continue
            if tool.name in tools:
                log.warning(
                    "mcp tool left out: another tool of the server has the same name",
                    agent_id=self._agent_id,
                    server=self.server.name,
                    tool=str(item.name),
                )
                continue
            tools[tool.name] = tool
        self.tools = tuple(tools.values())
        self.version += 1
        self._changes_listed = max(self._changes_listed, reflects)
        self._relisted.set()
        self._relisted = anyio.Event()
        log.info(
            "mcp tools listed",
            agent_id=self._agent_id,
            server=self.server.name,
            tools=sorted(tools),
        )

    # -- calls ---------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """Call ``tool`` as the server lists it; the SDK's result. Waits for a session being
        opened again up to the server's connect timeout.

        Raises:
            McpServerError: no session, or the server failed during the call; naming it.
        """
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED

        name = self.server.name
        if self._client is None:
            with (
                contextlib.suppress(TimeoutError),
                ctx.clock.fail_after(self.server.connect_timeout_s),
            ):
                await self._up.wait()
        client = self._client
        if client is None:
            raise McpServerError(f"MCP server {name!r} is not available: {self.down}", server=name)
        try:
            result = await client.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise McpServerError(
                    f"MCP server {name!r} refused the call ({exc.code}): {exc.message}",
                    server=name,
                ) from None
            why = self._broken_why or f"MCP server {name!r} went away during the call"
            self.broke(why)
            raise McpServerError(why, server=name) from None
        except (ValueError, RuntimeError) as exc:  # pydantic's ValidationError is a ValueError
            raise McpServerError(
                f"MCP server {name!r} answered with a result MCP does not allow: {_reason(exc)}",
                server=name,
            ) from None
        # The SDK hands notifications to their handler in tasks of its own: a change the
        # server said before this reply is heard after a few checkpoints at most.
        for _ in range(_NOTIFICATION_CHECKPOINTS):
            await anyio.lowlevel.checkpoint()
        announced = self._changes
        if self._changes_listed < announced:
            # The call changed the server's list (it said so before answering): the model's
            # next request offers the new list.
            with (
                contextlib.suppress(TimeoutError),
                ctx.clock.fail_after(self.server.connect_timeout_s),
            ):
                while self._changes_listed < announced:
                    await self._relisted.wait()
        return result
