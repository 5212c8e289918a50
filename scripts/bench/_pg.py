"""The Postgres side of the benchmarks: a throwaway durable server, fresh databases, their size.

``--db URL`` of a benchmark script names a Postgres *server* (its URL with any database, the
one connected to for ``CREATE DATABASE``): every store the script opens lives in a fresh
database of its own on that server (``afp_bench_<random>``), dropped afterwards, so its growth
is that store's bytes alone. A child process gets its database's URL in ``AFP_BENCH_DB`` (never
on a command line, where a password would show in the process list); URLs are printed masked.

``durable_server`` starts the server ``scripts/_postgres`` gives the tests, with
``AFP_PG_DURABLE=1``: ``fsync``, ``synchronous_commit`` and ``full_page_writes`` on, as a real
server runs.
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

from afp_runtime.store import shown_location
from afp_runtime.testing import postgres

ROOT = Path(__file__).resolve().parents[2]
DB_ENV = "AFP_BENCH_DB"
POSTGRES_SCHEMES = ("postgresql", "postgres")


def is_postgres(url: str | None) -> bool:
    """True when ``url`` is a Postgres URL."""
    return url is not None and url.partition("://")[0] in POSTGRES_SCHEMES


def checked_server(url: str | None) -> str | None:
    """``--db``'s value when it is a Postgres URL (or absent); else exit saying what it takes."""
    if url is not None and not is_postgres(url):
        raise SystemExit(
            f"--db takes a Postgres server URL (postgresql://...), not {shown_location(url)!r}; "
            "without --db the benchmarks run on fresh SQLite files"
        )
    return url


async def create_database(server: str) -> str:
    """A fresh database ``afp_bench_<random>`` on ``server``; its URL."""
    return await postgres.create_database(server, f"afp_bench_{uuid.uuid4().hex[:16]}")


async def drop_database(server: str, url: str) -> None:
    """Drop the database ``url`` names, closing whatever still holds it open."""
    await postgres.drop_database(server, postgres.database_name(url))


connection = postgres.plain_connection


async def database_bytes(url: str) -> dict[str, int]:
    """``tables``: the summed ``pg_total_relation_size`` (heap, TOAST, indexes, maps) of every
    table in the current schema; ``database``: ``pg_database_size``."""
    conn = await connection(url)
    try:
        tables = await conn.fetchval(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'p', 'm') AND n.nspname = current_schema()"
        )
        database = await conn.fetchval("SELECT pg_database_size(current_database())")
    finally:
        await conn.close()
    return {"tables": int(tables), "database": int(database)}


def bytes_figures(before: dict[str, int], after: dict[str, int], n: int) -> dict[str, Any]:
    """The growth of a database over a run: ``bytesOnDisk`` is the tables' growth."""
    grown = after["tables"] - before["tables"]
    return {
        "bytesOnDisk": grown,
        "bytesPerIteration": round(grown / n, 1),
        "databaseSizeGrowth": after["database"] - before["database"],
    }


async def server_settings(url: str) -> dict[str, str]:
    """The settings that say how durable the server is, and its version."""
    conn = await connection(url)
    try:
        names = ("fsync", "synchronous_commit", "full_page_writes", "wal_level", "server_version")
        return {name: str(await conn.fetchval(f"SHOW {name}")) for name in names}
    finally:
        await conn.close()


async def server_cpu_seconds(url: str) -> float | None:
    """User and system CPU seconds the server's processes (the postmaster and its live
    children: backends, WAL writer, checkpointer) have used so far; None when the server's
    data directory cannot be read from here (a server on another machine)."""
    import psutil  # the ``bench`` extra

    conn = await connection(url)
    try:
        data = str(await conn.fetchval("SHOW data_directory"))
    finally:
        await conn.close()
    try:
        text = await anyio.Path(data, "postmaster.pid").read_text()
        postmaster = psutil.Process(int(text.split()[0]))
        total = 0.0
        for process in [postmaster, *postmaster.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = process.cpu_times()
                total += times.user + times.system
    except (OSError, ValueError, psutil.Error):
        return None
    return total


class WaitSampler:
    """What the database's client backends are doing, sampled every ``every_s`` from a thread
    of its own (``pg_stat_activity``: state, and the wait event of those waiting) while the
    block runs; ``figures()`` gives each state's share of the backend samples."""

    SQL = (
        "SELECT state, wait_event_type, wait_event FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend'"
    )

    def __init__(self, url: str, every_s: float = 0.02) -> None:
        self.url = url
        self.every_s = every_s
        self.counts: collections.Counter[str] = collections.Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: anyio.run(self._sample), daemon=True)

    async def _sample(self) -> None:
        conn = await connection(self.url)
        try:
            while not self._stop.is_set():
                for state, kind, event in await conn.fetch(self.SQL):
                    name = str(state or "?")
                    if kind:
                        name += f" / {kind}:{event}"
                    self.counts[name] += 1
                self.samples += 1
                await anyio.sleep(self.every_s)
        finally:
            await conn.close()

    def __enter__(self) -> WaitSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def figures(self, top: int = 8) -> dict[str, Any]:
        total = sum(self.counts.values()) or 1
        return {
            "samples": self.samples,
            "backendsPerSample": round(total / max(1, self.samples), 2),
            "shares": {k: round(v / total, 3) for k, v in self.counts.most_common(top)},
        }


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, every process counted."""
    import psutil  # the ``bench`` extra

    times = psutil.cpu_times()
    total = sum(times)
    idle = times.idle + getattr(times, "iowait", 0.0)
    return total - idle, total


def machine_busy_share(before: tuple[float, float], after: tuple[float, float]) -> float | None:
    """The share of the machine's CPU time that was busy between two ``machine_cpu`` readings
    (this benchmark's processes, the server, and whatever else runs on the machine)."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total, 3) if total > 0 else None


def child_database() -> str:
    """The database a child process was given (``AFP_BENCH_DB``)."""
    url = os.environ.get(DB_ENV)
    if not url:
        raise SystemExit(f"{DB_ENV} is not set: the parent creates the child's database")
    return url


@contextlib.contextmanager
def fresh_database(server: str) -> Iterator[str]:
    """A fresh database on ``server`` for the block (created and dropped from sync code)."""
    url = anyio.run(create_database, server)
    try:
        yield url
    finally:
        anyio.run(drop_database, server, url)


def child_env(url: str) -> dict[str, str]:
    """The environment of a child working in the database ``url``."""
    return {**os.environ, DB_ENV: url}


@contextlib.contextmanager
def durable_server() -> Iterator[str]:
    """A throwaway PostgreSQL server from ``scripts/_postgres`` with ``AFP_PG_DURABLE=1``
    (fsync, synchronous_commit and full_page_writes on); its URL. Stopped, its directory
    removed, when the block ends."""
    script = ROOT / "scripts" / "_postgres"
    env = {k: v for k, v in os.environ.items() if k != "AFP_TEST_POSTGRES_URL"}
    env["AFP_PG_DURABLE"] = "1"
    started = subprocess.run(
        [
            "bash",
            "-c",
            f'source "{script}" && afp_pg_start && '
            'printf "%s\\n%s\\n%s\\n" "$AFP_TEST_POSTGRES_URL" "$AFP_PG_DIR" "$AFP_PG_BINDIR"',
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if started.returncode != 0:
        raise SystemExit(f"scripts/_postgres could not start a server:\n{started.stderr}")
    url, folder, bindir = started.stdout.splitlines()[-3:]
    print(f"bench: PostgreSQL (durable) on {shown_location(url)}", file=sys.stderr)
    try:
        yield url
    finally:
        subprocess.run(
            ["bash", "-c", f'source "{script}" && afp_pg_stop'],
            env={**env, "AFP_PG_DIR": folder, "AFP_PG_BINDIR": bindir},
            check=False,
        )
