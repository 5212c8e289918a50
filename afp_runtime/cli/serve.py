"""``afp serve``: the standing host and the local HTTP API until SIGTERM or SIGINT
(docs/host.md#the-standing-host, docs/api.md)."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import anyio
import anyio.to_thread

from afp_runtime._embed.running import running_loop
from afp_runtime.agents import read_config
from afp_runtime.api import ConnectionLimits, check_binding, open_listener, serve_until_stopped
from afp_runtime.app import SystemClock, TimeOrderedIds
from afp_runtime.cli._exits import EXIT_OK, UsageError
from afp_runtime.cli._show import warn
from afp_runtime.cli.tokens import load_principals
from afp_runtime.errors import ConfigError
from afp_runtime.host import Host
from afp_runtime.store import open_store, shown_location


async def _api_token(token_file: str | None) -> str | None:
    """The API token: ``--token-file`` (surrounding whitespace stripped) or ``AFP_API_TOKEN``."""
    if token_file is not None:
        try:
            text = await anyio.Path(token_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot read api.token from {token_file}: {exc}", field="api.token"
            ) from exc
        return text.strip() or None
    return os.environ.get("AFP_API_TOKEN") or None


# The start-up line names this many agents at most: a host of thousands would print every id.
_NAMED_AGENTS = 5


def _serving(agent_ids: tuple[str, ...]) -> str:
    """The agents the start-up line names: all of a few, else the count and the first ones."""
    named = ", ".join(agent_ids[:_NAMED_AGENTS])
    more = len(agent_ids) - _NAMED_AGENTS
    return named if more <= 0 else f"{len(agent_ids)} agents ({named} and {more} more)"


async def checked_access(args: Any) -> tuple[str | None, Any]:
    """The API token and principals, after the binding rules and the port's range."""
    token = await _api_token(args.token_file)
    principals = await load_principals(args.tokens, args.db)
    check_binding(args.host, token, principals=len(principals) if principals else 0)
    if not 0 <= args.port <= 65_535:
        raise UsageError(f"--port must be from 0 to 65535, not {args.port}")
    return token, principals


async def listen(args: Any) -> socket.socket:
    """The API's listening socket: inherited from ``--processes``' parent, else bound here."""
    if args.listen_fd is not None:
        return socket.socket(fileno=args.listen_fd)
    try:
        return await open_listener(args.host, args.port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc}") from exc


async def _stop_with_parent(host: Host) -> None:
    """A child of ``--processes`` stops as at SIGTERM once its parent is gone: the parent holds
    the other end of its stdin, which then reads end-of-file (docs/host.md#several-host-processes).
    """
    fd = sys.stdin.fileno()
    while True:
        await anyio.wait_readable(fd)
        if not os.read(fd, 512):
            host.stop()
            return


async def cmd_serve(args: Any) -> int:
    """Run the standing host and the local API until SIGTERM or SIGINT (then exit 0)."""
    if args.listen_fd is None and args.processes != 1:
        from afp_runtime.cli.processes import serve_processes

        return await serve_processes(args)
    token, principals = await checked_access(args)
    config, definitions = await anyio.to_thread.run_sync(read_config, args.agents)
    settings = config.host
    # The [api] table's bounds, checked before anything listens (docs/api.md#connection-limits).
    limits = ConnectionLimits(**config.api.given())
    clock = SystemClock()
    listener = await listen(args)
    port = listener.getsockname()[1]
    try:
        store = await open_store(args.db, now_ms=clock.now_ms())
    except BaseException:
        listener.close()
        raise
    try:
        host = Host(
            store,
            definitions,
            clock=clock,
            ids=TimeOrderedIds(clock.now_ms),
            max_active_turns=settings.max_active_turns,
            poll_interval_s=settings.poll_interval_s,
            shutdown_grace_s=settings.shutdown_grace_s if args.grace is None else args.grace,
            host_id=settings.host_id if args.host_id is None else args.host_id,
            lease_ttl_s=settings.lease_ttl_s,
            telemetry=settings.telemetry.telemetry() if settings.telemetry else None,
        )
        async with anyio.create_task_group() as watch:
            # The receiver outlives the API server: a second signal during the grace skips
            # what is left of it.
            watch.start_soon(host.stop_on_signals)
            if args.listen_fd is not None:
                watch.start_soon(_stop_with_parent, host)
            try:
                async with host:
                    warn(
                        f"afp: serving {_serving(host.agent_ids)} on "
                        f"http://{args.host}:{port} (database {shown_location(args.db)}, "
                        f"host id {host.host_id}, {running_loop()})"
                    )
                    await serve_until_stopped(
                        host,
                        listener=listener,
                        token=token,
                        limits=limits,
                        principals=principals,
                    )
            finally:
                watch.cancel_scope.cancel()
    finally:
        listener.close()
        await store.aclose()
    return EXIT_OK
