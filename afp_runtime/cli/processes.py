"""``afp serve --processes N``: N host processes on one store and one port, under one parent
that restarts the ones that die (docs/host.md#several-host-processes).

The parent checks what ``afp serve`` checks, opens the store once (a migration runs once, before
any child), binds the port, and starts N children: each is ``afp serve`` on the inherited
listening socket with the host id ``HOSTID-i``. The leases spread the agents over the children
(docs/host.md#agents-spread-over-the-hosts), the kernel spreads the connections, and each child
answers the whole API from the shared store; a post to an agent another child holds lands in the
inbox, which the holder watches. A child that exits unasked is started again under the same host
id, so it takes its lease and its agents back at once. SIGTERM or SIGINT is passed on to every
child (a second one skips what is left of their grace). Each child's stdin is a pipe from the
parent, so a parent that is killed leaves no child serving on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import Process

from afp_runtime.agents import read_config
from afp_runtime.api import ConnectionLimits
from afp_runtime.app import SystemClock
from afp_runtime.cli._exits import EXIT_OK, UsageError
from afp_runtime.cli._show import warn
from afp_runtime.cli.serve import checked_access, listen
from afp_runtime.host.leases import default_host_id
from afp_runtime.store import open_store

MAX_PROCESSES = 64
# A child that exits more often than this within a minute is failing, not crashing now and
# then: the parent stops the others and exits with its code instead of restarting it for ever.
RESTARTS_PER_MINUTE = 5
# Between a child's exit and its restart, so that a failing child does not spin.
RESTART_DELAY_S = 0.5


def _exit_code(returncode: int) -> int:
    """A child's exit as the parent's: a signal's death is 128 + its number, as in a shell."""
    return 128 - returncode if returncode < 0 else returncode


class _Supervisor:
    """The children of one ``afp serve --processes N``, kept running until a stop."""

    def __init__(self, args: Any, listener: socket.socket, base_id: str) -> None:
        self.args = args
        self.listener = listener
        self.base_id = base_id
        self.children: dict[int, Process] = {}
        self.stopping = False
        self.failed: int | None = None
        self.codes: dict[int, int] = {}

    def command(self, index: int) -> list[str]:
        args = self.args
        words = [sys.executable, "-m", "afp_runtime.cli"]
        words += ["-v"] if args.verbose else []
        words += ["--log-format", args.log_format] if args.log_format else []
        words += ["serve", "--agents", args.agents, "--host", args.host]
        words += ["--port", str(self.listener.getsockname()[1])]
        words += ["--host-id", f"{self.base_id}-{index}"]
        words += ["--listen-fd", str(self.listener.fileno())]
        for option, value in (
            ("--token-file", args.token_file),
            ("--tokens", args.tokens),
            ("--grace", args.grace),
            ("--loop", args.loop),
        ):
            words += [option, str(value)] if value is not None else []
        return words

    async def keep(self, index: int) -> None:
        """Run child ``index``, starting it again whenever it exits unasked."""
        # The store's location goes by the environment: a URL's password stays out of ps.
        env = {**os.environ, "AFP_DB": self.args.db}
        exits: list[float] = []
        while not self.stopping:
            process = await anyio.open_process(
                self.command(index),
                stdin=subprocess.PIPE,
                stdout=None,
                stderr=None,
                env=env,
                pass_fds=(self.listener.fileno(),),
                # Outside the terminal's process group: a Ctrl-C reaches the children once,
                # through the parent, not twice (a second signal skips the grace).
                start_new_session=True,
            )
            self.children[index] = process
            if self.stopping:
                process.send_signal(signal.SIGTERM)
            try:
                code = await process.wait()
            finally:
                del self.children[index]
                await process.aclose()
            self.codes[index] = code
            if self.stopping:
                return
            now = anyio.current_time()
            exits = [t for t in exits if now - t < 60] + [now]
            if len(exits) > RESTARTS_PER_MINUTE:
                warn(f"afp: process {index} exited {len(exits)} times in a minute; stopping")
                self.failed = _exit_code(code) or 1
                self.stop()
                return
            warn(f"afp: process {index} exited with {code}; starting it again")
            await anyio.sleep(RESTART_DELAY_S)

    def stop(self) -> None:
        """Pass a stop on to every child (a second call skips the rest of their grace)."""
        self.stopping = True
        for process in self.children.values():
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)

    async def on_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                self.stop()

    async def run(self, count: int) -> int:
        async with anyio.create_task_group() as outer:
            outer.start_soon(self.on_signals)
            async with anyio.create_task_group() as children:
                for index in range(count):
                    children.start_soon(self.keep, index)
            outer.cancel_scope.cancel()
        if self.failed is not None:
            return self.failed
        return next((_exit_code(c) for c in self.codes.values() if c != 0), EXIT_OK)


async def serve_processes(args: Any) -> int:
    """``afp serve --processes N``: exit 0 once a stop ended every child cleanly."""
    if not 1 <= args.processes <= MAX_PROCESSES:
        raise UsageError(f"--processes must be from 1 to {MAX_PROCESSES}, not {args.processes}")
    await checked_access(args)
    config, _ = await anyio.to_thread.run_sync(read_config, args.agents)
    ConnectionLimits(**config.api.given())  # refused here, not by N children in turn
    base_id = args.host_id or config.host.host_id or default_host_id()
    listener = await listen(args)
    try:
        # Created or migrated here, once, before the children open it.
        store = await open_store(args.db, now_ms=SystemClock().now_ms())
        await store.aclose()
        warn(
            f"afp: {args.processes} processes serving on "
            f"http://{args.host}:{listener.getsockname()[1]} (host ids {base_id}-0 to "
            f"{base_id}-{args.processes - 1})"
        )
        return await _Supervisor(args, listener, base_id).run(args.processes)
    finally:
        listener.close()
