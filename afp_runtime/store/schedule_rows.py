"""Schedule rows as both backends read and write them (docs/storage.md#the-schema): the columns
in one order, a row read back, and the inbox message a due instant becomes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from afp_runtime.store.values import ScheduleEntry, ScheduleRow

SCHEDULE_FIELDS = (
    "name",
    "definition",
    "source",
    "anchor_ms",
    "last_due_ms",
    "next_due_ms",
    "paused",
    "revision",
    "delivered",
    "created_at_ms",
    "updated_at_ms",
)

_json = msgspec.json.Encoder()


def sender(name: str) -> str:
    """The sender of a schedule's inbox messages."""
    return f"schedule:{name}"


def idempotency_key(name: str, due_ms: int) -> str:
    """The key of the message one due instant becomes: a second delivery of the same instant
    is the same message (``@`` is outside the keys a client may send, so none collides)."""
    return f"schedule:{name}@{due_ms}"


def definition_bytes(entry: ScheduleEntry) -> bytes:
    """The definition as stored: its wire form, JSON."""
    return _json.encode(entry.definition)


def schedule_row(agent_id: str, found: Sequence[Any]) -> ScheduleRow:
    """A row of ``SCHEDULE_FIELDS`` read back. A definition that does not read as a JSON
    object comes back empty: the app layer then refuses it by name instead of a read failing."""
    values = dict(zip(SCHEDULE_FIELDS, found, strict=True))
    try:
        definition = msgspec.json.decode(bytes(values["definition"]))
    except msgspec.DecodeError:
        definition = {}
    values["definition"] = definition if isinstance(definition, dict) else {}
    values["paused"] = bool(values["paused"])
    return ScheduleRow(agent_id=agent_id, **values)
