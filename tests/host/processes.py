"""Helpers for tests that run real ``afp`` processes: starting ``afp serve`` (or forking it),
running a one-shot command, reading a Postgres database beside them, waiting on a condition, and
a Postgres server of a test's own that it may stop and start
(docs/storage.md#the-postgres-tests)."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.forkserver
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.api.conftest import free_port
from tests.store._postgres import admin

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def serve_env(invocations: Path, *, tool_sleep_s: float = 0.02) -> dict[str, str]:
    """The environment of an ``afp serve`` child: the crash tools importable, no API token,
    JSON logs, invocations recorded in ``invocations``."""
    env = dict(os.environ)
    env.pop("AFP_API_TOKEN", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(REPO), env.get("PYTHONPATH", "")])
    env["AFP_TEST_INVOCATIONS"] = str(invocations)
    env["AFP_TEST_TOOL_SLEEP_S"] = str(tool_sleep_s)
    env["AFP_LOG_FORMAT"] = "json"
    return env


# ``afp serve`` pays about a second of imports at every start; a test that restarts hosts dozens
# of times forks them from a server process that imported everything once. Each is still a
# process of its own, running the CLI's ``main`` from its argument list on.
_PRELOAD = [
    "afp_runtime.cli._main",
    "afp_runtime.cli.serve",
    "afp_runtime.agents",
    "afp_runtime.api",
    "afp_runtime.host",
    "afp_runtime.demo",
    "afp_runtime.store.postgres",
    "anyio._backends._asyncio",
    "litestar._kwargs",
    "uvicorn.lifespan.on",
    "uvicorn.protocols.http.h11_impl",
    "tests.host.crash_tools",
    "tests.host.processes",
]
_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload(_PRELOAD)


def _forked_main(argv: list[str], env: dict[str, str], log: str) -> None:
    """The body of a forked host: stdout to /dev/null, stderr appended to ``log``, ``env`` as
    the environment, then ``afp`` with ``argv``."""
    from afp_runtime.cli._main import main

    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(out, 2)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(REPO)
    sys.path.insert(0, str(HERE))  # the agents file names tools of crash_tools
    code = main(argv)
    sys.stderr.flush()
    os._exit(code)


class Forked:
    """A forked host process, with the part of ``subprocess.Popen`` the tests use."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self._process = _FORKS.Process(target=_forked_main, args=(argv, env, str(log)))
        self._process.start()
        self.pid = self._process.pid

    def poll(self) -> int | None:
        """The exit code, None while it runs (minus the signal that ended it)."""
        return self._process.exitcode

    def wait(self, timeout: float) -> int:
        """Wait for the exit; its code."""
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired("afp serve", timeout)
        return self._process.exitcode

    def send_signal(self, number: int) -> None:
        """Send a signal."""
        os.kill(self._process.pid or 0, number)

    def kill(self) -> None:
        """SIGKILL it."""
        self._process.kill()


def stop_forkserver() -> None:
    """End the fork server (multiprocessing's own hook for that, used by its tests)."""
    multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]


class Served:
    """One ``afp serve --host-id`` process on a fresh port, its stderr appended to ``log``
    (with ``verbose``, its info events too; with ``forked``, forked from the fork server)."""

    def __init__(
        self,
        agents: Path,
        url: str,
        host_id: str,
        env: dict[str, str],
        log: Path,
        *,
        verbose: bool = False,
        forked: bool = False,
    ) -> None:
        self.host_id = host_id
        self.log = log
        self.started = time.monotonic()
        self.port = free_port()
        args = ["serve", "--agents", str(agents), "--db", url, "--port", str(self.port)]
        args = [*(["-v"] if verbose else []), *args, "--host-id", host_id]
        self.process: subprocess.Popen[bytes] | Forked
        if forked:
            self.process = Forked(args, env, log)
        else:
            # stderr goes to a file: nobody reads a killed process's pipe.
            with log.open("a", encoding="utf-8") as out:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "afp_runtime.cli", *args],
                    stdout=subprocess.DEVNULL,
                    stderr=out,
                    env=env,
                    cwd=REPO,
                )
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=5)

    def ready(self) -> bool:
        """Whether health answers 200 now (asserting the process still runs)."""
        assert self.process.poll() is None, self.log.read_text(encoding="utf-8")[-4000:]
        try:
            return self.client.get("/v1/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def wait_ready(self, within_s: float = 30) -> Served:
        """Wait until health answers 200."""
        until(self.ready, within_s, lambda: f"afp serve {self.host_id} did not come up")
        return self

    def end(self) -> None:
        """SIGKILL the process if it still runs, reap it and close the client."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self.client.close()


def serve(
    agents: Path, url: str, host_id: str, env: dict[str, str], log: Path, *, verbose: bool = False
) -> Served:
    """Start ``afp serve`` and wait until its health answers."""
    return Served(agents, url, host_id, env, log, verbose=verbose).wait_ready()


def afp(args: list[str], env: dict[str, str]) -> Any:
    """Run ``afp ARGS --json`` to its end (at most 60 s); its JSON answer, asserting exit 0."""
    done = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Every row of one query on a connection of its own."""

    async def run() -> list[tuple[Any, ...]]:
        conn = await admin(url)
        try:
            return [tuple(r) for r in await conn.fetch(sql)]
        finally:
            await conn.close()

    return anyio.run(run)


def until(
    ok: Callable[[], bool], within_s: float, why: Callable[[], object], *, every_s: float = 0.05
) -> None:
    """Poll ``ok`` every ``every_s`` until it holds; fail with ``why()`` once ``within_s`` has
    passed."""
    deadline = time.monotonic() + within_s
    while not ok():
        assert time.monotonic() < deadline, why()
        time.sleep(every_s)


def until_answered(url: str, count: int, within_s: float) -> None:
    """Wait until ``count`` inbox rows are answered."""
    until(
        lambda: rows(url, "SELECT count(*) FROM inbox WHERE status = 'answered'")[0][0] >= count,
        within_s,
        lambda: rows(url, "SELECT message_id, status FROM inbox WHERE status <> 'answered'"),
    )


def _bindir() -> str:
    found = os.environ.get("AFP_PG_BINDIR")
    if found:
        return found
    config = shutil.which("pg_config")
    if config:
        out = subprocess.run([config, "--bindir"], capture_output=True, text=True, check=False)
        if out.returncode == 0 and Path(out.stdout.strip(), "pg_ctl").exists():
            return out.stdout.strip()
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "pg_ctl").exists():
            return str(candidate)
    raise AssertionError("no PostgreSQL server binaries: run the tests through scripts/test")


class PostgresServer:
    """A throwaway Postgres server of one test, on a Unix socket in a private directory (as
    ``scripts/_postgres`` starts the suite's, as user ``afp-pg`` when run as root), which the
    test may stop and start again without disturbing any other test."""

    def __init__(self) -> None:
        self.bindir = _bindir()
        self.dir = Path(tempfile.mkdtemp(prefix="afp-pg-own."))
        # The server's user must reach its directory; nobody else writes to it.
        self.dir.chmod(0o755)
        self._root = os.getuid() == 0
        if self._root:
            shutil.chown(self.dir, user="afp-pg")
        self.data = self.dir / "data"
        self.url = f"postgresql://afp@/postgres?host={self.dir}&port=55432"
        self._as(
            "initdb", "-D", str(self.data), "-U", "afp", "--auth=trust", "--no-sync",
            "--encoding=UTF8", "--locale=C",
        )  # fmt: skip

    def _as(self, tool: str, *args: str) -> None:
        command = [str(Path(self.bindir, tool)), *args]
        if self._root:
            command = ["runuser", "-u", "afp-pg", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr + self.server_log()

    def server_log(self) -> str:
        """The server's log so far."""
        path = self.dir / "server.log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = (
            f"-k {self.dir} -p 55432 -c listen_addresses= -c fsync=off"
            " -c full_page_writes=off -c max_connections=200"
        )
        self._as(
            "pg_ctl", "-D", str(self.data), "-l", str(self.dir / "server.log"), "-w", "-t", "60",
            "-o", options, "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: every session is ended, the WAL written out)."""
        self._as("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def cpu_s(self) -> float:
        """CPU seconds the server has used so far: the postmaster, the sessions it reaped and
        those still running (for the tests' reports; Linux only)."""
        tick = os.sysconf("SC_CLK_TCK")
        root = int((self.data / "postmaster.pid").read_text().split()[0])

        def fields(pid: str | int) -> list[str]:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()

        mine = fields(root)
        total = sum(int(v) for v in mine[11:15])
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and int(fields(proc.name)[1]) == root:
                    total += sum(int(v) for v in fields(proc.name)[11:13])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
        return total / tick

    def close(self) -> None:
        """Stop the server if it runs and remove its directory."""
        if (self.data / "postmaster.pid").exists():
            self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
