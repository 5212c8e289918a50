"""What every backend does the same with the rows it reads: decoding stored values into the
port's value types. The checks whose answer depends only on rows already read are in
``store/checks.py``.

A backend selects the columns each ``…_FIELDS`` tuple names, in that order, and hands the rows
over; the readers take each cell by its name, and the SQL stays the backend's own
(docs/storage.md#the-store-port).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import InvalidValue, StoreDamaged, shown
from afp_runtime.messages import Cost, Message, Usage, message_from_body
from afp_runtime.records import (
    AnyWrite,
    CommitBundle,
    ConversationState,
    Item,
    LedgerRow,
    QuestionRow,
    RunEnd,
    StoredFoldedSpan,
    ledger_row_from_wire,
    runtime_stage_id,
)
from afp_runtime.store import codec
from afp_runtime.store.values import (
    AgentRow,
    DefinitionSummary,
    InboxRow,
    JournalEntry,
    RunRow,
    StoredBundle,
)

NOT_DISPATCHED = 1
"""The ``flags`` bit of an item whose tool call was not dispatched."""

TURN_CLOSED = frozenset({"answered", "halted", "dismissed"})
"""Inbox statuses that close a turn (its tool journal rows are dropped)."""

encoder = msgspec.msgpack.Encoder()
map_decoder = msgspec.msgpack.Decoder(dict[str, Any])
_state_decoder = msgspec.msgpack.Decoder(ConversationState)
_usage_decoder = msgspec.msgpack.Decoder(Usage)
_cost_decoder = msgspec.msgpack.Decoder(Cost)
_span_decoder = msgspec.msgpack.Decoder(StoredFoldedSpan)
_ids_decoder = msgspec.msgpack.Decoder(tuple[str, ...])
_any_decoder = msgspec.msgpack.Decoder()


def decoded(decoder: msgspec.msgpack.Decoder[Any], blob: bytes, what: str, **context: Any) -> Any:
    """``blob`` decoded by ``decoder``.

    Raises:
        StoreDamaged: it does not decode (``"{what} does not decode: ..."``, with ``context``).
    """
    try:
        return decoder.decode(blob)
    except msgspec.DecodeError as exc:
        raise StoreDamaged(f"{what} does not decode: {exc}", **context) from exc


def fp_key(fingerprint: str) -> bytes:
    """Fingerprints are stored as 32 bytes; a foreign (non-hex) one as its UTF-8 text."""
    try:
        return bytes.fromhex(fingerprint) if len(fingerprint) == 64 else fingerprint.encode()
    except ValueError:
        return fingerprint.encode()


def decode_state(blob: bytes, agent_id: str) -> ConversationState:
    """A stored conversation checkpoint.

    Raises:
        StoreDamaged: it does not decode.
    """
    what = f"the conversation checkpoint of {agent_id!r}"
    state: ConversationState = decoded(_state_decoder, blob, what, agent_id=agent_id)
    return state


def resolved_range(
    agent_id: str, start: int, end: int, found: Sequence[Sequence[Any]]
) -> tuple[list[Message], list[str]]:
    """Messages and fingerprints of items ``start..end-1`` from their ``(pos, fp, flags,
    injected_by, body)`` rows (body None when missing).

    Raises:
        StoreDamaged: an item or a body is missing.
    """
    if len(found) != end - start:
        raise StoreDamaged(
            f"the history of {agent_id!r} names items {start}..{end - 1}, "
            f"but {len(found)} are stored",
            agent_id=agent_id,
        )
    messages: list[Message] = []
    fps: list[str] = []
    for pos, fp, flags, injected_by, body in found:
        if body is None:
            raise StoreDamaged(
                f"item {pos} of {agent_id!r} names body {bytes(fp).hex()}, which is missing",
                agent_id=agent_id,
            )
        try:
            messages.append(
                message_from_body(
                    bytes(body),
                    not_dispatched=bool(flags & NOT_DISPATCHED),
                    injected_by=injected_by,
                )
            )
        except (msgspec.MsgspecError, ValueError, TypeError) as exc:
            raise StoreDamaged(
                f"item {pos} of {agent_id!r}: body {bytes(fp).hex()} does not decode ({exc})",
                agent_id=agent_id,
            ) from exc
        fps.append(bytes(fp).hex())
    return messages, fps


RANGES_PER_READ = 200
"""Ranges of a list reference one item read asks for (two parameters each)."""


def ranges_read(
    columns: str, joins: str, ranges: Sequence[tuple[int, int]], mark: Callable[[int], str]
) -> tuple[str, list[int]]:
    """One read of an agent's items over ``ranges``: a ``UNION ALL`` of one primary-key range
    search per range (an ``OR`` of ranges lets SQLite scan every item of the agent instead),
    and the ranges' parameters. ``mark(n)`` spells the ``n``-th placeholder; the first is
    the agent id, which the caller passes before them."""
    params: list[int] = []
    selects: list[str] = []
    for start, end in ranges:
        n = 2 + len(params)
        selects.append(
            f"SELECT {columns} FROM items i{joins} WHERE i.agent = (SELECT agent FROM ag)"
            f" AND i.pos >= {mark(n)} AND i.pos < {mark(n + 1)}"
        )
        params += (start, end)
    agent = f"WITH ag(agent) AS (SELECT agent FROM agents WHERE agent_id = {mark(1)}) "
    return agent + " UNION ALL ".join(selects), params


def chunks(ranges: Sequence[tuple[int, int]]) -> list[Sequence[tuple[int, int]]]:
    """A reference's ranges in groups of at most ``RANGES_PER_READ``."""
    return [ranges[i : i + RANGES_PER_READ] for i in range(0, len(ranges), RANGES_PER_READ)]


def resolved_ref(
    agent_id: str, ranges: Sequence[tuple[int, int]], found: Iterable[Sequence[Any]]
) -> tuple[list[Message], list[str]]:
    """Messages and fingerprints of every range, in the reference's order, from the
    ``(pos, fp, flags, injected_by, body)`` rows one read returned in any order.

    Raises:
        StoreDamaged: an item or a body is missing.
    """
    by_pos = {row[0]: row for row in found}
    messages: list[Message] = []
    fps: list[str] = []
    for start, end in ranges:
        rows = [by_pos[pos] for pos in range(start, end) if pos in by_pos]
        got, got_fps = resolved_range(agent_id, start, end, rows)
        messages += got
        fps += got_fps
    return messages, fps


def ref_fingerprints(
    ranges: Sequence[tuple[int, int]], found: Iterable[Sequence[Any]]
) -> list[str]:
    """Fingerprints of every stored item of the ranges, in the reference's order, from the
    ``(pos, fp)`` rows one read returned in any order."""
    by_pos = {row[0]: row[1] for row in found}
    return [bytes(by_pos[pos]).hex() for s, e in ranges for pos in range(s, e) if pos in by_pos]


def agent_row(
    agent_id: str, created_at_ms: int, blob: bytes, profile: bytes | None = None
) -> AgentRow:
    """An agent's summary from its creation time, stored checkpoint and definition summary."""
    state = decode_state(blob, agent_id)
    return AgentRow(
        agent_id=agent_id,
        created_at_ms=created_at_ms,
        turn=state.turn,
        model_calls=state.model_calls,
        messages=len(state.history),
        usage_totals=state.usage_totals,
        status=state.open_turn.status if state.open_turn else "idle",
        definition=decode_profile(profile),
    )


def encode_profile(profile: DefinitionSummary) -> bytes:
    """The ``agents.profile`` cell of a definition summary (JSON; docs/storage.md#the-schema)."""
    return msgspec.json.encode(profile)


def decode_profile(cell: bytes | None) -> DefinitionSummary | None:
    """The definition summary of an ``agents.profile`` cell; None when there is none, and for
    one that does not decode: a summary is shown, never relied on, so it costs no read."""
    if cell is None:
        return None
    try:
        return msgspec.json.decode(bytes(cell), type=DefinitionSummary)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def named(fields: tuple[str, ...], row: Sequence[Any]) -> dict[str, Any]:
    """A row's cells by the names of the columns it was selected with."""
    return dict(zip(fields, row, strict=True))


INBOX_FIELDS = (
    "message_id",
    "position",
    "text",
    "status",
    "accepted_at_ms",
    "turn",
    "idempotency_key",
    "sender",
    "time",
)
"""The inbox columns ``inbox_row`` reads, in the order a backend selects them."""


def inbox_row(agent_id: str, r: Sequence[Any]) -> InboxRow:
    """An inbox message from a row of ``INBOX_FIELDS``."""
    cells = named(INBOX_FIELDS, r)
    time = cells.pop("time")
    return InboxRow(
        agent_id=agent_id, time=map_decoder.decode(time) if time is not None else None, **cells
    )


def journal_entries(rows: Iterable[Sequence[Any]]) -> dict[str, JournalEntry]:
    """Per tool call, from ``(call_id, state, outcome)`` rows: whether it started, its outcome."""
    started: set[str] = set()
    finished: dict[str, bytes | None] = {}
    for call_id, state, outcome in rows:
        if state == "started":
            started.add(call_id)
        else:
            finished[call_id] = None if outcome is None else bytes(outcome)
    return {
        call_id: JournalEntry(started=call_id in started, finished=finished.get(call_id))
        for call_id in started | set(finished)
    }


QUESTION_FIELDS = (
    "question_id",
    "agent_id",
    "message_id",
    "run_id",
    "turn",
    "kind",
    "prompt",
    "tool_call_ids",
    "asked_at_ms",
    "status",
    "repeat",
    "answer",
    "answered_at_ms",
    "answered_by",
    "detail",
)
"""The question columns ``question_row`` reads (``agent_id`` from the agents table)."""


def question_row(row: Sequence[Any]) -> QuestionRow:
    """A question from a row of ``QUESTION_FIELDS``.

    Raises:
        StoreDamaged: a stored value does not decode.
    """
    cells = named(QUESTION_FIELDS, row)
    answer, detail = cells.pop("answer"), cells.pop("detail")
    try:
        return QuestionRow(
            **cells | {"tool_call_ids": _ids_decoder.decode(cells["tool_call_ids"])},
            answer=_any_decoder.decode(answer) if answer is not None else None,
            detail=map_decoder.decode(detail) if detail is not None else None,
        )
    except msgspec.DecodeError as exc:
        question_id = cells["question_id"]
        raise StoreDamaged(
            f"question {question_id!r} does not decode: {exc}", question_id=question_id
        ) from exc


RUN_FIELDS = (
    "run_id",
    "agent_id",
    "turn",
    "kind",
    "message_id",
    "status",
    "started_at_ms",
    "recovered_from",
    "ended_at_ms",
    "usage",
    "bundles",
    "answer",
    "error_kind",
    "error",
    "cost",
)
"""The run columns ``run_row`` reads (``agent_id`` from the agents table, ``bundles`` a count)."""


def run_row(r: Sequence[Any]) -> RunRow:
    """A run from a row of ``RUN_FIELDS``.

    Raises:
        StoreDamaged: its usage or cost cell does not decode (naming the run).
    """
    cells = named(RUN_FIELDS, r)
    run_id, usage, cost = cells["run_id"], cells.pop("usage"), cells.pop("cost")
    where = {"run_id": run_id}
    return RunRow(
        **cells,
        usage=None
        if usage is None
        else _cell(_usage_decoder, usage, f"the usage of run {run_id!r}", where),
        cost=None
        if cost is None
        else _cell(_cost_decoder, cost, f"the cost of run {run_id!r}", where),
    )


def _cell(decoder: msgspec.msgpack.Decoder[Any], blob: object, what: str, where: Any) -> Any:
    """A stored blob decoded; one stored as anything but bytes is damage as much as one that
    does not decode."""
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise StoreDamaged(f"{what} is stored as {type(blob).__name__}, not bytes", **where)
    return decoded(decoder, bytes(blob), what, **where)


def stored_bundles(run_id: str, rows: Iterable[Sequence[Any]]) -> list[StoredBundle]:
    """A run's bundles from ``(seq, stage, iteration, committed_at_ms, writes)`` rows.

    Raises:
        StoreDamaged: a bundle's writes do not decode.
    """
    return [
        StoredBundle(
            run_id=run_id,
            seq=seq,
            stage=stage,
            runtime_stage_id=runtime_stage_id(stage, seq),
            iteration=iteration,
            committed_at_ms=committed,
            writes=decode_writes(blob, seq, run_id),
        )
        for seq, stage, iteration, committed, blob in rows
    ]


def decode_writes(blob: bytes, seq: int, run_id: str) -> list[AnyWrite]:
    """The typed writes of bundle ``seq`` of a run, from any stored form
    (docs/storage.md#the-writes-codec, docs/storage.md#typed-bundle-writes).

    Raises:
        StoreDamaged: they do not decode, or a write is not one of ``WRITE_TYPES`` (an unknown
            key, a value not its key's type: the message names it).
    """
    what = f"bundle {seq} of run {run_id!r}"
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise StoreDamaged(f"{what} is stored as {type(blob).__name__}, not bytes", run_id=run_id)
    try:
        return list(codec.decode(bytes(blob), _WRITES))
    except msgspec.ValidationError as exc:
        # Worded as ``writes_from_wire`` words it.
        message = f"not a list of commit writes: {exc}"
        raise StoreDamaged(f"{what} does not decode: {message}", run_id=run_id) from exc
    except msgspec.DecodeError as exc:
        raise StoreDamaged(f"{what} does not decode: {exc}", run_id=run_id) from exc


_WRITES = tuple[AnyWrite, ...]


def folded_spans(agent_id: str, rows: Iterable[Sequence[Any]]) -> list[StoredFoldedSpan]:
    """Folded spans from ``(span,)`` rows.

    Raises:
        StoreDamaged: a span does not decode.
    """
    what = f"a folded span of {agent_id!r}"
    return [decoded(_span_decoder, row[0], what, agent_id=agent_id) for row in rows]


def ledger_rows(agent_id: str, rows: Iterable[Sequence[Any]]) -> list[LedgerRow]:
    """Typed ledger rows from ``(idx, row)`` rows (docs/storage.md#typed-ledger-rows).

    Raises:
        StoreDamaged: a row does not decode, or does not decode into its kind's class (names
            the agent, the row's position and kind, and the field).
    """
    found: list[LedgerRow] = []
    for idx, blob in rows:
        what = f"ledger row {idx} of {agent_id!r}"
        raw = decoded(map_decoder, blob, what, agent_id=agent_id)
        try:
            found.append(ledger_row_from_wire(raw))
        except InvalidValue as exc:
            raise StoreDamaged(
                f"{what} (kind {shown(raw.get('kind'))}) does not decode: {exc.message}",
                agent_id=agent_id,
                field=exc.context.get("field"),
            ) from exc
    return found


# -- what backends write: the values of one row, in the order of the table's columns ----------


def question_values(agent: int, q: QuestionRow) -> tuple[Any, ...]:
    """A ``questions`` row asked of ``agent``: ``(question_id, agent, message_id, run_id, turn,
    kind, prompt, tool_call_ids, asked_at_ms, status, repeat, detail)``."""
    return (
        q.question_id,
        agent,
        q.message_id,
        q.run_id,
        q.turn,
        q.kind,
        q.prompt,
        encoder.encode(q.tool_call_ids),
        q.asked_at_ms,
        q.status,
        q.repeat,
        None if q.detail is None else encoder.encode(q.detail),
    )


def bundle_writes(bundle: CommitBundle) -> bytes:
    """A bundle's stored ``writes`` (docs/storage.md#the-writes-codec)."""
    return codec.encode(bundle.writes)


def item_values(agent: int, item: Item) -> tuple[Any, ...]:
    """An ``items`` row: ``(agent, pos, fp, flags, injected_by)``."""
    return (
        agent,
        item.pos,
        bytes.fromhex(item.fingerprint),
        NOT_DISPATCHED if item.message.not_dispatched else 0,
        item.message.injected_by,
    )


def run_end_values(end: RunEnd) -> tuple[Any, ...]:
    """``(status, ended_at_ms, usage, answer, error_kind, error, cost, run_id)`` of an ended
    run."""
    return (
        end.status,
        end.ended_at_ms,
        encoder.encode(end.usage),
        end.answer,
        end.error_kind,
        end.error,
        encoder.encode(end.cost) if end.cost is not None else None,
        end.run_id,
    )
