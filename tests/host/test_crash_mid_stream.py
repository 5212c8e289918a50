"""A real ``afp serve`` killed with SIGKILL in the middle of a streamed reply, on SQLite and on
Postgres with a second host taking over: nothing of the cut reply is committed, the reply is
asked for again, each epoch commits one reply, the cut epochs read as abandoned, and no tool
runs twice (docs/loop.md#streaming-replies, docs/scenarios.md#crash-points)."""

from __future__ import annotations

import signal
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from afp_runtime import app
from afp_runtime.store import open_store
from tests.host.crash_tools import agents_toml
from tests.host.processes import Served, rows, serve_env, until, until_answered
from tests.store._postgres import FreshDatabase

DEMO_SCRIPT = 'script = "afp_runtime.demo:demo_script"'


def _setup(tmp_path: Path, host_table: str = "") -> tuple[Path, Path, dict[str, str]]:
    """One agent ``s1`` on the streaming script with the recording (not idempotent) tool."""
    agents = tmp_path / "agents.toml"
    text = agents_toml(["s1"], special="s1", special_tool="crash_tools:RECORDED_STATUS")
    text = text.replace(DEMO_SCRIPT, 'script = "crash_tools:streaming_script"')
    agents.write_text(text + host_table, encoding="utf-8")
    fragments = tmp_path / "fragments.txt"
    env = serve_env(tmp_path / "invocations.txt")
    env["AFP_TEST_FRAGMENTS"] = str(fragments)
    return agents, fragments, env


def _holding(env: dict[str, str], kind: str) -> dict[str, str]:
    return {**env, "AFP_TEST_STREAM_HOLD": kind}


def _noted(fragments: Path, pid: int | None, kind: str) -> list[int]:
    """The fragment indexes process ``pid`` sent in its streams of ``kind``."""
    if not fragments.exists():
        return []
    lines = (line.split() for line in fragments.read_text(encoding="utf-8").splitlines())
    return [int(i) for p, k, i in lines if int(p) == pid and k == kind]


def _answered(db: str) -> bool:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        return conn.execute("SELECT status FROM inbox").fetchall() == [("answered",)]


def _kill_mid_stream(host: Served, fragments: Path, kind: str) -> None:
    """Wait until the host's stream of ``kind`` holds after four fragments, then SIGKILL it."""
    until(
        lambda: _noted(fragments, host.process.pid, kind) == [0, 1, 2, 3],
        30,
        lambda: (fragments.read_text() if fragments.exists() else "", host.log.read_text()),
    )
    host.process.send_signal(signal.SIGKILL)
    host.process.wait(10)
    host.client.close()


async def _read(db: str) -> list[tuple[Any, list[Any], Counter[str]]]:
    """Each run of ``s1`` in order: its row, its epochs and its reply writes per stage id,
    read from the store in this process (one afp command each would cost seconds)."""
    store = await open_store(db, read_only=True)
    try:
        found = []
        for run in sorted(await store.runs("s1"), key=lambda r: r.started_at_ms):
            bundles = await store.bundles(run.run_id)
            replies = Counter(
                b.runtime_stage_id for b in bundles for w in b.writes if w["key"] == "reply"
            )
            epochs, _ = await app.epoch_list(app.StoredRun(store, run.run_id))
            found.append((run, epochs, replies))
        return found
    finally:
        await store.aclose()


def _check_the_store(db: str, tmp_path: Path) -> list[tuple[str, list[str]]]:
    """One reply committed per epoch and none for a cut one (abandoned), no tool run twice,
    the last run answered; each run's kind and its epochs' outcomes."""
    runs = anyio.run(_read, db)
    for run, epochs, replies in runs:
        assert all(n == 1 for n in replies.values()), (run.run_id, replies)
        for epoch in epochs:
            committed = replies.get(epoch.call_runtime_stage_id, 0)
            assert committed == (0 if epoch.outcome == "abandoned" else 1), (run, epoch)
    last = runs[-1][0]
    assert (last.status, (last.answer or "")[:21]) == ("answered", "Here is what I found.")
    calls = Counter(
        line.split()[1] for line in (tmp_path / "invocations.txt").read_text().splitlines()
    )
    assert calls and max(calls.values()) == 1, calls
    return [(run.kind, [e.outcome for e in epochs]) for run, epochs, _ in runs]


@pytest.mark.timeout(120)
def test_a_sigkill_mid_stream_on_sqlite_asks_for_the_reply_again(tmp_path: Path) -> None:
    """Killed four fragments into the tool calls' stream, then four into the answer's: each
    recovery asks the cut reply again (in full), the tools run once, one answer."""
    agents, fragments, env = _setup(tmp_path)
    db = str(tmp_path / "afp.db")
    log = tmp_path / "serve.log"
    first = Served(agents, db, "h1", _holding(env, "tools"), log).wait_ready()
    try:
        posted = first.client.post("/v1/agents/s1/inbox", json={"text": "Order 2001?"})
        assert posted.status_code == 202, posted.text
        _kill_mid_stream(first, fragments, "tools")
        second = Served(agents, db, "h1", _holding(env, "answer"), log).wait_ready()
        try:
            _kill_mid_stream(second, fragments, "answer")
            # The cut tool-call reply was asked for again and streamed in full this time.
            assert len(_noted(fragments, second.process.pid, "tools")) > 4
        finally:
            second.end()
        third = Served(agents, db, "h1", env, log).wait_ready()
        try:
            until(lambda: _answered(db), 30, lambda: log.read_text())
            assert _noted(fragments, third.process.pid, "tools") == []  # that reply committed
            assert len(_noted(fragments, third.process.pid, "answer")) > 4
        finally:
            third.end()
    finally:
        first.end()
    assert _check_the_store(db, tmp_path) == [
        ("initial", ["abandoned"]),
        ("recovery", ["replied", "abandoned"]),
        ("recovery", ["replied"]),
    ]


@pytest.mark.timeout(120)
def test_a_sigkill_mid_stream_on_postgres_the_other_host_asks_again(
    database: FreshDatabase, tmp_path: Path
) -> None:
    """Two hosts on one Postgres database: the holder is killed four fragments into the tool
    calls' stream; the other takes the agent over after the lease, asks for the reply again
    and answers, the tools run once."""
    agents, fragments, env = _setup(tmp_path, "\n[host]\nleaseTtlS = 3.0\npollIntervalS = 1.0\n")
    url = database.url
    log = tmp_path / "serve.log"
    a = Served(agents, url, "a", _holding(env, "tools"), log).wait_ready()
    hosts = [a]
    try:
        posted = a.client.post("/v1/agents/s1/inbox", json={"text": "Order 2002?"})
        assert posted.status_code == 202, posted.text
        _kill_mid_stream(a, fragments, "tools")
        b = Served(agents, url, "b", env, log).wait_ready()
        hosts.append(b)
        until_answered(url, 1, within_s=40)
        assert len(_noted(fragments, b.process.pid, "tools")) > 4
        assert rows(url, "SELECT claim_host FROM agents") == [("b",)]
    finally:
        for host in hosts:
            host.end()
    assert _check_the_store(url, tmp_path) == [
        ("initial", ["abandoned"]),
        ("recovery", ["replied", "replied"]),
    ]
