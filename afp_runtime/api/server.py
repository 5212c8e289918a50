"""Serving the API: the binding rules and uvicorn run under anyio (docs/api.md#server-rules).

``check_binding`` refuses, before anything starts, to serve a non-loopback address without a
token, and any token shorter than 32 characters (``ConfigError`` naming ``api.token``).
``ApiServer`` is uvicorn's server without its own signal handling: the caller (``afp serve``,
a test) decides when it stops by setting ``should_exit``, so one signal handler can stop the
server and the host together and the process exits normally. It bounds slow and idle clients
and how many connect (``ConnectionLimits``, docs/api.md#connection-limits).
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import socket
from collections.abc import Iterator
from functools import partial
from typing import Any

import anyio
import uvicorn

from afp_runtime.api._connections import ConnectionLimits, Connections, Timing
from afp_runtime.api.constants import MIN_TOKEN_CHARS
from afp_runtime.errors import ConfigError


def is_loopback(host: str) -> bool:
    """Whether ``host`` names a loopback address (127.0.0.0/8, ``::1``, ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str | None) -> None:
    """Refuse a token shorter than 32 characters.

    Raises:
        ConfigError: the token is too short (field ``api.token``).
    """
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"api.token must hold at least {MIN_TOKEN_CHARS} characters, not {len(token)}",
            field="api.token",
        )


def check_binding(host: str, token: str | None, *, principals: int = 0) -> None:
    """Refuse to serve a non-loopback address without a token (and any short token).

    Args:
        host: the address to serve.
        token: the single token, or None.
        principals: how many principals a token file names.

    Raises:
        ConfigError: names ``api.token``.
    """
    check_token(token)
    if token is None and not principals and not is_loopback(host):
        raise ConfigError(
            f"api.token is required to serve on {host!r}, which is not a loopback address; "
            "add principals with afp token add, set AFP_API_TOKEN or pass --token-file",
            field="api.token",
        )


async def open_listener(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0 picks a free one), ready for ``ApiServer``.

    Raises:
        OSError: the address cannot be bound.
    """
    name = "127.0.0.1" if host.lower() == "localhost" else host.strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    return await anyio.to_thread.run_sync(
        partial(socket.create_server, (name, port), family=family)
    )


class ApiServer(uvicorn.Server):
    """uvicorn's server, quiet, without signal handlers of its own, and with its connections
    bounded (docs/api.md#connection-limits).

    Args:
        app: the ASGI app.
        graceful_s: seconds open connections get to finish once ``should_exit`` is set.
        limits: the header, body and idle timeouts and the connection limits.
    """

    def __init__(
        self, app: Any, *, graceful_s: float = 5.0, limits: ConnectionLimits | None = None
    ) -> None:
        limits = limits if limits is not None else ConnectionLimits()
        self.connections = Connections(limits)
        super().__init__(
            uvicorn.Config(
                Timing(app, body_timeout_s=limits.body_timeout_s),
                http=self.connections.protocol(),
                log_config=None,
                access_log=False,
                lifespan="off",
                server_header=False,
                proxy_headers=False,
                timeout_graceful_shutdown=max(1, round(graceful_s)),
                # A backstop only: the watch closes an idle connection after keep_alive_s.
                timeout_keep_alive=max(1, math.ceil(limits.keep_alive_s)),
            )
        )

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install nothing: the caller handles signals and sets ``should_exit``."""
        yield
