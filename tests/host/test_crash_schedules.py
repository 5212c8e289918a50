"""Kills around due times (docs/host.md#schedules): two real ``afp serve`` processes on one store
(a SQLite file, a Postgres database) run an agent whose once schedules fall due a second apart;
the host holding the agent is SIGKILLed twice while they fall due and started again. Afterwards
the store holds exactly one message per due instant: none delivered twice, none lost (a missed
once schedule is delivered late by the default catch-up, ``latest``)."""

from __future__ import annotations

import signal
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

import afp_runtime as afp
from afp_runtime.store import open_store
from tests.host.crash_tools import agents_toml
from tests.host.processes import Served, rows, serve_env, until

DUE = 10
SQL = "SELECT idempotency_key FROM inbox WHERE sender LIKE 'schedule:%' ORDER BY position"


def _at(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _set_schedules(url: str, start_ms: int) -> list[str]:
    """``DUE`` once schedules of agent s1, a second apart from ``start_ms``; their keys."""
    store = await open_store(url, now_ms=int(time.time() * 1000))
    keys = []
    try:
        for n in range(DUE):
            due = start_ms + n * 1000
            once = afp.schedule(f"once-{n}", f"Reminder {n}", at=_at(due))
            await afp.app.set_schedule(store, "s1", once, source="api", now_ms=start_ms - 5000)
            keys.append(f"schedule:once-{n}@{due}")
    finally:
        await store.aclose()
    return keys


def _keys(url: str, sqlite: bool) -> list[str]:
    if sqlite:
        with sqlite3.connect(url, timeout=10) as conn:
            return [k for (k,) in conn.execute(SQL)]
    return [k for (k,) in rows(url, SQL)]


def _holder(url: str, sqlite: bool) -> str | None:
    query = "SELECT claim_host FROM agents WHERE agent_id = 's1'"
    if sqlite:
        with sqlite3.connect(url, timeout=10) as conn:
            found: Any = conn.execute(query).fetchone()
    else:
        found = rows(url, query)[0]
    return found[0] if found else None


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_kills_around_due_times_deliver_each_once(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two hosts, the holder killed twice while ten due instants pass: each delivered once."""
    sqlite = backend == "sqlite"
    url = str(tmp_path / "afp.db") if sqlite else request.getfixturevalue("database").url
    agents = tmp_path / "agents.toml"
    text = agents_toml(["s1"], special="s1", special_tool="afp_runtime.demo:SHIPPING_STATUS")
    agents.write_text(text + "\n[host]\nleaseTtlS = 1.5\npollIntervalS = 0.5\n", encoding="utf-8")
    env, log = serve_env(tmp_path / "invocations.txt"), tmp_path / "serve.log"
    hosts = {name: Served(agents, url, name, env, log).wait_ready() for name in ("a", "b")}
    try:
        start = (int(time.time()) + 3) * 1000  # whole seconds, as `at` spells them
        wanted = anyio.run(_set_schedules, url, start)
        for kill_at in (start + 2_500, start + 6_500):
            time.sleep(max(0.0, (kill_at - time.time() * 1000) / 1000))
            holder = _holder(url, sqlite) or "a"
            hosts[holder].process.send_signal(signal.SIGKILL)
            hosts[holder].end()
            hosts[holder] = Served(agents, url, holder, env, log).wait_ready()
        until(
            lambda: len(_keys(url, sqlite)) >= DUE,
            within_s=40,
            why=lambda: (_keys(url, sqlite), log.read_text(encoding="utf-8")[-3000:]),
        )
        time.sleep(1.0)  # a second delivery of any instant would land by now
        found = _keys(url, sqlite)
    finally:
        for host in hosts.values():
            host.end()
    assert sorted(found) == sorted(wanted), found
    assert len(found) == len(set(found)) == DUE
