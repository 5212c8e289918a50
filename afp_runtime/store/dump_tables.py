"""How both backends read and write an ``AgentDump`` (docs/storage.md#moving-between-stores):
the SQL of each table (``?`` placeholders; Postgres numbers them), the dump built and checked
from the rows read, the parameters of the rows written, and the refusal of ids already taken.

Written once, as ``indexed_runlog`` is: the backends differ only in how they run a statement.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import CopyRefused, StoreDamaged, StoreError
from afp_runtime.messages import Usage
from afp_runtime.store import rows as common
from afp_runtime.store.dump import (
    AgentDump,
    ArchiveRecord,
    BodyRecord,
    BundleRecord,
    FoldRecord,
    InboxRecord,
    ItemRecord,
    JournalRecord,
    KeyRecord,
    LedgerRecord,
    QuestionRecord,
    RunRecord,
    ScheduleRecord,
)


class Table(msgspec.Struct, frozen=True):
    """One table a dump carries: its name, the dump field and record type, and the order its
    rows are kept in. ``by_run`` tables name their run (``run_id`` first); the others their
    agent. Rows ordered by text are sorted here by ``text_order`` (code points), since the
    backends' collations may sort text differently."""

    name: str
    record: type[msgspec.Struct]
    order: str
    by_run: bool = False
    text_order: tuple[str, ...] = ()

    def ordered(self, records: Iterable[Any]) -> tuple[Any, ...]:
        """``records`` in the order every backend keeps them in a dump."""
        if not self.text_order:
            return tuple(records)
        return tuple(sorted(records, key=lambda r: tuple(getattr(r, f) for f in self.text_order)))

    @property
    def fields(self) -> tuple[str, ...]:
        """The record's fields: the table's column names, in row order."""
        return self.record.__struct_fields__

    def select(self) -> str:
        """The statement reading one agent's rows (``?``: the agent's row id)."""
        if self.by_run:
            columns = ", ".join(["r.run_id", *(f't."{f}"' for f in self.fields[1:])])
            return (
                f"SELECT {columns} FROM {self.name} t JOIN runs r ON r.run = t.run"
                f" WHERE r.agent = ? ORDER BY r.run, {self.order}"
            )
        columns = ", ".join(f't."{f}"' for f in self.fields)
        return f"SELECT {columns} FROM {self.name} t WHERE t.agent = ? ORDER BY {self.order}"

    def insert(self) -> str:
        """The statement writing one row: the agent's (or run's) row id, then the record."""
        owner = "run" if self.by_run else "agent"
        fields = self.fields[1:] if self.by_run else self.fields
        columns = ", ".join([owner, *(f'"{f}"' for f in fields)])
        marks = ", ".join("?" * (len(fields) + 1))
        return f"INSERT INTO {self.name} ({columns}) VALUES ({marks})"

    def values(self, record: Any, owner: int) -> tuple[Any, ...]:
        """The parameters of ``insert`` for one record (``owner``: the agent or run row id)."""
        row = tuple(getattr(record, f) for f in self.fields)
        return (owner, *row[1:]) if self.by_run else (owner, *row)


# In insertion order: a run before what names it. Row ids (inbox, questions) are assigned in
# this order, so listings keep the source's order.
TABLES: tuple[Table, ...] = (
    Table("items", ItemRecord, "t.pos"),
    Table("runs", RunRecord, "t.run"),
    Table("bundles", BundleRecord, "t.seq", by_run=True),
    Table("key_index", KeyRecord, "t.seq", by_run=True, text_order=("run_id", "key", "seq")),
    Table("inbox", InboxRecord, "t.position"),
    Table(
        "tool_journal",
        JournalRecord,
        "t.message_id",
        text_order=("message_id", "call_id", "state"),
    ),
    Table("folded_spans", FoldRecord, "t.idx"),
    Table("ledger_rows", LedgerRecord, "t.idx"),
    Table("questions", QuestionRecord, "t.question"),
    Table("archived_conversations", ArchiveRecord, "t.archived_at_ms"),
    Table("schedules", ScheduleRecord, "t.name", text_order=("name",)),
)

_BODIES = Table("bodies", BodyRecord, "t.fp")  # read by BODIES_SELECT, written by each backend

AGENT_SELECT = (
    "SELECT a.agent, a.agent_id, a.created_at_ms, a.owner, c.state, a.profile FROM agents a"
    " JOIN conversations c ON c.agent = a.agent WHERE a.agent_id = ?"
)
BODIES_SELECT = (
    "SELECT i.fp, b.body FROM (SELECT DISTINCT fp FROM items WHERE agent = ?) i"
    " LEFT JOIN bodies b ON b.fp = i.fp ORDER BY i.fp"
)
AGENT_INSERT = "INSERT INTO agents (agent_id, created_at_ms, owner, profile) VALUES (?, ?, ?, ?)"
STATE_INSERT = "INSERT INTO conversations (agent, state) VALUES (?, ?)"
RUN_IDS_SELECT = "SELECT run, run_id FROM runs WHERE agent = ?"

_usage_decoder = msgspec.msgpack.Decoder(Usage)


def build_dump(
    agent_row: Sequence[Any],
    table_rows: Mapping[str, Iterable[Sequence[Any]]],
    body_rows: Iterable[Sequence[Any]],
) -> AgentDump:
    """An agent's dump from the rows its store read (``agent_row`` of ``AGENT_SELECT`` without
    the row id; each table's rows of ``Table.select``; ``BODIES_SELECT``), checked as
    ``check_dump`` does. CPU-bound: run it off the event loop.

    Raises:
        StoreDamaged: a column holds a value of the wrong type, an item names a missing body,
            or a stored value does not read back (each names the table or value and the agent).
    """
    agent_id = str(agent_row[0])
    try:
        _, created_at_ms, owner, state, profile = msgspec.convert(
            list(agent_row),
            tuple[str, int, str | None, bytes, bytes | None],
            builtin_types=(bytes,),
        )
    except msgspec.ValidationError as exc:
        raise StoreDamaged(
            f"the agents row of {agent_id!r} is not valid: {exc}", agent_id=agent_id
        ) from exc
    records = {
        t.name: t.ordered(_record(t, agent_id, r) for r in table_rows[t.name]) for t in TABLES
    }
    bodies = []
    for fp, body in body_rows:
        if body is None:
            raise StoreDamaged(
                f"an item of agent {agent_id!r} names body {bytes(fp).hex()}, which is missing",
                agent_id=agent_id,
            )
        bodies.append(_record(_BODIES, agent_id, (fp, body)))
    dump = AgentDump(
        agent_id=agent_id,
        created_at_ms=created_at_ms,
        owner=owner,
        state=state,
        profile=profile,
        bodies=tuple(bodies),
        **records,
    )
    check_dump(dump)
    return dump


def _record(table: Table, agent_id: str, row: Sequence[Any]) -> Any:
    try:
        return msgspec.convert(list(row), table.record, builtin_types=(bytes,))
    except msgspec.ValidationError as exc:
        raise StoreDamaged(
            f"a {table.name} row of agent {agent_id!r} is not valid: {exc}", agent_id=agent_id
        ) from exc


def params_of(table: Table, dump: AgentDump, agent: int, runs: Mapping[str, int]) -> list[Any]:
    """The parameters of ``table.insert()`` for every row of ``dump`` in that table, the
    destination's row ids of the agent and of its runs (by run id) put in.

    Raises:
        StoreError: a row names a run the dump does not hold.
    """
    records = getattr(dump, table.name)
    if not table.by_run:
        return [table.values(r, agent) for r in records]
    unknown = sorted({r.run_id for r in records} - set(runs))
    if unknown:
        raise StoreError(
            f"the {table.name} rows of agent {dump.agent_id!r} name runs it does not hold: "
            f"{', '.join(unknown)}",
            agent_id=dump.agent_id,
        )
    return [table.values(r, runs[r.run_id]) for r in records]


UNIQUE_IDS: tuple[tuple[str, str, str], ...] = (
    ("runs", "run_id", "run"),
    ("inbox", "message_id", "inbox message"),
    ("questions", "question_id", "question"),
)
"""``(table, column, what)``: the text ids unique across a whole store, besides agent ids."""


def ids_in(dump: AgentDump, table: str) -> list[str]:
    """The ids of ``UNIQUE_IDS``'s ``table`` that ``dump`` would write."""
    column = next(c for t, c, _ in UNIQUE_IDS if t == table)
    return [getattr(r, column) for r in getattr(dump, table)]


def refuse_taken(agent_id: str, taken: Mapping[str, Sequence[str]]) -> None:
    """Raise ``CopyRefused`` when the destination holds the agent (``taken["agents"]``) or any
    run, inbox message or question id of its dump (by table of ``UNIQUE_IDS``).

    Raises:
        CopyRefused: names the agent and up to five of the ids taken.
    """
    if taken.get("agents"):
        raise CopyRefused(
            f"agent {agent_id!r} is in the destination already; nothing was copied",
            agent_id=agent_id,
        )
    for table, _, what in UNIQUE_IDS:
        found = sorted(taken.get(table, ()))
        if found:
            raise CopyRefused(
                f"the destination holds {what} ids of agent {agent_id!r} already "
                f"({', '.join(found[:5])}{' ...' if len(found) > 5 else ''}); nothing was copied",
                agent_id=agent_id,
            )


def check_dump(dump: AgentDump) -> None:
    """Check that every stored value of ``dump`` reads back: the checkpoint, each body against
    its fingerprint, each bundle's writes, span, ledger row, question and usage. CPU-bound
    (hashes every body): callers run it off the event loop.

    Raises:
        StoreDamaged: the first value that does not, named.
    """
    agent_id = dump.agent_id
    state = common.decode_state(dump.state, agent_id)
    if state.agent_id != agent_id:
        raise StoreDamaged(
            f"the checkpoint of {agent_id!r} names agent {state.agent_id!r}", agent_id=agent_id
        )
    stored = {item.pos for item in dump.items}
    missing = [pos for pos in state.history.positions() if pos not in stored]
    if missing:
        raise StoreDamaged(
            f"the history of {agent_id!r} names item {missing[0]}, which is not stored"
            f" ({len(missing)} missing)",
            agent_id=agent_id,
        )
    for body in dump.bodies:
        if hashlib.sha256(body.body).digest() != body.fp:
            raise StoreDamaged(
                f"body {body.fp.hex()} of agent {agent_id!r} no longer matches its fingerprint",
                agent_id=agent_id,
            )
    for run_id in {b.run_id for b in dump.bundles}:
        common.stored_bundles(
            run_id,
            (
                (b.seq, b.stage, b.iteration, b.committed_at_ms, b.writes)
                for b in dump.bundles
                if b.run_id == run_id
            ),
        )
    common.folded_spans(agent_id, ((f.span,) for f in dump.folded_spans))
    common.ledger_rows(agent_id, ((r.idx, r.row) for r in dump.ledger_rows))
    for q in dump.questions:
        common.question_row((q.question_id, agent_id, *msgspec.structs.astuple(q)[1:]))
    for archive in dump.archived_conversations:
        common.decode_state(archive.state, agent_id)
    _check_blobs(dump)


def _check_blobs(dump: AgentDump) -> None:
    """Usage of runs and the ``time`` of inbox messages decode."""
    of = f"of agent {dump.agent_id!r}"
    for run in dump.runs:
        if run.usage is not None:
            what = f"the usage of run {run.run_id!r} {of}"
            common.decoded(_usage_decoder, run.usage, what, agent_id=dump.agent_id)
    for message in dump.inbox:
        if message.time is not None:
            what = f"the time of inbox message {message.message_id!r} {of}"
            common.decoded(common.map_decoder, message.time, what, agent_id=dump.agent_id)
