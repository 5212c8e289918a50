"""An agent's rows as the port moves them between stores (docs/storage.md#moving-between-stores).

``Store.export_agent`` answers an ``AgentDump``: every row of one agent, table by table, with
stored values kept as the bytes they are stored as (checkpoints, commit-log writes, spans, ledger
rows are MessagePack; bodies canonical JSON), so the copy serves byte-identical views.
``Store.import_agents`` writes dumps and answers ``CopyCounts``. Rows name agents and runs by
their text ids, never by a backend's integer row ids, which each store assigns itself.

A row record is ``array_like``: its form is the row, its fields the table's columns in order
(``dump_tables`` reads and writes them with the same SQL on both backends).
"""

from __future__ import annotations

import msgspec


class ItemRecord(msgspec.Struct, frozen=True, array_like=True):
    """An ``items`` row: one entry of the agent's item log."""

    pos: int
    fp: bytes
    flags: int
    injected_by: str | None


class BodyRecord(msgspec.Struct, frozen=True, array_like=True):
    """A ``bodies`` row an item of the agent names (bodies are shared; stored once)."""

    fp: bytes
    body: bytes


class RunRecord(msgspec.Struct, frozen=True, array_like=True):
    """A ``runs`` row."""

    run_id: str
    turn: int
    kind: str
    message_id: str
    recovered_from: str | None
    status: str
    started_at_ms: int
    ended_at_ms: int | None
    usage: bytes | None
    answer: str | None
    error_kind: str | None
    error: str | None


class BundleRecord(msgspec.Struct, frozen=True, array_like=True):
    """A ``bundles`` row: one committed stage execution of a run."""

    run_id: str
    seq: int
    stage: str
    iteration: int
    committed_at_ms: int
    writes: bytes


class KeyRecord(msgspec.Struct, frozen=True, array_like=True):
    """A ``key_index`` row: a key a bundle wrote, and how."""

    run_id: str
    key: str
    seq: int
    verb: str


class InboxRecord(msgspec.Struct, frozen=True, array_like=True):
    """An ``inbox`` row."""

    message_id: str
    position: int
    text: str
    status: str
    accepted_at_ms: int
    idempotency_key: str | None
    sender: str | None
    turn: int | None
    time: bytes | None


class JournalRecord(msgspec.Struct, frozen=True, array_like=True):
    """A ``tool_journal`` row (only turns still open have any)."""

    message_id: str
    call_id: str
    state: str
    run_id: str
    outcome: bytes | None


class FoldRecord(msgspec.Struct, frozen=True, array_like=True):
    """A ``folded_spans`` row."""

    idx: int
    summary_fp: bytes
    span: bytes


class LedgerRecord(msgspec.Struct, frozen=True, array_like=True):
    """A ``ledger_rows`` row (findings and time rows)."""

    idx: int
    kind: str
    turn: int | None
    row: bytes


class QuestionRecord(msgspec.Struct, frozen=True, array_like=True):
    """A ``questions`` row, open or closed."""

    question_id: str
    message_id: str
    run_id: str
    turn: int
    kind: str
    prompt: str
    tool_call_ids: bytes
    asked_at_ms: int
    status: str
    repeat: int
    answer: bytes | None
    answered_at_ms: int | None
    answered_by: str | None
    detail: bytes | None


class ArchiveRecord(msgspec.Struct, frozen=True, array_like=True):
    """An ``archived_conversations`` row: a conversation an import replaced."""

    archived_at_ms: int
    state: bytes
    folded: bytes
    ledger: bytes | None


class ScheduleRecord(msgspec.Struct, frozen=True, array_like=True):
    """A ``schedules`` row: a schedule with the marks of its delivery, so a copy goes on
    where the source left off (docs/host.md#schedules)."""

    name: str
    definition: bytes
    source: str
    anchor_ms: int
    last_due_ms: int
    next_due_ms: int | None
    paused: int
    revision: int
    delivered: int
    created_at_ms: int
    updated_at_ms: int


class AgentDump(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Every row of one agent, read in one snapshot of its store.

    Attributes:
        agent_id: the agent.
        created_at_ms: when the source store first saw it.
        owner: the conversation's owner, None until a message named one.
        state: the conversation checkpoint as stored (MessagePack of ``ConversationState``).
        profile: the definition summary as stored (JSON of ``DefinitionSummary``), None when
            the agent was never registered with one.
        bodies: the bodies its items name, once each.

    Every other field holds the rows of the table it names, in the order the store keeps them.
    Claims and leases are not part of a dump: a copy is unclaimed.
    """

    agent_id: str
    created_at_ms: int
    owner: str | None
    state: bytes
    items: tuple[ItemRecord, ...] = ()
    bodies: tuple[BodyRecord, ...] = ()
    runs: tuple[RunRecord, ...] = ()
    bundles: tuple[BundleRecord, ...] = ()
    key_index: tuple[KeyRecord, ...] = ()
    inbox: tuple[InboxRecord, ...] = ()
    tool_journal: tuple[JournalRecord, ...] = ()
    folded_spans: tuple[FoldRecord, ...] = ()
    ledger_rows: tuple[LedgerRecord, ...] = ()
    questions: tuple[QuestionRecord, ...] = ()
    archived_conversations: tuple[ArchiveRecord, ...] = ()
    schedules: tuple[ScheduleRecord, ...] = ()
    profile: bytes | None = None


class CopyCounts(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What an import wrote.

    Attributes:
        bodies: distinct message bodies the copied agents name.
        new_bodies: of those, the ones the destination did not hold yet (wire ``newBodies``).
    """

    agents: int = 0
    runs: int = 0
    bundles: int = 0
    bodies: int = 0
    new_bodies: int = 0
    items: int = 0
    inbox: int = 0
    questions: int = 0
    ledger_rows: int = 0
    folded_spans: int = 0


def tallied(counts: CopyCounts, dump: AgentDump, *, bodies: int, new_bodies: int) -> CopyCounts:
    """``counts`` with ``dump`` written: ``bodies`` of its bodies not counted before, of which
    ``new_bodies`` the destination lacked."""
    added = {"agents": 1, "bodies": bodies, "new_bodies": new_bodies}
    for name in CopyCounts.__struct_fields__:
        if name not in added:  # the rows of the table it names
            added[name] = len(getattr(dump, name))
    return CopyCounts(**{name: getattr(counts, name) + n for name, n in added.items()})
