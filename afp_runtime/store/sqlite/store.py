"""The embedded SQLite store: a WAL-mode file, an append-only commit log, bodies by fingerprint.

One writer connection per process, behind an anyio lock; each ``Txn`` is one short transaction,
``synchronous=NORMAL`` unless the transaction precedes an effect leaving the process
(``synchronous=FULL``, docs/architecture.md#decision-1-sync-durability-commits-each-stage). Every
sqlite3 error becomes a ``StoreError``.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import anyio
import msgspec

from afp_runtime.errors import (
    IdempotencyConflict,
    InvalidValue,
    NotOwner,
    QuestionClosed,
    SchemaTooNew,
    StoreDamaged,
    StoreError,
    StoreUnavailable,
)
from afp_runtime.messages import Message, Usage, message_from_body
from afp_runtime.records import (
    ConversationState,
    ListRef,
    QuestionRow,
    StoredFoldedSpan,
    Txn,
    runtime_stage_id,
)
from afp_runtime.store.sqlite import leases, writes
from afp_runtime.store.sqlite.leases import AgentClaim, LeaseRenewal
from afp_runtime.store.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION
from afp_runtime.store.sqlite.rows import AgentRow, InboxRow, RunRow, StoredBundle

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5_000

_state_encoder = msgspec.msgpack.Encoder()
_state_decoder = msgspec.msgpack.Decoder(ConversationState)
_usage_decoder = msgspec.msgpack.Decoder(Usage)
_writes_decoder = msgspec.msgpack.Decoder(list[dict[str, Any]])
_span_decoder = msgspec.msgpack.Decoder(StoredFoldedSpan)
_ledger_decoder = msgspec.msgpack.Decoder(dict[str, Any])
_ids_decoder = msgspec.msgpack.Decoder(tuple[str, ...])
_any_decoder = msgspec.msgpack.Decoder()
_QUESTION_COLUMNS = (
    "q.question_id, a.agent_id, q.message_id, q.run_id, q.turn, q.kind, q.prompt,"
    " q.tool_call_ids, q.asked_at_ms, q.status, q.repeat, q.answer, q.answered_at_ms,"
    " q.answered_by, q.detail"
)


async def _rows(db: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    return list(await db.execute_fetchall(sql, params))


class LoadedConversation(msgspec.Struct, frozen=True, kw_only=True):
    """A conversation as a run restores it: the checkpoint and the resolved history."""

    state: ConversationState
    history: tuple[Message, ...]
    fingerprints: tuple[str, ...]


class Ack(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The acknowledgement of a durably accepted inbox message."""

    message_id: str
    accepted_at_ms: int
    position: int
    duplicate: bool = False


class JournalEntry(msgspec.Struct, frozen=True, kw_only=True):
    """What the journal knows of one tool call of a turn."""

    started: bool
    finished: bytes | None


class SqliteStore:
    """The CheckpointStore on one SQLite file.

    Open with ``await SqliteStore.open(path)`` (creates the file and runs migrations) or
    ``SqliteStore.open(path, read_only=True)`` for readers; close with ``aclose``.
    """

    def __init__(self, path: Path, conn: aiosqlite.Connection, *, read_only: bool) -> None:
        self.path = path
        self._conn = conn
        self._read_only = read_only
        self._lock = anyio.Lock()
        self._ids = writes.RowIds()
        self._synchronous: str | None = None
        self.transactions = 0
        self._closed = False
        self.full_transactions = 0
        self.quick_checks = 0
        # (host_id, lease_epoch) every commit is fenced by; None: unfenced (one process).
        self._fence: tuple[str, int] | None = None

    # -- opening -------------------------------------------------------------------------

    @classmethod
    async def open(
        cls, path: str | Path, *, read_only: bool = False, now_ms: int = 0
    ) -> SqliteStore:
        """Open (and for writers create and migrate) the database at ``path``.

        Raises:
            StoreUnavailable: the file cannot be opened (or does not exist, read-only).
            StoreDamaged: the file is not an afp_runtime database; it is left untouched.
            SchemaTooNew: the file was written by a newer afp_runtime; it is left untouched.
        """
        path = Path(path)
        if read_only and not await anyio.Path(path).exists():
            raise StoreUnavailable(f"no database at {path}", path=str(path))
        try:
            if read_only:
                conn = await aiosqlite.connect(
                    f"file:{path}?mode=ro", uri=True, isolation_level=None
                )
            else:
                conn = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open the database {path}: {exc}") from exc
        store = cls(path, conn, read_only=read_only)
        try:
            await store._prepare(now_ms)
        except BaseException:
            await conn.close()
            raise
        return store

    async def _prepare(self, now_ms: int) -> None:
        try:
            await self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await self._conn.execute("PRAGMA foreign_keys=ON")
            tables = {
                row[0]
                for row in await self._conn.execute_fetchall(
                    "SELECT name FROM sqlite_master WHERE type='table'"
                )
            }
        except sqlite3.DatabaseError as exc:
            raise StoreDamaged(
                f"{self.path} is not a readable SQLite database ({exc}); it was not changed",
                path=str(self.path),
            ) from exc
        if tables and "meta" not in tables:
            raise StoreDamaged(
                f"{self.path} is a SQLite database but not an afp_runtime one; it was not changed",
                path=str(self.path),
            )
        version = 0
        if "meta" in tables:
            rows = await _rows(self._conn, "SELECT value FROM meta WHERE key='schema_version'")
            if not rows or not str(rows[0][0]).isdigit():
                raise StoreDamaged(
                    f"{self.path} has no readable schema version; it was not changed",
                    path=str(self.path),
                )
            version = int(rows[0][0])
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{self.path} was written by a newer afp_runtime (schema {version}, "
                f"this build knows {SCHEMA_VERSION}); it was not changed",
                path=str(self.path),
            )
        if self._read_only:
            if version == 0:
                raise StoreUnavailable(f"{self.path} holds no afp_runtime data yet")
            return
        await self._conn.execute("PRAGMA journal_mode=WAL")
        await self._set_synchronous("NORMAL")
        if version < SCHEMA_VERSION:
            await self._migrate(version, now_ms)

    async def _migrate(self, version: int, now_ms: int) -> None:
        async with self._transaction(full=True) as db:
            if version == 0:
                await db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                await db.execute(
                    "CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                    " applied_at_ms INTEGER NOT NULL)"
                )
                await db.execute("INSERT INTO meta VALUES ('schema_version', '0')")
            for number, name, sql in MIGRATIONS:
                if number <= version:
                    continue
                # Comments go first: they may hold ';', which separates statements.
                code = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
                for statement in code.split(";"):
                    if statement.strip():
                        await db.execute(statement)
                await db.execute("INSERT INTO migrations VALUES (?, ?, ?)", (number, name, now_ms))
            await db.execute(
                "UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),)
            )

    async def aclose(self) -> None:
        """Close the connection (a writer first checkpoints the WAL); a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        async with self._lock:
            try:
                if not self._read_only:
                    await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass  # closing still releases the file; the WAL is replayed at next open
            await self._conn.close()

    # -- transactions --------------------------------------------------------------------

    async def _set_synchronous(self, level: str) -> None:
        if self._synchronous != level:
            await self._conn.execute(f"PRAGMA synchronous={level}")
            self._synchronous = level

    @asynccontextmanager
    async def _transaction(self, *, full: bool = False) -> AsyncIterator[aiosqlite.Connection]:
        if self._read_only:
            raise StoreError("this store was opened read-only")
        async with self._lock:
            try:
                await self._set_synchronous("FULL" if full else "NORMAL")
                await self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"cannot start a transaction: {exc}") from exc
            except BaseException:
                # Cancelled while BEGIN was queued: it still runs on the connection's thread,
                # which runs requests in order, so roll it back after it (else the connection
                # stays inside a transaction and every later BEGIN fails).
                with anyio.CancelScope(shield=True), contextlib.suppress(sqlite3.Error):
                    await self._conn.execute("ROLLBACK")
                raise
            try:
                yield self._conn
                await self._conn.execute("COMMIT")
            except BaseException as exc:
                # Rowids cached inside the rolled-back transaction may name rows that never were.
                self._ids.clear()
                with anyio.CancelScope(shield=True):
                    # If ROLLBACK fails the transaction is gone already; nothing was committed.
                    with contextlib.suppress(sqlite3.Error):
                        await self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"a store transaction failed: {exc}") from exc
                raise
            self.transactions += 1
            self.full_transactions += int(full)

    async def _write(self, work: Callable[[sqlite3.Connection], T], *, full: bool = False) -> T:
        """Run ``work`` in one transaction on the connection's own thread: a single hop from
        the event loop, however many statements it holds. Shielded: once begun it completes
        or rolls back, never half-way."""
        if self._read_only:
            raise StoreError("this store was opened read-only")
        level = "FULL" if full else "NORMAL"

        def run(conn: sqlite3.Connection) -> T:
            if self._synchronous != level:
                conn.execute(f"PRAGMA synchronous={level}")
                self._synchronous = level
            return writes.in_transaction(conn, work)

        with anyio.CancelScope(shield=True):
            async with self._lock:
                try:
                    # aiosqlite runs queued functions on its connection thread, in order.
                    result: T = await self._conn._execute(run, self._conn._conn)
                except BaseException as exc:
                    # Rowids cached inside the rolled-back transaction may name rows that
                    # never were.
                    self._ids.clear()
                    if isinstance(exc, sqlite3.Error):
                        raise StoreError(f"a store transaction failed: {exc}") from exc
                    raise
                self.transactions += 1
                self.full_transactions += int(full)
        return result

    async def commit(self, txn: Txn) -> None:
        """Write ``txn`` in one transaction; nothing of it is written if any part fails."""
        if txn.empty():
            return
        fence = self._fence
        await self._write(lambda conn: writes.write_txn(conn, txn, self._ids, fence), full=txn.full)

    async def _agent_rowid(self, db: aiosqlite.Connection, agent_id: str) -> int:
        rowid = self._ids.agents.get(agent_id)
        if rowid is None:
            rows = await _rows(db, "SELECT agent FROM agents WHERE agent_id=?", (agent_id,))
            if not rows:
                raise StoreError(f"no agent {agent_id!r} in the store", agent_id=agent_id)
            rowid = self._ids.agents[agent_id] = int(rows[0][0])
        return rowid

    # -- agents and conversations ---------------------------------------------------------

    async def ensure_agent(self, agent_id: str, *, now_ms: int) -> None:
        """Create the agent and its empty conversation when it does not exist yet."""
        async with self._transaction() as db:
            rows = await _rows(db, "SELECT agent FROM agents WHERE agent_id=?", (agent_id,))
            if rows:
                self._ids.agents[agent_id] = int(rows[0][0])
                return
            cursor = await db.execute(
                "INSERT INTO agents (agent_id, created_at_ms) VALUES (?, ?)", (agent_id, now_ms)
            )
            rowid = cursor.lastrowid or 0
            state = ConversationState(agent_id=agent_id, checkpointed_at_ms=now_ms)
            await db.execute(
                "INSERT INTO conversations VALUES (?, ?)", (rowid, _state_encoder.encode(state))
            )
            self._ids.agents[agent_id] = rowid

    async def conversation_state(self, agent_id: str) -> ConversationState | None:
        """The stored checkpoint of ``agent_id`` without its messages, or None."""
        rows = await self._fetch(
            "SELECT c.state FROM conversations c JOIN agents a ON a.agent=c.agent"
            " WHERE a.agent_id=?",
            (agent_id,),
        )
        if not rows:
            return None
        return self._decode_state(rows[0][0], agent_id)

    def _decode_state(self, blob: bytes, agent_id: str) -> ConversationState:
        try:
            return _state_decoder.decode(blob)
        except msgspec.DecodeError as exc:
            raise StoreDamaged(
                f"the conversation checkpoint of {agent_id!r} does not decode: {exc}",
                agent_id=agent_id,
            ) from exc

    async def load_conversation(self, agent_id: str) -> LoadedConversation:
        """The checkpoint and its history, resolved: O(window), not O(all history)."""
        state = await self.conversation_state(agent_id)
        if state is None:
            raise StoreError(f"no agent {agent_id!r} in the store", agent_id=agent_id)
        messages, fps = await self.resolve(agent_id, state.history)
        return LoadedConversation(state=state, history=messages, fingerprints=fps)

    async def resolve(
        self, agent_id: str, ref: ListRef
    ) -> tuple[tuple[Message, ...], tuple[str, ...]]:
        """The messages (with their markers) and fingerprints of a list reference."""
        rows = await self._fetch("SELECT agent FROM agents WHERE agent_id=?", (agent_id,))
        if not rows:
            raise StoreError(f"no agent {agent_id!r} in the store", agent_id=agent_id)
        agent = rows[0][0]
        messages: list[Message] = []
        fps: list[str] = []
        for start, end in ref.ranges:
            found = await self._fetch(
                "SELECT i.pos, i.fp, i.flags, i.injected_by, b.body FROM items i"
                " LEFT JOIN bodies b ON b.fp=i.fp WHERE i.agent=? AND i.pos>=? AND i.pos<?"
                " ORDER BY i.pos",
                (agent, start, end),
            )
            if len(found) != end - start:
                raise StoreDamaged(
                    f"the history of {agent_id!r} names items {start}..{end - 1}, "
                    f"but {len(found)} are stored",
                    agent_id=agent_id,
                )
            for pos, fp, flags, injected_by, body in found:
                if body is None:
                    raise StoreDamaged(
                        f"item {pos} of {agent_id!r} names body {fp.hex()}, which is missing",
                        agent_id=agent_id,
                    )
                messages.append(
                    message_from_body(
                        body,
                        not_dispatched=bool(flags & writes.NOT_DISPATCHED),
                        injected_by=injected_by,
                    )
                )
                fps.append(fp.hex())
        return tuple(messages), tuple(fps)

    async def fingerprints(self, agent_id: str, ref: ListRef) -> tuple[str, ...]:
        """The fingerprints of a list reference's items, in order, without reading bodies."""
        rows = await self._fetch("SELECT agent FROM agents WHERE agent_id=?", (agent_id,))
        if not rows:
            raise StoreError(f"no agent {agent_id!r} in the store", agent_id=agent_id)
        agent = rows[0][0]
        fps: list[str] = []
        for start, end in ref.ranges:
            found = await self._fetch(
                "SELECT fp FROM items WHERE agent=? AND pos>=? AND pos<? ORDER BY pos",
                (agent, start, end),
            )
            fps.extend(row[0].hex() for row in found)
        return tuple(fps)

    # -- the durable inbox ----------------------------------------------------------------

    async def post(
        self,
        agent_id: str,
        text: str,
        *,
        message_id: str,
        now_ms: int,
        idempotency_key: str | None = None,
        sender: str | None = None,
        shared: bool = False,
        time: dict[str, Any] | None = None,
    ) -> Ack:
        """Accept a person's message durably (a ``synchronous=FULL`` commit), then acknowledge.

        ``time`` is the message's ``{now?, zone?, window?}`` (docs/time.md#the-clock-row), validated
        by the caller and kept as sent.

        The first message naming a ``sender`` makes it the conversation's owner (write-once,
        docs/host.md#ownership-and-leases); later messages from another principal are refused unless
        ``shared``. Messages without a sender are always accepted (single-user local use).

        Raises:
            InvalidValue: the text is empty or longer than 32,000 code points.
            IdempotencyConflict: the key was used before with other text.
            NotOwner: ``sender`` is not the owner; nothing is stored.
        """
        if not 1 <= len(text) <= 32_000:
            raise InvalidValue(
                f"a message must hold 1 to 32,000 code points, not {len(text)}", field="text"
            )
        async with self._transaction(full=True) as db:
            agent = await self._agent_rowid(db, agent_id)
            await self._check_owner(db, agent, agent_id, sender, shared=shared, claim=True)
            if idempotency_key is not None:
                rows = await _rows(
                    db,
                    "SELECT message_id, text, accepted_at_ms, position FROM inbox"
                    " WHERE agent=? AND idempotency_key=?",
                    (agent, idempotency_key),
                )
                if rows:
                    found_id, found_text, accepted, position = rows[0]
                    if found_text != text:
                        raise IdempotencyConflict(
                            f"idempotency key {idempotency_key!r} was used for another text",
                            message_id=found_id,
                        )
                    return Ack(
                        message_id=found_id,
                        accepted_at_ms=accepted,
                        position=position,
                        duplicate=True,
                    )
            rows = await _rows(
                db, "SELECT COALESCE(MAX(position), 0) + 1 FROM inbox WHERE agent=?", (agent,)
            )
            position = int(rows[0][0])
            await db.execute(
                "INSERT INTO inbox (message_id, agent, position, text, status, accepted_at_ms,"
                " idempotency_key, sender, time) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
                (
                    message_id,
                    agent,
                    position,
                    text,
                    now_ms,
                    idempotency_key,
                    sender,
                    None if time is None else _state_encoder.encode(time),
                ),
            )
        return Ack(message_id=message_id, accepted_at_ms=now_ms, position=position)

    async def _check_owner(
        self,
        db: aiosqlite.Connection,
        agent: int,
        agent_id: str,
        sender: str | None,
        *,
        shared: bool,
        claim: bool,
    ) -> None:
        # docs/host.md#the-owner-check: once a conversation has an owner, every message and
        # answer must name that owner; one that names nobody is refused like another's.
        if shared:
            return
        rows = await _rows(db, "SELECT owner FROM agents WHERE agent=?", (agent,))
        owner = rows[0][0] if rows else None
        if owner is None:
            if claim and sender is not None:
                await db.execute("UPDATE agents SET owner=? WHERE agent=?", (sender, agent))
            return
        if sender is None:
            raise NotOwner(
                f"agent {agent_id!r} belongs to a principal; name it (from) to write to it",
                agent_id=agent_id,
                principal=None,
            )
        if owner != sender:
            raise NotOwner(
                f"agent {agent_id!r} belongs to another principal; {sender!r} may not write to it",
                agent_id=agent_id,
                principal=sender,
            )

    async def owner(self, agent_id: str) -> str | None:
        """The conversation's owner (``identity.owner``), None until a message names one."""
        rows = await self._fetch("SELECT owner FROM agents WHERE agent_id=?", (agent_id,))
        return rows[0][0] if rows else None

    # -- check-in questions ---------------------------------------------------------------

    async def questions(
        self,
        agent_id: str,
        *,
        status: str | None = None,
        question_ids: Sequence[str] | None = None,
    ) -> list[QuestionRow]:
        """An agent's questions in asking order (optionally one status, or these ids)."""
        sql = (
            f"SELECT {_QUESTION_COLUMNS} FROM questions q JOIN agents a ON a.agent=q.agent"
            " WHERE a.agent_id=?"
        )
        params: tuple[Any, ...] = (agent_id,)
        if status is not None:
            sql += " AND q.status=?"
            params += (status,)
        if question_ids is not None:
            sql += f" AND q.question_id IN ({', '.join('?' * len(question_ids))})"
            params += tuple(question_ids)
        rows = await self._fetch(sql + " ORDER BY q.question", params)
        return [self._question(row) for row in rows]

    async def question(self, question_id: str) -> QuestionRow | None:
        """One question by id, or None."""
        rows = await self._fetch(
            f"SELECT {_QUESTION_COLUMNS} FROM questions q JOIN agents a ON a.agent=q.agent"
            " WHERE q.question_id=?",
            (question_id,),
        )
        return self._question(rows[0]) if rows else None

    def _question(self, row: Any) -> QuestionRow:
        try:
            return QuestionRow(
                question_id=row[0],
                agent_id=row[1],
                message_id=row[2],
                run_id=row[3],
                turn=row[4],
                kind=row[5],
                prompt=row[6],
                tool_call_ids=_ids_decoder.decode(row[7]),
                asked_at_ms=row[8],
                status=row[9],
                repeat=row[10],
                answer=_any_decoder.decode(row[11]) if row[11] is not None else None,
                answered_at_ms=row[12],
                answered_by=row[13],
                detail=_ledger_decoder.decode(row[14]) if row[14] is not None else None,
            )
        except msgspec.DecodeError as exc:
            raise StoreDamaged(
                f"question {row[0]!r} does not decode: {exc}", question_id=row[0]
            ) from exc

    async def close_question(
        self,
        question_id: str,
        *,
        status: str,
        now_ms: int,
        answer: Any = None,
        by: str | None = None,
        shared: bool = False,
        repeat: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> QuestionRow | None:
        """Close an open question ``answered`` (with ``answer``), ``abandoned`` or
        ``unsettled`` (a time question whose answers were refused too often; ``repeat`` and
        ``detail`` then record the last refusal), durably (a
        ``synchronous=FULL`` commit) — the answer acknowledgement of docs/loop.md#durability-modes.

        Returns:
            The closed question, or None when no question has that id.

        Raises:
            QuestionClosed: the question is no longer open; nothing changes.
            NotOwner: ``by`` is not the conversation's owner; nothing changes.
        """
        async with self._transaction(full=True) as db:
            if not await self._writable_question(db, question_id, by, shared=shared):
                return None
            await db.execute(
                "UPDATE questions SET status=?, answer=?, answered_at_ms=?, answered_by=?"
                " WHERE question_id=?",
                (
                    status,
                    None if answer is None else _state_encoder.encode(answer),
                    now_ms,
                    by,
                    question_id,
                ),
            )
            if repeat is not None or detail is not None:
                await db.execute(
                    "UPDATE questions SET repeat=COALESCE(?, repeat),"
                    " detail=COALESCE(?, detail) WHERE question_id=?",
                    (
                        repeat,
                        None if detail is None else _state_encoder.encode(detail),
                        question_id,
                    ),
                )
        return await self.question(question_id)

    async def _writable_question(
        self, db: aiosqlite.Connection, question_id: str, by: str | None, *, shared: bool
    ) -> bool:
        """Whether the question exists; raises unless it is open and ``by`` may write it."""
        rows = await _rows(
            db,
            "SELECT q.status, q.agent, a.agent_id FROM questions q"
            " JOIN agents a ON a.agent=q.agent WHERE q.question_id=?",
            (question_id,),
        )
        if not rows:
            return False
        current, agent, agent_id = rows[0]
        if current != "open":
            raise QuestionClosed(
                f"question {question_id!r} is already {current}",
                question_id=question_id,
                status=current,
            )
        await self._check_owner(db, agent, agent_id, by, shared=shared, claim=False)
        return True

    async def reask_question(
        self,
        question_id: str,
        *,
        repeat: int,
        detail: dict[str, Any],
        by: str | None = None,
        shared: bool = False,
    ) -> QuestionRow | None:
        """Keep an open question open after a refused answer: its ``repeat`` and ``detail``
        (the refusal) change, in a ``synchronous=FULL`` commit (the answer's acknowledgement).

        Raises:
            QuestionClosed: the question is no longer open.
            NotOwner: ``by`` is not the conversation's owner.
        """
        async with self._transaction(full=True) as db:
            if not await self._writable_question(db, question_id, by, shared=shared):
                return None
            await db.execute(
                "UPDATE questions SET repeat=?, detail=? WHERE question_id=?",
                (repeat, _state_encoder.encode(detail), question_id),
            )
        return await self.question(question_id)

    async def inbox(self, agent_id: str, *, status: str | None = None) -> list[InboxRow]:
        """An agent's inbox messages in position order, optionally of one status."""
        sql = (
            "SELECT i.message_id, i.position, i.text, i.status, i.accepted_at_ms, i.turn,"
            " i.idempotency_key, i.sender, i.time FROM inbox i JOIN agents a ON a.agent=i.agent"
            " WHERE a.agent_id=?"
        )
        params: tuple[Any, ...] = (agent_id,)
        if status is not None:
            sql += " AND i.status=?"
            params += (status,)
        rows = await self._fetch(sql + " ORDER BY i.position", params)
        return [
            InboxRow(
                message_id=r[0],
                agent_id=agent_id,
                position=r[1],
                text=r[2],
                status=r[3],
                accepted_at_ms=r[4],
                turn=r[5],
                idempotency_key=r[6],
                sender=r[7],
                time=_ledger_decoder.decode(r[8]) if r[8] is not None else None,
            )
            for r in rows
        ]

    async def inbox_message(self, message_id: str) -> InboxRow | None:
        """One inbox message by id."""
        rows = await self._fetch(
            "SELECT a.agent_id FROM inbox i JOIN agents a ON a.agent=i.agent WHERE i.message_id=?",
            (message_id,),
        )
        if not rows:
            return None
        for row in await self.inbox(rows[0][0]):
            if row.message_id == message_id:
                return row
        return None

    # -- the tool journal -------------------------------------------------------------------

    async def journal(self, agent_id: str, message_id: str) -> dict[str, JournalEntry]:
        """Per tool call of a turn (its inbox message): whether it started, its outcome."""
        rows = await self._fetch(
            "SELECT j.call_id, j.state, j.outcome FROM tool_journal j"
            " JOIN agents a ON a.agent=j.agent WHERE a.agent_id=? AND j.message_id=?",
            (agent_id, message_id),
        )
        started: set[str] = set()
        finished: dict[str, bytes] = {}
        for call_id, state, outcome in rows:
            if state == "started":
                started.add(call_id)
            else:
                finished[call_id] = outcome
        return {
            call_id: JournalEntry(started=call_id in started, finished=finished.get(call_id))
            for call_id in started | set(finished)
        }

    # -- reads ----------------------------------------------------------------------------

    async def _fetch(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        try:
            return list(await self._conn.execute_fetchall(sql, tuple(params)))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"a store read failed: {exc}") from exc

    async def agents(self) -> list[AgentRow]:
        """Every agent with a summary of its conversation, by id."""
        rows = await self._fetch(
            "SELECT a.agent_id, a.created_at_ms, c.state FROM agents a"
            " JOIN conversations c ON c.agent=a.agent ORDER BY a.agent_id"
        )
        result = []
        for agent_id, created, blob in rows:
            state = self._decode_state(blob, agent_id)
            result.append(
                AgentRow(
                    agent_id=agent_id,
                    created_at_ms=created,
                    turn=state.turn,
                    model_calls=state.model_calls,
                    messages=len(state.history),
                    usage_totals=state.usage_totals,
                    status=state.open_turn.status if state.open_turn else "idle",
                )
            )
        return result

    async def runs(self, agent_id: str | None = None, *, run_id: str | None = None) -> list[RunRow]:
        """Runs in start order: all, one agent's, or one by id."""
        sql = (
            "SELECT r.run_id, a.agent_id, r.turn, r.kind, r.message_id, r.status,"
            " r.started_at_ms, r.recovered_from, r.ended_at_ms, r.usage,"
            " (SELECT COUNT(*) FROM bundles b WHERE b.run=r.run), r.answer, r.error_kind, r.error"
            " FROM runs r JOIN agents a ON a.agent=r.agent"
        )
        params: tuple[Any, ...] = ()
        if agent_id is not None:
            sql += " WHERE a.agent_id=?"
            params = (agent_id,)
        elif run_id is not None:
            sql += " WHERE r.run_id=?"
            params = (run_id,)
        rows = await self._fetch(sql + " ORDER BY r.run", params)
        return [
            RunRow(
                run_id=r[0],
                agent_id=r[1],
                turn=r[2],
                kind=r[3],
                message_id=r[4],
                status=r[5],
                started_at_ms=r[6],
                recovered_from=r[7],
                ended_at_ms=r[8],
                usage=_usage_decoder.decode(r[9]) if r[9] is not None else None,
                bundles=r[10],
                answer=r[11],
                error_kind=r[12],
                error=r[13],
            )
            for r in rows
        ]

    async def bundles(self, run_id: str, *, from_seq: int = 0) -> list[StoredBundle]:
        """A run's commit log from ``from_seq``, in commit order."""
        rows = await self._fetch(
            "SELECT b.seq, b.stage, b.iteration, b.committed_at_ms, b.writes FROM bundles b"
            " JOIN runs r ON r.run=b.run WHERE r.run_id=? AND b.seq>=? ORDER BY b.seq",
            (run_id, from_seq),
        )
        result = []
        for seq, stage, iteration, committed, blob in rows:
            try:
                writes = _writes_decoder.decode(blob)
            except msgspec.DecodeError as exc:
                raise StoreDamaged(
                    f"bundle {seq} of run {run_id!r} does not decode: {exc}", run_id=run_id
                ) from exc
            result.append(
                StoredBundle(
                    run_id=run_id,
                    seq=seq,
                    stage=stage,
                    runtime_stage_id=runtime_stage_id(stage, seq),
                    iteration=iteration,
                    committed_at_ms=committed,
                    writes=writes,
                )
            )
        return result

    async def last_bundle(self, run_id: str) -> StoredBundle | None:
        """The last committed bundle of a run (what a recovery looks at), or None."""
        rows = await self._fetch(
            "SELECT MAX(b.seq) FROM bundles b JOIN runs r ON r.run=b.run WHERE r.run_id=?",
            (run_id,),
        )
        if not rows or rows[0][0] is None:
            return None
        found = await self.bundles(run_id, from_seq=int(rows[0][0]))
        return found[0] if found else None

    async def folded_spans(
        self, agent_id: str, *, summary_fingerprint: str | None = None
    ) -> list[StoredFoldedSpan]:
        """The conversation's folded spans, oldest first (or those of one summary)."""
        sql = (
            "SELECT f.span FROM folded_spans f JOIN agents a ON a.agent=f.agent WHERE a.agent_id=?"
        )
        params: tuple[Any, ...] = (agent_id,)
        if summary_fingerprint is not None:
            sql += " AND f.summary_fp=?"
            params += (writes.fp_key(summary_fingerprint),)
        rows = await self._fetch(sql + " ORDER BY f.idx", params)
        try:
            return [_span_decoder.decode(row[0]) for row in rows]
        except msgspec.DecodeError as exc:
            raise StoreDamaged(
                f"a folded span of {agent_id!r} does not decode: {exc}", agent_id=agent_id
            ) from exc

    async def ledger(
        self, agent_id: str, *, kind: str | None = None, turn: int | None = None
    ) -> list[dict[str, Any]]:
        """The conversation's ledger rows in wire form, oldest first (optionally filtered)."""
        sql = "SELECT l.row FROM ledger_rows l JOIN agents a ON a.agent=l.agent WHERE a.agent_id=?"
        params: tuple[Any, ...] = (agent_id,)
        if kind is not None:
            sql += " AND l.kind=?"
            params += (kind,)
        if turn is not None:
            sql += " AND l.turn=?"
            params += (turn,)
        rows = await self._fetch(sql + " ORDER BY l.idx", params)
        try:
            return [_ledger_decoder.decode(row[0]) for row in rows]
        except msgspec.DecodeError as exc:
            raise StoreDamaged(
                f"a ledger row of {agent_id!r} does not decode: {exc}", agent_id=agent_id
            ) from exc

    # -- clean shutdown (docs/host.md#start-up step 1, docs/host.md#graceful-shutdown step 4)
    # ------------------------------

    async def clean_shutdown(self) -> bool:
        """Whether the last host on this file recorded a clean shutdown."""
        rows = await self._fetch("SELECT value FROM meta WHERE key='clean_shutdown'")
        return bool(rows) and rows[0][0] == "1"

    async def begin_serving(self) -> None:
        """Clear the clean-shutdown marker: a host is about to write (a crash leaves it clear)."""
        async with self._transaction(full=True) as db:
            await db.execute("INSERT OR REPLACE INTO meta VALUES ('clean_shutdown', '0')")

    async def mark_clean_shutdown(self) -> None:
        """Record a clean shutdown and checkpoint the WAL into the main file."""
        async with self._transaction(full=True) as db:
            await db.execute("INSERT OR REPLACE INTO meta VALUES ('clean_shutdown', '1')")
        async with self._lock:
            with contextlib.suppress(sqlite3.Error):
                await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def quick_check(self) -> list[str]:
        """``PRAGMA quick_check``: ``['ok']`` on a healthy file (counted in ``quick_checks``)."""
        self.quick_checks += 1
        try:
            return [str(r[0]) for r in await self._fetch("PRAGMA quick_check")]
        except StoreError as exc:
            return [str(exc)]

    async def integrity_check(self) -> list[str]:
        """``PRAGMA integrity_check``: ``['ok']`` on a healthy file."""
        return [str(r[0]) for r in await self._fetch("PRAGMA integrity_check")]

    async def body_check(self) -> list[str]:
        """Fingerprints whose stored body no longer hashes to them (content addressing)."""
        rows = await self._fetch("SELECT fp, body FROM bodies")

        def check() -> list[str]:
            return [fp.hex() for fp, body in rows if hashlib.sha256(body).digest() != fp]

        return await anyio.to_thread.run_sync(check)

    # -- host leases and agent claims (docs/host.md#ownership-and-leases)
    # -------------------------------------------

    def fence_with(self, host_id: str | None, epoch: int | None = None) -> None:
        """Fence every later ``commit`` by this host's claim: it writes only while the agent is
        claimed by ``(host_id, epoch)`` and the host's lease row still carries ``epoch``, and
        raises ``LeaseLost`` otherwise. ``fence_with(None)`` removes the fence."""
        self._fence = None if host_id is None or epoch is None else (host_id, epoch)

    @property
    def fence(self) -> tuple[str, int] | None:
        """The ``(host_id, lease_epoch)`` commits are fenced by, or None."""
        return self._fence

    async def acquire_lease(
        self, host_id: str, *, now_ms: int, ttl_ms: int, only_if_expired: bool = False
    ) -> int | None:
        """Take ``host_id``'s lease with a new epoch and return it
        (docs/architecture.md#decision-16-a-restarted-host-takes-its-lease-back-at-once: at once,
        even when the row is live); with ``only_if_expired`` a live row is left alone (None)."""
        async with self._transaction() as db:
            return await leases.acquire(
                db, host_id, now_ms=now_ms, ttl_ms=ttl_ms, only_if_expired=only_if_expired
            )

    async def renew_lease(
        self, host_id: str, epoch: int, *, now_ms: int, ttl_ms: int, take_over: bool = True
    ) -> LeaseRenewal:
        """One period's transaction: extend the lease and (when it was still ours and
        ``take_over``) take over the expired leases of other hosts."""
        async with self._transaction() as db:
            if not await leases.renew(db, host_id, epoch, now_ms=now_ms, ttl_ms=ttl_ms):
                return LeaseRenewal(renewed=False)
            taken = await leases.take_over_expired(db, host_id, now_ms=now_ms) if take_over else ()
            return LeaseRenewal(renewed=True, taken_over=taken)

    async def claim_agents(
        self, agent_ids: Sequence[str], host_id: str, epoch: int, *, now_ms: int
    ) -> set[str]:
        """Claim what may be claimed of ``agent_ids`` in one transaction; returns the ids now
        claimed by ``(host_id, epoch)`` (skipping agents under another host's live lease)."""
        if not agent_ids:
            return set()
        async with self._transaction() as db:
            return await leases.claim(db, list(agent_ids), host_id, epoch, now_ms=now_ms)

    async def claim_agent(self, agent_id: str, host_id: str, epoch: int, *, now_ms: int) -> bool:
        """Claim one agent; False when another host's live lease holds it."""
        return agent_id in await self.claim_agents([agent_id], host_id, epoch, now_ms=now_ms)

    async def release_lease(self, host_id: str, epoch: int) -> bool:
        """Expire the lease and drop its claims (clean shutdown); False when already lost."""
        async with self._transaction() as db:
            return await leases.release(db, host_id, epoch)

    async def agent_claims(
        self, agent_ids: Sequence[str] | None = None, *, now_ms: int
    ) -> list[AgentClaim]:
        """The claim state of the named agents (every agent when None), by agent id."""
        try:
            return await leases.claims_of(
                self._conn, None if agent_ids is None else list(agent_ids), now_ms=now_ms
            )
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"a store read failed: {exc}") from exc

    async def agent_claim(self, agent_id: str, *, now_ms: int) -> AgentClaim | None:
        """The claim state of one agent, or None when the store does not know it."""
        found = await self.agent_claims([agent_id], now_ms=now_ms)
        return found[0] if found else None
