"""The pool under the Postgres store: opening, migrations, transactions, reads
(docs/storage.md#the-postgres-backend).

One bounded asyncpg pool per store (``pool_min``..``pool_max`` connections, statements prepared
and cached per connection by asyncpg, ``statement_timeout`` set on every connection). Each write
is one transaction on one connection, shielded from cancellation so it commits or rolls back
whole; a transaction whose ``Txn`` does not precede an effect leaving the process commits with
``synchronous_commit=off`` (the ``NORMAL`` of SQLite), every other one waits for the WAL flush
(docs/architecture.md#decision-1-sync-durability-commits-at-effect-boundaries). A read whose
connection was lost, and a transaction whose connection was lost at ``BEGIN``, are repeated on
another connection (after a server restart every pooled one may be dead); a lost connection
anywhere else is a ``StoreUnavailable``, and every other database error a ``StoreError``. The
concerns of the store are mixins over this class, as in the SQLite backend;
``store.PostgresStore`` puts them together.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import asyncpg

from afp_runtime.errors import (
    AfpError,
    SchemaTooNew,
    StoreDamaged,
    StoreError,
    StoreUnavailable,
)
from afp_runtime.records import ConversationState
from afp_runtime.store import rows as common
from afp_runtime.store.postgres import connect, parts, trips
from afp_runtime.store.postgres.migrations import MIGRATIONS, SCHEMA_VERSION

T = TypeVar("T")
Core = TypeVar("Core", bound="PostgresCore")

# Errors that mean the connection (or the server) went away, not that a statement was wrong.
LOST: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.exceptions.InterfaceError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.CannotConnectNowError,
    # What a connection the server closed under asyncpg may say on its next use.
    asyncpg.exceptions.InternalClientError,
)
# The channel every inbox post and closed question notifies, the agent's id as payload.
POSTS_CHANNEL = "afp_posts"
# Any migrating writer holds this advisory lock, so two hosts opening a fresh database at
# once migrate it once.
_MIGRATION_LOCK = 0x41_46_50_4D  # "AFPM"


class PostgresCore:
    """One pool on one Postgres database (see ``store.PostgresStore``)."""

    def __init__(
        self,
        target: connect.Target,
        pool: asyncpg.Pool,
        *,
        read_only: bool,
        counter: trips.Trips | None = None,
    ) -> None:
        self.target = target
        self._pool = pool
        self._read_only = read_only
        self._closed = False
        self._trips = counter or trips.Trips()
        self._queue: list[parts.Member] = []  # commits waiting for the next group
        self._group_lock = anyio.Lock()
        self.transactions = 0
        self.full_transactions = 0
        self.quick_checks = 0
        # (host_id, lease_epoch) every commit is fenced by; None: unfenced.
        self._fence: tuple[str, int] | None = None
        # Agents this store has seen exist: agent rows are never deleted, so ``ensure_agent``
        # needs no transaction for them (a host calls it on every work pass).
        self._known_agents: set[str] = set()
        # The definition summary each agent is known to hold (``ensure_agent`` skips a write
        # that would change nothing).
        self._profiles: dict[str, bytes] = {}
        # The schema the database is at: a reader does not migrate, so it reads what is there.
        self._stored_version = SCHEMA_VERSION

    # -- opening -------------------------------------------------------------------------

    @classmethod
    async def open(
        cls: type[Core],
        url: str,
        *,
        read_only: bool = False,
        create: bool = True,
        now_ms: int = 0,
        pool_min: int | None = None,
        pool_max: int | None = None,
        statement_timeout_ms: int | None = None,
    ) -> Core:
        """Open (and for writers create and migrate) the store in the database at ``url``;
        with ``create=False`` (and always read-only) a database holding no store is refused.

        Raises:
            ConfigError: the URL's options are invalid.
            StoreUnavailable: the server cannot be reached or refuses the connection.
            StoreDamaged: the database holds tables but no afp_runtime store; left untouched.
            SchemaTooNew: a newer afp_runtime wrote it; it is left untouched.
        """
        target = connect.parse(
            url,
            pool_min=pool_min,
            pool_max=pool_max,
            statement_timeout_ms=statement_timeout_ms,
        )
        return await cls.open_target(target, read_only=read_only, create=create, now_ms=now_ms)

    @classmethod
    async def open_target(
        cls: type[Core], target: connect.Target, *, read_only: bool, create: bool, now_ms: int
    ) -> Core:
        """``open`` on an already parsed target."""
        target = await anyio.to_thread.run_sync(connect.with_password, target)
        counter = trips.Trips()
        pool = await _create_pool(target, read_only=read_only, counter=counter)
        store = cls(target, pool, read_only=read_only, counter=counter)
        try:
            await store._prepare(now_ms, create=create)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await store._close_pool()
            raise
        return store

    async def _prepare(self, now_ms: int, *, create: bool) -> None:
        tables = {
            row[0]
            for row in await self._fetch(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema()"
            )
        }
        if tables and "meta" not in tables:
            raise StoreDamaged(
                f"{self.location} holds tables but no afp_runtime store; it was not changed",
                path=self.location,
            )
        version = await self._version() if "meta" in tables else 0
        self._refuse_newer(version)
        if version == 0 and (self._read_only or not create):
            raise StoreUnavailable(f"{self.location} holds no afp_runtime data yet")
        if self._read_only:
            self._stored_version = version
        if not self._read_only and version < SCHEMA_VERSION:
            await self._write(lambda conn: self._migrate(conn, now_ms), full=True)

    async def _version(self, conn: asyncpg.Connection | None = None) -> int:
        sql = "SELECT value FROM meta WHERE key = 'schema_version'"
        found = await (conn.fetch(sql) if conn is not None else self._fetch(sql))
        if not found or not str(found[0][0]).isdigit():
            raise StoreDamaged(
                f"{self.location} has no readable schema version; it was not changed",
                path=self.location,
            )
        return int(found[0][0])

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{self.location} was written by a newer afp_runtime (Postgres schema "
                f"{version}, this build knows {SCHEMA_VERSION}); it was not changed",
                path=self.location,
            )

    async def _migrate(self, conn: asyncpg.Connection, now_ms: int) -> None:
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            " CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY,"
            " name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL);"
            " INSERT INTO meta VALUES ('schema_version', '0') ON CONFLICT DO NOTHING"
        )
        version = await self._version(conn)  # again, under the lock
        self._refuse_newer(version)
        for number, name, sql in MIGRATIONS:
            if number > version:
                await conn.execute(sql)
                await conn.execute(
                    "INSERT INTO migrations VALUES ($1, $2, $3)", number, name, now_ms
                )
        await conn.execute(
            "UPDATE meta SET value = $1 WHERE key = 'schema_version'", str(SCHEMA_VERSION)
        )

    async def _close_pool(self) -> None:
        try:
            with anyio.fail_after(10):
                await self._pool.close()
        except LOST:  # TimeoutError is among them
            self._pool.terminate()

    async def aclose(self) -> None:
        """Close the pool (waiting for connections in use); a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await self._close_pool()

    @property
    def location(self) -> str:
        """The database URL, its password masked."""
        return self.target.location

    @property
    def round_trips(self) -> int:
        """Statements and transaction-control commands sent to the server so far
        (docs/storage.md#round-trips), beside ``transactions``."""
        return self._trips.count

    @property
    def schema_version(self) -> int:
        """The Postgres schema version this build writes."""
        return SCHEMA_VERSION

    # -- connections, transactions, reads ------------------------------------------------

    def _unavailable(self, doing: str, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(
            f"{doing} on the Postgres store at {self.location} failed: {type(exc).__name__}: {exc}",
            path=self.location,
        )

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        try:
            conn = await self._pool.acquire(timeout=self.target.connect_timeout_s)
        except LOST as exc:
            raise self._unavailable("getting a connection", exc) from exc
        except asyncpg.PostgresError as exc:
            raise self._unavailable("getting a connection", exc) from exc
        try:
            yield conn
        except LOST:
            _discard(conn)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self._pool.release(conn)
                except LOST:
                    _discard(conn)

    @property
    def _attempts(self) -> int:
        # After a server restart every pooled connection may be dead: one try on each of
        # them and one on a fresh connection, which fails at once if the server is down.
        return self.target.pool_max + 1

    async def _write(
        self,
        work: Callable[[asyncpg.Connection], Awaitable[T]],
        *,
        full: bool = False,
        shield: bool = True,
    ) -> T:
        """``work`` in one transaction, shielded: once begun it commits or rolls back whole.
        A long one (an import of whole agents) passes ``shield=False``: cancelling it rolls it
        back.

        Raises:
            StoreError: the store is read-only, or a statement failed (nothing was written).
            StoreUnavailable: the connection was lost (if at COMMIT, the outcome is unknown).
        """
        if self._read_only:
            raise StoreError("this store was opened read-only")
        with anyio.CancelScope(shield=shield):
            try:
                result = await self._transact(work, full=full)
            except AfpError:
                raise
            except (*LOST, asyncpg.exceptions.QueryCanceledError) as exc:
                raise self._unavailable("a transaction", exc) from exc
            except asyncpg.PostgresError as exc:
                raise StoreError(f"a store transaction failed: {exc}") from exc
        self.transactions += 1
        self.full_transactions += int(full)
        return result

    async def _transact(
        self, work: Callable[[asyncpg.Connection], Awaitable[T]], *, full: bool
    ) -> T:
        # A connection found lost at BEGIN has written nothing: the attempt is repeated on
        # another connection. Once BEGIN went through, a loss is the caller's to see.
        for attempt in range(1, self._attempts + 1):
            async with self._connection() as conn:
                transaction = conn.transaction()
                try:
                    await transaction.start()
                except LOST:
                    if attempt == self._attempts:
                        raise
                    _discard(conn)
                    continue
                try:
                    if not full:
                        await conn.execute("SET LOCAL synchronous_commit TO off")
                    result = await work(conn)
                except BaseException:
                    with (
                        anyio.CancelScope(shield=True),
                        contextlib.suppress(*LOST, asyncpg.PostgresError),
                    ):
                        await transaction.rollback()
                    raise
                await transaction.commit()
                return result
        raise AssertionError("unreachable")

    async def _statement(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """One write statement (``work`` sends exactly one) outside any explicit transaction:
        the statement is its own transaction, one round trip. A connection seen closed when
        taken has sent nothing, and another is taken; once the statement went out, a loss leaves
        its outcome unknown and is raised.

        Raises:
            StoreError: the store is read-only, or the statement failed (it wrote nothing).
            StoreUnavailable: the connection was lost (the outcome is unknown).
        """
        if self._read_only:
            raise StoreError("this store was opened read-only")
        for attempt in range(1, self._attempts + 1):
            try:
                async with self._connection() as conn:
                    if conn.is_closed() and attempt < self._attempts:
                        continue
                    return await work(conn)
            except AfpError:
                raise
            except (*LOST, asyncpg.exceptions.QueryCanceledError) as exc:
                raise self._unavailable("a transaction", exc) from exc
            except asyncpg.PostgresError as exc:
                raise StoreError(f"a store transaction failed: {exc}") from exc
        raise AssertionError("unreachable")

    async def _fetch(self, sql: str, *args: Any) -> list[Any]:
        """Every row of one read, repeated on another connection as ``_read`` says."""

        async def fetch(conn: asyncpg.Connection) -> list[Any]:
            return list(await conn.fetch(sql, *args))

        return await self._read(fetch)

    async def _read(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """``work`` (reads only) on one connection; repeated on another connection when the
        connection was lost (a read changes nothing, so repeating it is safe): once when no
        connection could be had, on each pooled connection when the one used turned out dead."""
        for attempt in range(1, self._attempts + 1):
            try:
                async with self._connection() as conn:
                    return await work(conn)
            except StoreUnavailable:
                if attempt >= 2:
                    raise
            except LOST as exc:
                if attempt == self._attempts:
                    raise self._unavailable("a read", exc) from exc
            except asyncpg.exceptions.QueryCanceledError as exc:
                raise self._unavailable("a read", exc) from exc
            except asyncpg.PostgresError as exc:
                raise StoreError(f"a store read failed: {exc}") from exc
        raise AssertionError("unreachable")

    async def _agent_id(self, conn: asyncpg.Connection, agent_id: str, *, lock: bool) -> int:
        """The agent's row id inside a transaction (its row locked with ``lock``)."""
        sql = "SELECT agent FROM agents WHERE agent_id = $1" + (" FOR UPDATE" if lock else "")
        agent = await conn.fetchval(sql, agent_id)
        if agent is None:
            raise StoreError(f"no agent {agent_id!r} in the store", agent_id=agent_id)
        return int(agent)

    def _decode_state(self, blob: bytes, agent_id: str) -> ConversationState:
        return common.decode_state(blob, agent_id)


def _discard(conn: asyncpg.Connection) -> None:
    """Terminate a connection found lost, so the pool replaces it rather than hand it out
    again. asyncpg detaches a connection whose socket closed from the pool by itself, and then
    refuses ``terminate``: such a connection needs nothing more."""
    with contextlib.suppress(asyncpg.exceptions.InterfaceError):
        conn.terminate()


async def _create_pool(
    target: connect.Target, *, read_only: bool, counter: trips.Trips
) -> asyncpg.Pool:
    """A pool on ``target`` (TLS prepared in a worker thread; ``prefer`` falls back to plain
    when the server has no TLS).

    Raises:
        StoreUnavailable: no connection could be made (the URL shown masked).
    """
    context = await anyio.to_thread.run_sync(connect.ssl_context, target)
    settings = {
        "application_name": "afp-runtime",
        "statement_timeout": str(target.statement_timeout_ms),
    }
    if read_only:
        settings["default_transaction_read_only"] = "on"

    async def init(conn: trips.CountingConnection) -> None:
        conn.counted(counter)

    async def attempt(ssl: Any) -> asyncpg.Pool:
        pool: asyncpg.Pool = await asyncpg.create_pool(
            target.dsn,
            password=target.password,
            ssl=ssl,
            min_size=target.pool_min,
            max_size=target.pool_max,
            timeout=target.connect_timeout_s,
            # The client gives up a little after the server would have.
            command_timeout=target.statement_timeout_ms / 1000 + 5,
            server_settings=settings,
            connection_class=trips.CountingConnection,
            init=init,
            reset=trips.keep_session,
        )
        return pool

    try:
        try:
            return await attempt(context)
        except ConnectionError as exc:
            if target.ssl_mode not in ("allow", "prefer") or "SSL" not in str(exc):
                raise
            return await attempt(False)
    except (*LOST, asyncpg.PostgresError) as exc:
        raise StoreUnavailable(
            f"cannot connect to the Postgres store at {target.location}: "
            f"{type(exc).__name__}: {exc}",
            path=target.location,
        ) from exc
