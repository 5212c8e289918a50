"""Serving the API beside a running host, until the host is asked to stop (``afp serve`` and
``afp.Store.serve`` both run it)."""

from __future__ import annotations

import socket

import anyio

from afp_runtime.api._connections import ConnectionLimits
from afp_runtime.api.app import create_app
from afp_runtime.api.principals import Principals
from afp_runtime.api.server import ApiServer
from afp_runtime.host import Host


async def serve_until_stopped(
    host: Host,
    *,
    listener: socket.socket,
    token: str | None,
    limits: ConnectionLimits | None = None,
    principals: Principals | None = None,
) -> None:
    """Serve the API for a running host on ``listener`` until the host is asked to stop.

    Args:
        host: the running host (inside its ``async with``).
        listener: a bound socket (``open_listener``).
        token: the single bearer token (the admin principal), or None.
        limits: the connection bounds (docs/api.md#connection-limits); None: the defaults.
        principals: the principals of a token file, or None (with no token either: loopback
            only, no token asked for).
    """
    port = int(listener.getsockname()[1])
    server = ApiServer(
        create_app(host, token=token, principals=principals, port=port), limits=limits
    )
    async with anyio.create_task_group() as watch:

        async def exit_when_stopping() -> None:
            await host.wait_stopping()
            server.should_exit = True

        watch.start_soon(exit_when_stopping)
        await server.serve(sockets=[listener])
        watch.cancel_scope.cancel()
