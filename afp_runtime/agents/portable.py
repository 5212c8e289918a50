"""The portable conversation checkpoint: export an agent's conversation as one JSON document,
and import one (``afp checkpoint`` / ``afp import``, docs/loop.md#stored-and-portable-forms).

Imports are validated strictly before anything is written: unknown top-level fields are
refused, every message is checked, every tool message must answer a call of an earlier
assistant message. ``system`` messages, calls no tool message answers, and folded spans with a
foreign (non-hex) summary fingerprint are accepted verbatim
(docs/architecture.md#decision-5-imports-accept-foreign-history-verbatim): the window's refusals
protect them, and ``folded_span_for`` never matches a foreign span. An import replaces the
conversation whole (the old one is archived), never merges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.agents.definition import AGENT_ID
from afp_runtime.errors import (
    CheckpointInvalid,
    ConversationMismatch,
    RunNotResumable,
    shown,
)
from afp_runtime.findings import validate_rows
from afp_runtime.loop import load_folded_spans, stored_span
from afp_runtime.messages import MAX_TOKEN_COUNT, Message, Usage, fingerprint
from afp_runtime.permissions import ROW_KIND as PERMISSION_ROW
from afp_runtime.permissions import validate_permission_row
from afp_runtime.records import (
    ConversationState,
    Item,
    ListRef,
    Txn,
    ledger_row_to_wire,
)
from afp_runtime.store import CheckpointStore
from afp_runtime.time import TIME_ROW_KINDS, validate_time_row
from afp_runtime.window import FoldedSpan

PORTABLE_VERSION = 1


class PortableCheckpoint(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    forbid_unknown_fields=True,
):
    """A conversation checkpoint in portable form: full messages inlined (``version`` 1)."""

    version: int
    agent_id: str
    conversation_id: str | None = None
    turn: int = 0
    history: tuple[Message, ...] = ()
    folded: tuple[FoldedSpan, ...] | msgspec.UnsetType = msgspec.UNSET
    findings_ledger: tuple[dict[str, Any], ...] | msgspec.UnsetType = msgspec.UNSET
    model_calls: int = 0
    usage_totals: Usage = msgspec.field(default_factory=Usage)
    last_run_id: str | None = None
    checkpointed_at_ms: int = 0


def check_history(history: Sequence[Message], *, path: str = "history") -> None:
    """Every tool message answers a call of the assistant message it follows, with only tool
    messages between them (as providers require, and as the window keeps a call and its results
    together: docs/window.md#turns); call ids are unique.

    Raises:
        CheckpointInvalid: naming the offending message's path.
    """
    called: set[str] = set()
    answerable: set[str] = set()  # the calls of the assistant message the tool messages follow
    for index, message in enumerate(history):
        if message.role != "tool":
            answerable = set()
        for call in message.tool_calls:
            if call.id in called:
                raise CheckpointInvalid(
                    f"{path}[{index}].toolCalls: call id {call.id!r} is used twice",
                    field=f"{path}[{index}].toolCalls",
                )
            called.add(call.id)
            answerable.add(call.id)
        if message.role == "tool" and message.tool_call_id not in answerable:
            where = (
                "whose assistant message it does not follow (only tool messages may stand "
                "between a call and its result)"
                if message.tool_call_id in called
                else "which no earlier assistant message made"
            )
            raise CheckpointInvalid(
                f"{path}[{index}] answers call {message.tool_call_id!r}, {where}",
                field=f"{path}[{index}].toolCallId",
            )


def check_spans(spans: Sequence[FoldedSpan], *, path: str = "folded") -> None:
    """Folded spans: a non-empty summary fingerprint, counts >= 1, messages iff retained."""
    for index, span in enumerate(spans):
        where = f"{path}[{index}]"
        if not span.summary_fingerprint:
            raise CheckpointInvalid(f"{where}.summaryFingerprint is empty", field=where)
        if not span.run_id:
            raise CheckpointInvalid(f"{where}.runId is empty", field=where)
        if span.iteration < 1 or span.message_count < 1:
            raise CheckpointInvalid(
                f"{where}: iteration and messageCount must be >= 1", field=where
            )
        has_messages = span.messages is not msgspec.UNSET
        if has_messages != (span.retained == "conversation"):
            raise CheckpointInvalid(
                f"{where}.messages must be present exactly when retained is 'conversation'",
                field=f"{where}.messages",
            )


def parse_checkpoint(data: bytes, *, agent_id: str) -> PortableCheckpoint:
    """Decode and strictly validate a portable checkpoint for ``agent_id``.

    Raises:
        CheckpointInvalid: malformed, a newer version, an unknown field, a bad message.
        ConversationMismatch: the checkpoint belongs to another agent.
    """
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise CheckpointInvalid(f"the checkpoint is not valid JSON: {exc}") from exc
    except RecursionError:
        raise CheckpointInvalid("the checkpoint is not valid JSON: nested too deeply") from None
    if not isinstance(raw, dict):
        raise CheckpointInvalid(f"a checkpoint must be a JSON object, not {type(raw).__name__}")
    version = raw.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise CheckpointInvalid(f"version must be the int 1, not {shown(version)}", field="version")
    if version > PORTABLE_VERSION:
        raise CheckpointInvalid(
            f"version {version} was written by a newer afp_runtime (this build reads "
            f"{PORTABLE_VERSION})",
            field="version",
        )
    if version != PORTABLE_VERSION:
        raise CheckpointInvalid(f"version must be 1, not {version}", field="version")
    owner = raw.get("agentId")
    if not isinstance(owner, str) or not AGENT_ID.match(owner):
        raise CheckpointInvalid(f"agentId must be an agent id, not {shown(owner)}", field="agentId")
    if owner != agent_id:
        raise ConversationMismatch(
            f"the checkpoint belongs to agent {owner!r}, not {agent_id!r}",
            field="agentId",
        )
    try:
        checkpoint = msgspec.convert(raw, PortableCheckpoint)
    except msgspec.ValidationError as exc:
        raise CheckpointInvalid(f"the checkpoint is invalid: {exc}") from exc
    for name in ("turn", "model_calls"):
        # Bounded like token counts (MAX_TOKEN_COUNT): exact in every JSON reader, and far
        # within what a store's 64-bit integers hold.
        if not 0 <= getattr(checkpoint, name) <= MAX_TOKEN_COUNT:
            raise CheckpointInvalid(f"{name} must be from 0 to 2**53 - 1", field=name)
    check_history(checkpoint.history)
    if checkpoint.folded is not msgspec.UNSET:
        check_spans(checkpoint.folded)
    if checkpoint.findings_ledger is not msgspec.UNSET:
        # Strict: known kinds, typed fields, valid enums, no unknown keys
        # (docs/findings.md#where-the-ledger-lives; the time rows by their own family's rules,
        # docs/time.md#row-kinds).
        validate_ledger(list(checkpoint.findings_ledger))
    return checkpoint


def validate_ledger(rows: list[Any]) -> None:
    """Strictly validate a conversation's ledger: findings, time and permission rows alike.

    Raises:
        CheckpointInvalid: a row is invalid; the error names its index and the field.
    """

    def other_family(index: int, row: Mapping[str, Any]) -> bool:
        if row.get("kind") == PERMISSION_ROW:
            validate_permission_row(row, index)
            return True
        if row.get("kind") not in TIME_ROW_KINDS:
            return False
        validate_time_row(dict(row), index)
        return True

    validate_rows(rows, checked_elsewhere=other_family)


async def export_checkpoint(store: CheckpointStore, agent_id: str) -> PortableCheckpoint:
    """The agent's conversation as a portable document, messages and spans inlined."""
    loaded = await store.load_conversation(agent_id)
    spans = await load_folded_spans(store, agent_id)
    ledger = await store.ledger(agent_id)
    state = loaded.state
    return PortableCheckpoint(
        version=PORTABLE_VERSION,
        agent_id=agent_id,
        turn=state.turn,
        history=loaded.history,
        folded=spans if spans else msgspec.UNSET,
        findings_ledger=tuple(ledger_row_to_wire(row) for row in ledger)
        if ledger
        else msgspec.UNSET,
        model_calls=state.model_calls,
        usage_totals=state.usage_totals,
        last_run_id=state.last_run_id,
        checkpointed_at_ms=state.checkpointed_at_ms,
    )


async def import_checkpoint(
    store: CheckpointStore,
    agent_id: str,
    checkpoint: PortableCheckpoint,
    *,
    now_ms: int,
    replace: bool = False,
) -> ConversationState:
    """Start ``agent_id``'s conversation from ``checkpoint``, in one transaction.

    Raises:
        RunNotResumable: the agent already has a conversation and ``replace`` is False, or it
            has an unfinished turn (finish or dismiss it first).
    """
    await store.ensure_agent(agent_id, now_ms=now_ms)
    current = await store.conversation_state(agent_id)
    assert current is not None
    if current.open_turn is not None:
        raise RunNotResumable(
            f"agent {agent_id!r} has an unfinished turn ({current.open_turn.status}); "
            "finish or dismiss it before importing",
            agent_id=agent_id,
        )
    has_conversation = current.turn > 0 or len(current.history) > 0 or current.folded_count > 0
    if has_conversation and not replace:
        raise RunNotResumable(
            f"agent {agent_id!r} already has a conversation; import with replace to archive it",
            agent_id=agent_id,
        )
    pos = current.next_pos
    items: list[Item] = []

    def append(messages: Sequence[Message]) -> ListRef:
        nonlocal pos
        start = pos
        for message in messages:
            items.append(Item(pos=pos, fingerprint=fingerprint(message), message=message))
            pos += 1
        return ListRef(ranges=((start, pos),) if pos > start else ())

    history = append(checkpoint.history)
    spans = checkpoint.folded if checkpoint.folded is not msgspec.UNSET else ()
    stored = [
        stored_span(span, append(span.messages) if span.messages is not msgspec.UNSET else None)
        for span in spans
    ]
    ledger = (
        list(checkpoint.findings_ledger) if checkpoint.findings_ledger is not msgspec.UNSET else []
    )
    state = ConversationState(
        agent_id=agent_id,
        turn=checkpoint.turn,
        ledger_count=len(ledger),
        history=history,
        next_pos=pos,
        inserted_count=current.inserted_count,
        model_calls=max(checkpoint.model_calls, current.model_calls),
        usage_totals=checkpoint.usage_totals,
        folded_count=len(stored),
        last_run_id=checkpoint.last_run_id,
        checkpointed_at_ms=now_ms,
    )
    await store.commit(
        Txn(
            agent_id=agent_id,
            items=items,
            conversation=state,
            folded=stored,
            ledger=ledger,
            replace_conversation=has_conversation,
            full=True,
        )
    )
    return state
