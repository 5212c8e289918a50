"""Bounds on the server's connections: slow and idle clients, and how many connect
(docs/api.md#connection-limits).

uvicorn bounds only an idle keep-alive connection, and only after a first response; a client
that sends its headers one byte at a time, or a body shorter than its ``Content-Length``, holds
its connection (and a descriptor) until it leaves. Two small pieces close that:

- ``Watched`` is the protocol uvicorn is given (``uvicorn.Config(http=...)`` takes any protocol
  class). It wraps uvicorn's own h11 protocol and adds a per-connection timer: the request's
  headers must be complete ``header_timeout_s`` after the connection opened or the first byte
  of the next request arrived, and a connection with no request in flight is closed after
  ``keep_alive_s``. It also refuses connections past the total or per-client limit at once,
  with a 503 ``too-many-connections``, before any of the client's bytes are read.
- ``Timing`` is an ASGI wrapper that tells a connection's watch when its request reached the
  app and when its response ended (the watch rides in the scope's ``state``, the per-connection
  copy uvicorn makes of it), and bounds reading a declared body: a body that is not complete
  ``body_timeout_s`` after the request arrived is answered 408 ``body-timeout`` and the
  connection closed.

The timers are the event loop's (``call_later``), real network time like the event stream's
keep-alive, not the injected clock.
"""

from __future__ import annotations

import asyncio
import math
import resource
from collections import Counter
from typing import Any

import anyio
import msgspec
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from afp_runtime._logging import get_logger
from afp_runtime.api._problems import ApiError
from afp_runtime.errors import ConfigError

log = get_logger()

_WATCH_KEY = "afp_connection_watch"
# Descriptors left to the store, tools, model clients and logs whatever the connection limit.
_FD_HEADROOM_MIN = 128
# The range a timeout may be set in, and the most connections one may ask for (docs/api.md).
_MIN_TIMEOUT_S = 0.05
_MAX_TIMEOUT_S = 3600.0
_MAX_CONNECTIONS = 1_000_000


class ConnectionLimits(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """How long a client may take and how many may connect (docs/api.md#connection-limits).

    Attributes:
        header_timeout_s: seconds a request's headers may take to arrive in full.
        body_timeout_s: seconds a declared request body may take to arrive in full.
        keep_alive_s: seconds an idle connection is kept open between requests.
        max_connections: connections open at once (capped below the descriptor limit).
        max_connections_per_client: connections open at once from one client address.
    """

    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keep_alive_s: float = 5.0
    max_connections: int = 512
    max_connections_per_client: int = 64

    def __post_init__(self) -> None:
        for name in ("header_timeout_s", "body_timeout_s", "keep_alive_s"):
            value = getattr(self, name)
            # A bound of 1e308 s is no bound, and one of 1e-9 s closes every connection.
            if isinstance(value, bool) or not (
                math.isfinite(value) and _MIN_TIMEOUT_S <= value <= _MAX_TIMEOUT_S
            ):
                raise ConfigError(
                    f"api.{_camel(name)} must be a number of seconds from {_MIN_TIMEOUT_S} to "
                    f"{_MAX_TIMEOUT_S}, not {value!r}",
                    field=f"api.{_camel(name)}",
                )
        for name in ("max_connections", "max_connections_per_client"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= _MAX_CONNECTIONS
            ):
                raise ConfigError(
                    f"api.{_camel(name)} must be a whole number from 1 to {_MAX_CONNECTIONS}, "
                    f"not {value!r}",
                    field=f"api.{_camel(name)}",
                )
        if self.max_connections_per_client > self.max_connections:
            raise ConfigError(
                f"api.maxConnectionsPerClient ({self.max_connections_per_client}) may not exceed "
                f"api.maxConnections ({self.max_connections})",
                field="api.maxConnectionsPerClient",
            )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() if part != "s" else "S" for part in rest)


def connection_cap(max_connections: int, soft_limit: int | None = None) -> int:
    """``max_connections`` kept below the process's descriptor limit (``RLIMIT_NOFILE``), with a
    quarter of it (at least 128) left for the store, tools and model clients."""
    if soft_limit is None:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_limit == resource.RLIM_INFINITY or soft_limit <= 0:
        return max_connections
    room = soft_limit - max(_FD_HEADROOM_MIN, soft_limit // 4)
    return max(1, min(max_connections, room))


class Connections:
    """The open connections of one server, and the protocol class that counts them."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.cap = connection_cap(limits.max_connections)
        self.open = 0
        self.by_client: Counter[str] = Counter()

    def protocol(self) -> type[asyncio.Protocol]:
        """The protocol class for ``uvicorn.Config(http=...)``, bound to these connections."""
        connections = self

        class _Bound(Watched):
            pool = connections

        return _Bound

    def admit(self, client: str) -> str | None:
        """Count a new connection, or say why it is refused."""
        if self.open >= self.cap:
            return f"the server holds its limit of {self.cap} connections"
        if self.by_client[client] >= self.limits.max_connections_per_client:
            return (
                f"this client holds its limit of {self.limits.max_connections_per_client} "
                "connections"
            )
        self.open += 1
        self.by_client[client] += 1
        return None

    def release(self, client: str) -> None:
        self.open -= 1
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]


class Watched(asyncio.Protocol):
    """uvicorn's h11 protocol with the header, idle and count bounds (module docstring)."""

    pool: Connections

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        # The watch travels to the app in the scope's "state", copied per request from this.
        self._inner = H11Protocol(
            config=config,
            server_state=server_state,
            app_state={**app_state, _WATCH_KEY: self},
            _loop=_loop,
        )
        self._loop = _loop or asyncio.get_running_loop()
        self._transport: asyncio.BaseTransport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._client: str | None = None
        self._busy = False
        self._idle = False

    # -- asyncio's protocol interface, handed on to uvicorn's ------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        peer = transport.get_extra_info("peername")
        client = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        refusal = self.pool.admit(client)
        if refusal is not None:
            _refuse(transport, refusal)
            return
        self._client = client
        self._inner.connection_made(transport)  # type: ignore[arg-type]
        self._arm(self.pool.limits.header_timeout_s, "header-timeout")

    def data_received(self, data: bytes) -> None:
        if self._client is None:
            return  # refused: nothing of it is read
        if self._idle:
            # The first byte of the next request: its headers are timed from here.
            self._idle = False
            self._arm(self.pool.limits.header_timeout_s, "header-timeout")
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        if self._client is not None:
            self._inner.eof_received()
        return None  # asyncio then closes the transport, as for uvicorn's own protocol

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._client is None:
            return
        self.pool.release(self._client)
        self._client = None
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._client is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._client is not None:
            self._inner.resume_writing()

    # -- what the app side reports (``Timing``) --------------------------------------------------

    @property
    def client(self) -> str | None:
        """The client's address (None once the connection is gone or was refused)."""
        return self._client

    def request_started(self) -> None:
        """The request's headers are in and the app has it: no bound while it is handled."""
        self._busy = True
        self._idle = False
        self._disarm()

    def response_ended(self) -> None:
        """The response is sent: the connection idles until the next request's first byte."""
        self._busy = False
        self._idle = True
        self._arm(self.pool.limits.keep_alive_s, "idle")

    # -- the timer -------------------------------------------------------------------------------

    def _arm(self, seconds: float, why: str) -> None:
        self._disarm()
        self._timer = self._loop.call_later(seconds, self._expire, why)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self, why: str) -> None:
        self._timer = None
        transport = self._transport
        if self._busy or transport is None or transport.is_closing():
            return
        if why != "idle":
            log.info("slow client disconnected", reason=why, client=self._client)
        transport.close()


def _refuse(transport: asyncio.BaseTransport, reason: str) -> None:
    """Answer 503 ``too-many-connections`` and close, without reading the request."""
    body = ApiError(503, "too-many-connections", f"{reason}; try again later").encoded()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "retry-after: 1\r\n"
        "connection: close\r\n\r\n"
    ).encode("ascii")
    # Not ``isinstance(transport, asyncio.WriteTransport)``: uvloop's transports write but
    # derive from none of asyncio's classes (docs/host.md#the-event-loop).
    write = getattr(transport, "write", None)
    if write is not None:
        write(head + body)
    transport.close()


class _BodyTimeout(Exception):
    """The declared body did not arrive in time."""


class Timing:
    """Reports each request's start and end to its connection's watch, and bounds reading a
    declared body (module docstring).

    Args:
        app: the wrapped ASGI app.
        body_timeout_s: seconds a declared body may take to arrive in full.
    """

    def __init__(self, app: ASGIApp, *, body_timeout_s: float) -> None:
        self.app = app
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("state") if scope["type"] == "http" else None
        watch = state.get(_WATCH_KEY) if isinstance(state, dict) else None
        if not isinstance(watch, Watched):
            await self.app(scope, receive, send)
            return
        watch.request_started()
        started = False

        async def send_reporting(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                watch.response_ended()

        if _declares_body(scope):
            receive = _timed(receive, anyio.current_time() + self.body_timeout_s)
        try:
            await self.app(scope, receive, send_reporting)
        except _BodyTimeout:
            if started:
                raise
            log.info("slow client disconnected", reason="body-timeout", client=watch.client)
            error = ApiError(
                408,
                "body-timeout",
                f"the request body did not arrive within {self.body_timeout_s:g} s",
            )
            body = error.encoded()
            await send(
                {
                    "type": "http.response.start",
                    "status": 408,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body, "more_body": False})


def _declares_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
    return False


def _timed(receive: Receive, deadline: float) -> Receive:
    """A receive that fails with ``_BodyTimeout`` when the body is not in by ``deadline``; once
    it is, receiving (a disconnect) is no longer bounded."""
    complete = False

    async def receive_timed() -> Any:
        nonlocal complete
        if complete:
            return await receive()
        try:
            with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                message = await receive()
        except TimeoutError:
            raise _BodyTimeout from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            complete = True
        return message

    return receive_timed
