"""Store faults are a state, not a crash (docs/host.md#hosts-and-a-failing-store,
docs/storage.md#store-faults): a full disk, a WAL past its bound and a checkpoint that keeps
failing, a file that may not be written or was moved away, and a store check that cannot
reach its store, on real SQLite files, through the store, the host, the API and ``afp serve``.

The full disk is a small tmpfs this suite mounts (it runs as root here). Where it may not mount
one, it says so in a warning and fills the file instead with ``PRAGMA max_page_count`` (SQLite
answers the same ``SQLITE_FULL``), so the rule is still tested in process; the ``afp serve``
tests, which need a real disk, are then skipped saying why.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from afp_runtime.errors import StoreUnavailable
from afp_runtime.host import Host
from afp_runtime.host.store_state import CHECKPOINT_FAILURES_REPORTED
from afp_runtime.host.workers import CHECKPOINT_EVERY_S
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer
from tests.api.conftest import Api, agent, error_of, until, watch_of
from tests.host.full_disk import Disk
from tests.host.processes import REPO, Served, serve_env


class Pin:
    """A reader in a transaction on a connection of its own: no checkpoint can empty the WAL
    past the snapshot it holds (its calls run in a worker thread, off the event loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = None

    def _hold(self) -> None:
        self.conn = sqlite3.connect(self.path, check_same_thread=False)
        self.conn.execute("BEGIN")
        self.conn.execute("SELECT count(*) FROM inbox").fetchall()

    def _let_go(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    async def hold(self) -> None:
        await anyio.to_thread.run_sync(self._hold)

    async def let_go(self) -> None:
        await anyio.to_thread.run_sync(self._let_go)


async def _post_until_refused(client: Any, *, refusals: int = 20) -> tuple[dict[str, str], list]:
    """Post 1 kB messages with idempotency keys until ``refusals`` are refused (at most 2,000):
    the keys acknowledged (to their message ids) and the refused responses."""
    acked: dict[str, str] = {}
    refused: list[Any] = []
    for n in range(2_000):
        key = f"k{n}"
        body = {"text": f"message {n} " + "x" * 1_000, "idempotencyKey": key}
        response = await client.post("/v1/agents/ops/inbox", json=body)
        if response.status_code == 202:
            acked[key] = response.json()["messageId"]
        else:
            refused.append((key, body, response))
            if len(refused) >= refusals:
                break
    return acked, refused


async def test_a_full_disk_is_503_and_degraded_health_logged_once_and_recovers(
    disk: Disk, logs: list[dict[str, Any]]
) -> None:
    """On a full disk every post is 503 ``store-unavailable`` (reason ``disk-full``) with
    ``Retry-After``, never 500; health is ``degraded`` naming the cause while reads go on; the
    log says it once, without a traceback; once space is back, a refused post sent again is
    stored, health is ``ok``, and every acknowledged message is in the file."""
    api = Api(disk.path)
    async with api.running(agent([answer("ok")] * 50)) as (host, client):
        await disk.fill(host.store)
        acked, refused = await _post_until_refused(client)
        assert refused, "the disk never filled"
        health = (await client.get("/v1/health")).json()
        agent_view = await client.get("/v1/agents/ops")
        inbox = await client.get("/v1/agents/ops/inbox")
        await disk.free(host.store)
        key, body, _ = refused[0]
        again = await client.post("/v1/agents/ops/inbox", json=body)
        healed = (await client.get("/v1/health")).json()
    for _, _, response in refused:
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"] == "5"
        error = error_of(response)
        assert (error["code"], error.get("reason")) == ("store-unavailable", "disk-full")
    assert health["status"] == "degraded", health
    assert health["storeFault"]["cause"] == "disk-full"
    assert "full" in health["storeFault"]["message"]
    assert agent_view.status_code == 200 and inbox.status_code == 200
    assert again.status_code == 202, again.text
    assert healed["status"] == "ok" and healed["storeFault"] is None
    warned = [e for e in logs if e["log_level"] in ("warning", "error", "critical")]
    # One line when the fault began and one when it ended, however many requests met it.
    changes = [e["event"] for e in warned if e.get("cause") == "disk-full"]
    assert len(changes) == 2 and changes[1] == "the store is writable again", changes
    assert not [e for e in warned if "exc_info" in e or e["log_level"] != "warning"], warned
    store = await SqliteStore.open(disk.path, read_only=True)
    try:
        stored = {row.idempotency_key: row.message_id for row in await store.inbox("ops")}
    finally:
        await store.aclose()
    assert {k: stored[k] for k in acked} == acked  # nothing acknowledged is lost
    assert key in stored and not {k for k, _, _ in refused[1:]} & set(stored)


async def test_a_wal_past_its_bound_refuses_writes_instead_of_filling_the_disk(
    tmp_path: Path,
) -> None:
    """With a reader pinning old pages no checkpoint can empty the WAL: once it is past
    ``wal_limit_bytes`` a post is refused ``StoreUnavailable`` (cause ``wal-limit``) and the WAL
    stops growing; once the reader lets go, writes go on and the WAL is cut back."""
    path = tmp_path / "afp.db"
    wal = anyio.Path(f"{path}-wal")
    store = await SqliteStore.open(path, now_ms=0)
    limit = 256 * 1024
    store.wal_limit_bytes = limit
    pin = Pin(path)
    try:
        await store.ensure_agent("ops", now_ms=0)
        await pin.hold()
        refused: StoreUnavailable | None = None
        for n in range(2_000):
            try:
                await store.post("ops", "x" * 1_000, message_id=f"m{n}", now_ms=n)
            except StoreUnavailable as exc:
                refused = exc
                break
        assert refused is not None and refused.cause == "wal-limit", refused
        assert "WAL" in str(refused) and "reader" in str(refused)
        grown = (await wal.stat()).st_size
        assert limit < grown < limit + 64 * 1024
        assert await store.checkpoint() is not None  # it says why not
        with pytest.raises(StoreUnavailable):
            await store.post("ops", "refused", message_id="late", now_ms=1)
        assert (await wal.stat()).st_size == grown
        await pin.let_go()
        await store.post("ops", "after", message_id="after", now_ms=2)
        assert (await wal.stat()).st_size <= limit
        assert await store.checkpoint() is None
        assert (await wal.stat()).st_size == 0
    finally:
        await pin.let_go()
        await store.aclose()


async def test_a_checkpoint_that_keeps_failing_is_degraded_health(api: Api) -> None:
    """The host checkpoints every ``CHECKPOINT_EVERY_S``; after several in a row that could not
    finish (a reader pins the WAL), health reports it (``checkpoint``); one that finishes clears
    it."""
    async with api.host(agent([])) as host:
        pin = Pin(api.path)
        try:
            await pin.hold()
            await host.post("ops", "grow the WAL")  # a frame the reader's snapshot predates
            for done in range(1, CHECKPOINT_FAILURES_REPORTED + 1):
                await _next_checkpoint(api, host, done)
            fault = host.store_fault
            await pin.let_go()
            await _next_checkpoint(api, host, CHECKPOINT_FAILURES_REPORTED + 1)
        finally:
            await pin.let_go()
        assert fault is not None and fault.cause == "checkpoint" and "reader" in fault.message
        assert host.store_fault is None


async def _next_checkpoint(api: Api, host: Host, count: int) -> None:
    await anyio.wait_all_tasks_blocked()
    api.clock.advance(CHECKPOINT_EVERY_S)
    await until(lambda: watch_of(host).checkpoints >= count)


# -- afp serve --------------------------------------------------------------------------------

AGENTS_TOML = """
[[agents]]
id = "ops"
systemPrompt = "You answer."

[agents.model]
provider = "scripted"
model = "demo-scripted"
script = "afp_runtime.demo:demo_script"
"""


def _afp_env(tmp_path: Path) -> dict[str, str]:
    return serve_env(tmp_path / "invocations")


def test_sigterm_during_a_full_disk_exits_0_and_a_start_over_it_exits_4(
    real_disk: Disk, tmp_path: Path
) -> None:
    """``afp serve`` on a disk that fills under it answers 503 and health ``degraded``; SIGTERM
    then exits 0 after the grace (not 70); a start over the full disk exits 4 with one line."""
    agents = tmp_path / "agents.toml"
    agents.write_text(AGENTS_TOML, encoding="utf-8")
    env = _afp_env(tmp_path)
    log = tmp_path / "serve.log"
    served = Served(agents, str(real_disk.path), "h1", env, log).wait_ready()
    try:
        anyio.run(real_disk.fill, None)
        for n in range(2_000):
            reply = served.client.post(
                "/v1/agents/ops/inbox", json={"text": "x" * 1_000, "idempotencyKey": f"k{n}"}
            )
            if reply.status_code != 202:
                break
        assert reply.status_code == 503, reply.text
        assert reply.json()["error"]["code"] == "store-unavailable"
        health = served.client.get("/v1/health").json()
        assert health["status"] == "degraded", health
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(30) == 0, log.read_text(encoding="utf-8")[-4000:]
    finally:
        served.end()
    text = log.read_text(encoding="utf-8")
    assert "Traceback" not in text and text.count("disk-full") <= 3, text[-4000:]
    started = subprocess.run(
        [
            sys.executable,
            "-m",
            "afp_runtime.cli",
            "serve",
            "--agents",
            str(agents),
            "--db",
            str(real_disk.path),
            "--port",
            "0",
            "--host-id",
            "h1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "AFP_LOG_FORMAT": "console"},
        cwd=REPO,
        check=False,
    )
    assert started.returncode == 4, started.stderr
    assert started.stderr.count("\n") == 1 and "full" in started.stderr, started.stderr


class _AwayReader(SqliteStore):
    """A reader whose ``quick_check`` finds the store out of reach while ``away`` holds items."""

    away: list[str]

    async def quick_check(self) -> list[str]:
        if self.away:
            raise StoreUnavailable(self.away.pop())
        return await super().quick_check()


class _AwayStore(SqliteStore):
    away: list[str]

    async def open_reader(self) -> SqliteStore:
        reader = await _AwayReader.open(self.path, read_only=True)
        reader.away = self.away
        return reader


async def test_a_store_check_that_cannot_reach_the_store_is_tried_again_not_damage(
    api: Api,
) -> None:
    """After an unclean stop, a ``quick_check`` that meets ``StoreUnavailable`` (a Postgres
    server restarting) leaves the check ``checking`` and health ``degraded``, and is done again
    after a back-off on the clock: it passes, instead of the host calling the store damaged."""
    store = await SqliteStore.open(api.path, now_ms=0)
    await store.begin_serving()  # a host that died while serving leaves the marker clear
    await store.aclose()
    store = await _AwayStore.open(api.path)
    store.away = ["the server is restarting"]
    try:
        async with Host(store, [agent([])], clock=api.clock, ids=api.ids) as host:
            # The fault is recorded just before the check sleeps on the clock; waiting for the
            # reader to be used up is not enough: closing it runs in a thread, and the clock
            # moved while the check was still there would make its back-off start later.
            await until(lambda: host.store_fault is not None)
            await anyio.wait_all_tasks_blocked()
            checking, fault = host.store_check, host.store_fault
            api.clock.advance(0.25)
            await until(lambda: host.store_check != "checking")
            passed = host.store_check
    finally:
        await store.aclose()
    assert checking == "checking" and fault is not None and fault.cause == "unreachable"
    assert passed == "ok"


async def test_a_database_file_moved_away_refuses_writes_until_it_is_back(api: Api) -> None:
    """SQLite would go on writing to the open file after it was moved or removed, and every
    post acknowledged then would be lost with it: a post is refused 503 (reason
    ``cannot-open``) and health is ``degraded`` until the file is back, then stored."""
    moved = anyio.Path(f"{api.path}.moved")
    async with api.running(agent([])) as (_host, client):
        first = await client.post("/v1/agents/ops/inbox", json={"text": "before"})
        await anyio.Path(api.path).rename(moved)
        refused = await client.post("/v1/agents/ops/inbox", json={"text": "while away"})
        health = (await client.get("/v1/health")).json()
        await moved.rename(api.path)
        after = await client.post("/v1/agents/ops/inbox", json={"text": "after"})
    assert first.status_code == 202 and after.status_code == 202, (first.text, after.text)
    assert refused.status_code == 503, refused.text
    assert error_of(refused).get("reason") == "cannot-open"
    assert health["status"] == "degraded" and "gone" in health["storeFault"]["message"]
    store = await SqliteStore.open(api.path, read_only=True)
    try:
        texts = [row.text for row in await store.inbox("ops")]
    finally:
        await store.aclose()
    assert texts == ["before", "after"]


async def test_a_file_that_may_not_be_written_refuses_writes_and_recovers(api: Api) -> None:
    """A store whose file may not be written (SQLite's ``SQLITE_READONLY``; ``PRAGMA
    query_only`` on the writer stands in for a read-only mount, which Linux refuses to make of
    a disk with files open for writing): a post is 503 ``read-only``, health is ``degraded``,
    reads go on; writable again, the post sent again is stored."""
    async with api.running(agent([])) as (host, client):
        body = {"text": "while read-only", "idempotencyKey": "ro"}
        conn = host.store._conn  # type: ignore[attr-defined]
        await conn.execute("PRAGMA query_only=1")
        refused = await client.post("/v1/agents/ops/inbox", json=body)
        health = (await client.get("/v1/health")).json()
        read = await client.get("/v1/agents/ops/inbox")
        await conn.execute("PRAGMA query_only=0")
        again = await client.post("/v1/agents/ops/inbox", json=body)
        healed = (await client.get("/v1/health")).json()
    assert refused.status_code == 503, refused.text
    assert error_of(refused).get("reason") == "read-only"
    assert health["status"] == "degraded" and read.status_code == 200
    assert again.status_code == 202 and healed["status"] == "ok", (again.text, healed)
