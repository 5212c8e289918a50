"""What every backend does the same with the rows it reads: decoding stored values into the
port's value types, and the checks whose answer depends only on rows already read (the owner
check, the fence check, idempotency).

A backend selects columns in the order each function names and hands the rows over; the SQL
stays the backend's own (docs/storage.md#the-store-port).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import IdempotencyConflict, InvalidValue, LeaseLost, NotOwner, StoreDamaged
from afp_runtime.messages import Cost, Message, Usage, message_from_body
from afp_runtime.records import (
    AnyWrite,
    CommitBundle,
    ConversationState,
    Item,
    QuestionRow,
    RunEnd,
    StoredFoldedSpan,
    runtime_stage_id,
    writes_from_wire,
)
from afp_runtime.store import codec
from afp_runtime.store.values import Ack, AgentRow, InboxRow, JournalEntry, RunRow, StoredBundle

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


def check_text(text: object) -> None:
    """Raise ``InvalidValue`` unless an inbox message is text of 1 to 32,000 code points that
    UTF-8 can hold (no lone surrogate)."""
    if not isinstance(text, str):
        raise InvalidValue(f"a message must be text, not {type(text).__name__}", field="text")
    if not 1 <= len(text) <= 32_000:
        raise InvalidValue(
            f"a message must hold 1 to 32,000 code points, not {len(text)}", field="text"
        )
    if "\x00" in text:
        raise InvalidValue(
            f"a message holds U+0000 (NUL) at {text.index(chr(0))}, which a message may not hold",
            field="text",
        )
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidValue(
                f"a message holds a surrogate code point at {exc.start}, which UTF-8 cannot hold",
                field="text",
            ) from None


_IDEMPOTENCY_KEY = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def check_sender(sender: str | None) -> None:
    """Raise ``InvalidValue`` unless a sending principal is None or 1 to 128 code points: an
    empty or overlong one could own a conversation that no API client can then name."""
    if sender is not None and not (
        isinstance(sender, str) and 1 <= len(sender) <= 128 and "\x00" not in sender
    ):
        raise InvalidValue(
            "from (the sending principal) must be 1 to 128 code points, none of them U+0000",
            field="from",
        )


def check_idempotency_key(key: str | None) -> None:
    """Raise ``InvalidValue`` unless an idempotency key is None or 1 to 128 characters of
    ``[A-Za-z0-9._:-]`` (docs/api.md#request-bodies-and-field-limits)."""
    if key is not None and not (isinstance(key, str) and _IDEMPOTENCY_KEY.fullmatch(key)):
        raise InvalidValue(
            "an idempotency key must be 1 to 128 characters of [A-Za-z0-9._:-]",
            field="idempotencyKey",
        )


def check_owner(owner: str | None, agent_id: str, sender: str | None) -> None:
    """docs/host.md#the-owner-check: once a conversation has an ``owner``, every message and
    answer must name that owner; one that names nobody is refused like another's."""
    if owner is None:
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


def duplicate_ack(row: Sequence[Any], text: str, key: str) -> Ack:
    """The original ack of a message posted again under ``key``, from its ``(message_id, text,
    accepted_at_ms, position)`` row.

    Raises:
        IdempotencyConflict: the key was used for another text.
    """
    found_id, found_text, accepted, position = row
    if found_text != text:
        raise IdempotencyConflict(
            f"idempotency key {key!r} was used for another text", message_id=found_id
        )
    return Ack(message_id=found_id, accepted_at_ms=accepted, position=position, duplicate=True)


def check_fence(row: Sequence[Any] | None, agent_id: str, host_id: str, epoch: int) -> None:
    """Raise ``LeaseLost`` unless the ``(claim_host, claim_epoch, lease_epoch)`` row read in the
    commit's transaction says the agent is claimed by ``(host_id, epoch)`` and the host's lease
    row still carries ``epoch``. Expiry is not checked: a lease nobody took over is still this
    host's to renew."""
    if row is not None and row[0] == host_id and row[1] == epoch and row[2] == epoch:
        return
    raise LeaseLost(
        f"host {host_id!r} (lease epoch {epoch}) no longer holds agent {agent_id!r}: "
        f"{_fence_problem(row, epoch)}; nothing was written",
        agent_id=agent_id,
        host_id=host_id,
        lease_epoch=epoch,
    )


def _fence_problem(row: Sequence[Any] | None, epoch: int) -> str:
    if row is None:
        return "the agent is not in the store"
    if row[0] is None:
        return "the agent is not claimed"
    if row[2] != epoch:
        return f"the host's lease epoch is now {row[2]}"
    return f"the agent is claimed by {row[0]!r} under lease epoch {row[1]}"


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


def agent_row(agent_id: str, created_at_ms: int, blob: bytes) -> AgentRow:
    """An agent's summary from its creation time and stored checkpoint."""
    state = decode_state(blob, agent_id)
    return AgentRow(
        agent_id=agent_id,
        created_at_ms=created_at_ms,
        turn=state.turn,
        model_calls=state.model_calls,
        messages=len(state.history),
        usage_totals=state.usage_totals,
        status=state.open_turn.status if state.open_turn else "idle",
    )


INBOX_COLUMNS = (
    "i.message_id, i.position, i.text, i.status, i.accepted_at_ms, i.turn,"
    " i.idempotency_key, i.sender, i.time"
)


def inbox_row(agent_id: str, r: Sequence[Any]) -> InboxRow:
    """An inbox message from a row of ``INBOX_COLUMNS``."""
    return InboxRow(
        message_id=r[0],
        agent_id=agent_id,
        position=r[1],
        text=r[2],
        status=r[3],
        accepted_at_ms=r[4],
        turn=r[5],
        idempotency_key=r[6],
        sender=r[7],
        time=map_decoder.decode(r[8]) if r[8] is not None else None,
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


QUESTION_COLUMNS = (
    "q.question_id, a.agent_id, q.message_id, q.run_id, q.turn, q.kind, q.prompt,"
    " q.tool_call_ids, q.asked_at_ms, q.status, q.repeat, q.answer, q.answered_at_ms,"
    " q.answered_by, q.detail"
)


def question_row(row: Sequence[Any]) -> QuestionRow:
    """A question from a row of ``QUESTION_COLUMNS``.

    Raises:
        StoreDamaged: a stored value does not decode.
    """
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
            detail=map_decoder.decode(row[14]) if row[14] is not None else None,
        )
    except msgspec.DecodeError as exc:
        raise StoreDamaged(
            f"question {row[0]!r} does not decode: {exc}", question_id=row[0]
        ) from exc


def run_row(r: Sequence[Any]) -> RunRow:
    """A run from a row of ``(run_id, agent_id, turn, kind, message_id, status,
    started_at_ms, recovered_from, ended_at_ms, usage, bundles, answer, error_kind, error,
    cost)`` (each backend's ``RUN_COLUMNS``).

    Raises:
        StoreDamaged: its usage or cost cell does not decode (naming the run).
    """
    where = {"run_id": r[0]}
    usage = (
        None if r[9] is None else _cell(_usage_decoder, r[9], f"the usage of run {r[0]!r}", where)
    )
    cost = (
        None if r[14] is None else _cell(_cost_decoder, r[14], f"the cost of run {r[0]!r}", where)
    )
    return RunRow(
        run_id=r[0],
        agent_id=r[1],
        turn=r[2],
        kind=r[3],
        message_id=r[4],
        status=r[5],
        started_at_ms=r[6],
        recovered_from=r[7],
        ended_at_ms=r[8],
        usage=usage,
        bundles=r[10],
        answer=r[11],
        error_kind=r[12],
        error=r[13],
        cost=cost,
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
    """The typed writes of bundle ``seq`` of a run, from either stored form
    (docs/storage.md#compact-bundle-writes, docs/storage.md#typed-bundle-writes).

    Raises:
        StoreDamaged: they do not decode, or a write is not one of ``WRITE_TYPES`` (an unknown
            key, a value not its key's type: the message names it).
    """
    what = f"bundle {seq} of run {run_id!r}"
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise StoreDamaged(f"{what} is stored as {type(blob).__name__}, not bytes", run_id=run_id)
    try:
        found = codec.decode(bytes(blob))
    except msgspec.DecodeError as exc:
        raise StoreDamaged(f"{what} does not decode: {exc}", run_id=run_id) from exc
    try:
        return list(writes_from_wire(found))
    except InvalidValue as exc:
        raise StoreDamaged(f"{what} does not decode: {exc.message}", run_id=run_id) from exc


def folded_spans(agent_id: str, rows: Iterable[Sequence[Any]]) -> list[StoredFoldedSpan]:
    """Folded spans from ``(span,)`` rows.

    Raises:
        StoreDamaged: a span does not decode.
    """
    what = f"a folded span of {agent_id!r}"
    return [decoded(_span_decoder, row[0], what, agent_id=agent_id) for row in rows]


def ledger_rows(agent_id: str, rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """Ledger rows in wire form from ``(row,)`` rows.

    Raises:
        StoreDamaged: a row does not decode.
    """
    what = f"a ledger row of {agent_id!r}"
    return [decoded(map_decoder, row[0], what, agent_id=agent_id) for row in rows]


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
    """A bundle's stored ``writes``: the compact form (docs/storage.md#compact-bundle-writes)."""
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
