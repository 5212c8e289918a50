"""Fixtures for API tests: agent ``ops`` on a real SQLite file, a host, the app in process.

Requests go through ``httpx.ASGITransport`` (no socket); the few tests that need a real socket
(event streams, the acceptance run) use ``serving``, which runs uvicorn on a free loopback port.
"""

from __future__ import annotations

import socket
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from litestar import Litestar

from afp_runtime.agents import Agent
from afp_runtime.api import ApiServer, create_app, open_listener
from afp_runtime.host import Host, HostWatch
from afp_runtime.loop import SequentialIds
from afp_runtime.models import ScriptedModel, ScriptEntry
from afp_runtime.store import Store
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock
from afp_runtime.tools import Tool, ToolContext

BASE_URL = "http://127.0.0.1:8765"
TOKEN = "t" * 40
BUSY = ("queued", "running")


async def _ok(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "ok"


def alpha_tool() -> Tool:
    """``tool("alpha_tool")`` of docs/served.md#how-this-is-tested: it answers ``ok``."""
    return Tool("alpha_tool", "the alpha tool", {"type": "object"}, _ok, parallel_safe=True)


def agent(
    script: Sequence[ScriptEntry] | ScriptedModel | Any,
    *,
    agent_id: str = "ops",
    **options: Any,
) -> Agent:
    """An agent with ``alpha_tool``, system ``"you are a bot"`` and a scripted model ``mock``."""
    model = script if isinstance(script, ScriptedModel) else ScriptedModel(script, model="mock")
    options.setdefault("tools", [alpha_tool()])
    options.setdefault("system_prompt", "you are a bot")
    return Agent(agent_id, model, **options)


class Watch(HostWatch):
    """What a host's workers, lease keeper and checkpointer did that no row or event shows
    (docs/host.md#watching-a-host-in-tests)."""

    def __init__(self) -> None:
        self._in_pass: Counter[str] = Counter()
        self._passes: Counter[str] = Counter()
        self.lease_periods = 0
        self.checkpoints = 0

    def pass_started(self, agent_id: str) -> None:
        self._in_pass[agent_id] += 1

    def pass_finished(self, agent_id: str) -> None:
        self._in_pass[agent_id] -= 1
        self._passes[agent_id] += 1

    def lease_period(self) -> None:
        self.lease_periods += 1

    def checkpointed(self) -> None:
        self.checkpoints += 1

    def working(self, agent_id: str) -> bool:
        """Whether the agent's worker is inside a pass now."""
        return self._in_pass[agent_id] > 0

    def passes(self, agent_id: str) -> int:
        """How many passes the agent's worker finished."""
        return self._passes[agent_id]


# The watch of each host made by ``watched_host``.
_WATCHES: weakref.WeakKeyDictionary[Host, Watch] = weakref.WeakKeyDictionary()


def watched_host(store: Store, definitions: Sequence[Agent], **options: Any) -> Host:
    """``Host(store, definitions, **options)`` with a ``Watch`` (unless ``watch`` is given),
    which ``watch_of`` finds."""
    watch = options.setdefault("watch", Watch())
    host = Host(store, definitions, **options)
    _WATCHES[host] = watch
    return host


def watch_of(host: Host) -> Watch:
    """The watch of a host made by ``watched_host`` (as ``Api.host`` does)."""
    return _WATCHES[host]


class Api:
    """One database file; ``running`` starts a host and the app on it like a fresh process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = FakeClock()
        self.ids = SequentialIds()

    @asynccontextmanager
    async def host(self, *definitions: Agent, **options: Any) -> AsyncIterator[Host]:
        """A running host on the file (the same id factory across restarts)."""
        store = await SqliteStore.open(self.path, now_ms=self.clock.now_ms())
        try:
            host = watched_host(store, definitions, clock=self.clock, ids=self.ids, **options)
            async with host:
                yield host
        finally:
            await store.aclose()

    def app(self, host: Host, **options: Any) -> Litestar:
        """The app over ``host``."""
        return create_app(host, **options)

    @asynccontextmanager
    async def client(
        self, host: Host, *, base_url: str = BASE_URL, **options: Any
    ) -> AsyncIterator[httpx.AsyncClient]:
        """An in-process client of the app over ``host``."""
        transport = httpx.ASGITransport(app=self.app(host, **options))
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            yield client

    @asynccontextmanager
    async def running(
        self, *definitions: Agent, host_options: Mapping[str, Any] | None = None, **app
    ) -> AsyncIterator[tuple[Host, httpx.AsyncClient]]:
        """A host and an in-process client."""
        async with (
            self.host(*definitions, **(host_options or {})) as host,
            self.client(host, **app) as client,
        ):
            yield host, client


@pytest.fixture(name="api")
def fixture_api(tmp_path: Path) -> Api:
    """A fresh database file with a fake clock and sequential ids."""
    return Api(tmp_path / "afp.db")


async def settle(host: Host, agent_id: str = "ops", *, within_s: float = 20.0) -> None:
    """Wait (real time, bounded) until the agent has no queued or running message and its
    worker rests."""
    with anyio.fail_after(within_s):
        while True:
            rows = await host.reader.inbox(agent_id)
            if not any(r.status in BUSY for r in rows) and not watch_of(host).working(agent_id):
                return
            await anyio.sleep(0.01)


async def until(check: Callable[[], bool | Awaitable[bool]], *, within_s: float = 10.0) -> None:
    """Wait (real time, bounded) until ``check()`` holds; for state nothing signals."""
    with anyio.fail_after(within_s):
        while True:
            result = check()
            if result if isinstance(result, bool) else await result:
                return
            await anyio.sleep(0.01)


async def post(client: httpx.AsyncClient, text: str = "go", agent_id: str = "ops") -> Any:
    """Post a message and return the acknowledgement's JSON (asserting 202)."""
    response = await client.post(f"/v1/agents/{agent_id}/inbox", json={"text": text})
    assert response.status_code == 202, response.text
    return response.json()


def free_port() -> int:
    """A loopback port free right now (for a server process started on it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The ``error`` object of an error response (asserting the shape)."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message"} <= set(body["error"]), body
    return body["error"]


@asynccontextmanager
async def serving(app: Litestar, **server: Any) -> AsyncIterator[str]:
    """uvicorn serving ``app`` on a free loopback port (``server``: more ``ApiServer``
    options); yields the base URL."""
    listener: socket.socket = await open_listener("127.0.0.1", 0)
    port = listener.getsockname()[1]
    server = ApiServer(app, graceful_s=1, **server)
    # Closed however the block ends: a listener left to the garbage collector after a failed
    # test raises its ResourceWarning inside whichever test runs next.
    with listener:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [listener])
            await until(lambda: server.started)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
