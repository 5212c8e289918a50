"""What the Postgres backend adds to the conformance suite (docs/storage.md#the-postgres-backend):
opening through ``open_store``, password masking, migrations and the refusal of a newer schema,
the pool and its statement timeout, lost connections, and concurrent writers on one agent.

Every test runs on a fresh database of the server ``scripts/test`` starts; none skips.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest

from afp_runtime.errors import (
    ConfigError,
    NotOwner,
    SchemaTooNew,
    StoreDamaged,
    StoreUnavailable,
)
from afp_runtime.records import (
    CommitBundle,
    IterationWrite,
    MaxIterationsWrite,
    RunLog,
    RunStart,
    TurnWrite,
    Txn,
    runtime_stage_id,
)
from afp_runtime.store import open_store
from afp_runtime.store.postgres import SCHEMA_VERSION, PostgresRunLog, PostgresStore, masked
from afp_runtime.store.postgres.connect import parse, ssl_context
from tests.api.conftest import until
from tests.store._postgres import ENV, FreshDatabase, admin, server_url

# Three keys of int values, so a key's last set is found among many others.
_INT_WRITES = (TurnWrite, IterationWrite, MaxIterationsWrite)

T0 = 1_700_000_000_000


@pytest.fixture(name="database")
async def fixture_database() -> AsyncIterator[FreshDatabase]:
    """A fresh, created database on the test server, dropped after the test."""
    database = FreshDatabase()
    await database.create()
    yield database
    await database.drop()


def with_password(url: str, password: str) -> str:
    """``url`` with ``password`` given for its user."""
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user or 'afp'}:{password}@{host}"))


async def test_open_store_opens_postgres_urls_and_masks_the_password(
    database: FreshDatabase,
) -> None:
    """open_store opens postgresql:// and postgres:// URLs; the location shows no password."""
    url = with_password(database.url, "s3cret-pw")
    store = await open_store(url)
    try:
        assert isinstance(store, PostgresStore)
        assert "s3cret-pw" not in store.location and ":***@" in store.location
        assert store.schema_version == SCHEMA_VERSION
    finally:
        await store.aclose()
    other = await open_store("postgres" + url.removeprefix("postgresql"))
    await other.aclose()


async def test_an_unreachable_server_is_unavailable_with_the_password_masked() -> None:
    """A server nobody listens on is StoreUnavailable, and the message masks the password."""
    with pytest.raises(StoreUnavailable) as caught:
        await open_store("postgresql://ann:hunter2-secret@127.0.0.1:1/afp?connect_timeout_s=5")
    assert "hunter2-secret" not in str(caught.value)
    assert "postgresql://ann:***@127.0.0.1:1/afp" in str(caught.value)


def test_masked_hides_only_the_password() -> None:
    """masked replaces the password with *** and leaves a URL without one as it is."""
    assert masked("postgresql://u:p%40ss@db.example:5432/afp") == (
        "postgresql://u:***@db.example:5432/afp"
    )
    assert masked("postgresql://u@db/afp") == "postgresql://u@db/afp"


def test_a_password_query_parameter_is_the_password_and_no_host_keeps_its_slashes() -> None:
    """``password=`` in the query is used as the password (a libpq URL may carry it there) and
    left out of the DSN; a URL with no host part keeps its ``//``."""
    target = parse("postgresql:///afp?host=/run/postgresql&password=s3cret&user=afp")
    assert target.password == "s3cret"
    assert target.dsn == "postgresql:///afp?host=%2Frun%2Fpostgresql&user=afp"


def test_an_unreadable_sslrootcert_is_a_config_error_naming_it(tmp_path: Path) -> None:
    """A ``sslrootcert`` that is missing or holds no certificate is a ConfigError naming the
    option and the file, not a bare FileNotFoundError or SSLError."""
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate")
    for cert in (tmp_path / "missing.pem", garbage):
        target = parse(f"postgresql://u:pw@db.example/afp?sslmode=verify-full&sslrootcert={cert}")
        with pytest.raises(ConfigError, match=f"sslrootcert {cert}"):
            ssl_context(target)


async def test_bad_pool_options_are_a_config_error(database: FreshDatabase) -> None:
    """Pool bounds out of order, or an option that is not a number, are a ConfigError."""
    with pytest.raises(ConfigError, match="pool_min"):
        await open_store(database.url + "&pool_min=3&pool_max=2")
    with pytest.raises(ConfigError, match="statement_timeout_ms"):
        await open_store(database.url + "&statement_timeout_ms=soon")


async def test_the_pool_is_bounded_and_sets_the_statement_timeout(
    database: FreshDatabase,
) -> None:
    """The pool holds at most pool_max connections, each with the statement timeout set."""
    store = await PostgresStore.open(database.url + "&pool_max=3&statement_timeout_ms=1500")
    try:
        assert store._pool.get_max_size() == 3
        found = await store._fetch("SHOW statement_timeout")
        assert found[0][0] == "1500ms"
        with pytest.raises(StoreUnavailable, match="QueryCanceled"):
            await store._fetch("SELECT pg_sleep(3)")
    finally:
        await store.aclose()


async def test_migrations_are_numbered_and_a_newer_schema_is_refused(
    database: FreshDatabase,
) -> None:
    """Opening records each migration once; a database of a newer schema is refused unchanged."""
    store = await open_store(database.url, now_ms=T0)
    await store.aclose()
    store = await open_store(database.url, now_ms=T0 + 1)
    await store.aclose()
    conn = await admin(database.url)
    try:
        rows = await conn.fetch("SELECT version, applied_at_ms FROM migrations ORDER BY version")
        assert [tuple(r) for r in rows] == [(n, T0) for n in range(1, SCHEMA_VERSION + 1)]
        await conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
        with pytest.raises(SchemaTooNew, match="999"):
            await open_store(database.url)
        assert await conn.fetchval("SELECT value FROM meta WHERE key='schema_version'") == "999"
    finally:
        await conn.close()


async def test_a_foreign_database_is_left_alone(database: FreshDatabase) -> None:
    """A database holding other tables is StoreDamaged; an empty one is no reader's to create."""
    with pytest.raises(StoreUnavailable, match="no afp_runtime data"):
        await open_store(database.url, read_only=True)
    with pytest.raises(StoreUnavailable, match="no afp_runtime data"):
        await open_store(database.url, create=False)
    conn = await admin(database.url)
    try:
        await conn.execute("CREATE TABLE invoices (id INTEGER)")
    finally:
        await conn.close()
    with pytest.raises(StoreDamaged, match="no afp_runtime store"):
        await open_store(database.url)


async def test_a_lost_connection_is_retried_for_reads(database: FreshDatabase) -> None:
    """After the server drops every connection of the pool, the next read succeeds anew."""
    store = await open_store(database.url)
    try:
        await store.ensure_agent("ann", now_ms=T0)
        conn = await admin(database.url)
        try:
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        finally:
            await conn.close()
        assert await store.conversation_state("ann") is not None
        await store.ensure_agent("bob", now_ms=T0)
    finally:
        await store.aclose()


async def _terminate(url: str, pid: int) -> None:
    conn = await admin(url)
    try:
        await conn.execute("SELECT pg_terminate_backend($1)", pid)
    finally:
        await conn.close()


async def test_a_connection_lost_inside_a_transaction_is_unavailable_and_replaced(
    database: FreshDatabase,
) -> None:
    """A transaction whose connection the server closes under it is a StoreUnavailable naming
    that loss (not a failure to discard the connection asyncpg already dropped from the pool),
    and the next transaction commits on a fresh connection."""
    store = await open_store(database.url)
    assert isinstance(store, PostgresStore)
    try:
        await store.ensure_agent("ann", now_ms=T0)

        async def work(conn: Any) -> None:
            await _terminate(database.url, conn.get_server_pid())
            await until(conn.is_closed)
            await conn.execute("SELECT 1")

        with pytest.raises(StoreUnavailable) as caught:
            await store._write(work)
        assert "terminate()" not in str(caught.value), caught.value
        await store.ensure_agent("bob", now_ms=T0)
        assert [a.agent_id for a in await store.agents()] == ["ann", "bob"]
    finally:
        await store.aclose()


async def test_watch_posts_listens_again_and_reports_every_agent(database: FreshDatabase) -> None:
    """When its listening connection is lost, watch_posts listens again, reports every agent
    once (posts made meanwhile went unheard) and then hears posts as before."""
    writer = await open_store(database.url, now_ms=T0)
    listener = await open_store(database.url, now_ms=T0)
    heard: list[str] = []
    try:
        for agent_id in ("ann", "bob"):
            await writer.ensure_agent(agent_id, now_ms=T0)
        conn = await admin(database.url)
        try:
            pids: list[int] = []

            async def listening() -> bool:
                pids[:] = (
                    await conn.fetchval(
                        "SELECT array_agg(pid) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND query LIKE 'LISTEN%'"
                    )
                    or []
                )
                return bool(pids)

            async with anyio.create_task_group() as group:
                group.start_soon(listener.watch_posts, heard.append)
                await until(listening)
                await conn.execute("SELECT pg_terminate_backend($1)", pids[0])
                await until(lambda: sorted(heard) == ["ann", "bob"])
                await writer.post("bob", "hello again", message_id="m1", now_ms=T0)
                await until(lambda: len(heard) == 3)
                group.cancel_scope.cancel()
        finally:
            await conn.close()
        assert heard[2:] == ["bob"]
    finally:
        await writer.aclose()
        await listener.aclose()


async def test_concurrent_posts_to_one_agent_get_distinct_positions(
    database: FreshDatabase,
) -> None:
    """Posts racing on two stores for one agent each get their own position (the row lock)."""
    first, second = await open_store(database.url), await open_store(database.url)
    try:
        await first.ensure_agent("ann", now_ms=T0)
        positions: list[int] = []

        async def post(store: object, n: int) -> None:
            assert isinstance(store, PostgresStore)
            ack = await store.post("ann", f"m{n}", message_id=f"msg-{n}", now_ms=T0)
            positions.append(ack.position)

        async with anyio.create_task_group() as tg:
            for n in range(12):
                tg.start_soon(post, first if n % 2 else second, n)
        assert sorted(positions) == list(range(1, 13))
    finally:
        await first.aclose()
        await second.aclose()


def test_no_server_is_a_failure_not_a_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without AFP_TEST_POSTGRES_URL a Postgres test fails (it is never skipped)."""
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(pytest.fail.Exception, match="scripts/test"):
        server_url()


async def test_a_runs_log_reads_only_what_it_is_asked(database: FreshDatabase) -> None:
    """read_run on Postgres answers value_at from the per-key index: one read of the
    index and one of the bundle it names, however long the log."""
    store = await open_store(database.url)
    try:
        await store.ensure_agent("ann", now_ms=T0)
        start = RunStart(
            run_id="run-1",
            agent_id="ann",
            turn=1,
            kind="initial",
            started_at_ms=T0,
            message_id="m-1",
        )
        bundles = [
            CommitBundle(
                run_id="run-1",
                seq=seq,
                stage="settle",
                runtime_stage_id=runtime_stage_id("settle", seq),
                iteration=seq,
                writes=(_INT_WRITES[seq % 3](value=seq),),
                committed_at_ms=T0 + seq,
            )
            for seq in range(200)
        ]
        await store.commit(Txn(agent_id="ann", run_start=start, bundles=bundles))

        def read(log: RunLog) -> tuple[object, int]:
            assert isinstance(log, PostgresRunLog)
            before = log.reads
            value = log.value_at("maxIterations", 150)
            return value, log.reads - before

        value, reads = await store.read_run("run-1", read)
        assert value == 149
        assert reads == 2
    finally:
        await store.aclose()


async def test_a_post_through_one_store_is_heard_through_another(database: FreshDatabase) -> None:
    """watch_posts hears the posts and closed questions another connection commits, by agent
    id; nothing is heard of a post rolled back (an owner refusal)."""
    writer = await open_store(database.url, now_ms=T0)
    listener = await open_store(database.url, now_ms=T0)
    heard: list[str] = []
    arrived = anyio.Event()

    def on_post(agent_id: str) -> None:
        heard.append(agent_id)
        arrived.set()

    try:
        await writer.ensure_agent("ann", now_ms=T0)
        async with anyio.create_task_group() as group:
            group.start_soon(listener.watch_posts, on_post)
            await anyio.sleep(0.2)  # LISTEN is issued before the post
            await writer.post("ann", "hello", message_id="m1", now_ms=T0, sender="ann")
            with anyio.fail_after(10):
                await arrived.wait()
            with pytest.raises(NotOwner):
                await writer.post("ann", "not yours", message_id="m2", now_ms=T0, sender="bob")
            await anyio.sleep(0.3)
            group.cancel_scope.cancel()
        assert heard == ["ann"]
    finally:
        await writer.aclose()
        await listener.aclose()


async def test_ensure_agent_of_a_known_agent_opens_no_transaction(
    database: FreshDatabase,
) -> None:
    """Once an agent is known, ensure_agent on Postgres writes no further transaction."""
    store = await open_store(database.url)
    assert isinstance(store, PostgresStore)
    try:
        await store.ensure_agent("a", now_ms=T0)
        before = store.transactions
        for _ in range(5):
            await store.ensure_agent("a", now_ms=T0)
        assert store.transactions == before
        assert [row.agent_id for row in await store.agents()] == ["a"]
    finally:
        await store.aclose()
