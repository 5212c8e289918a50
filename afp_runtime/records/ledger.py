"""Ledger rows and their registry (docs/storage.md#typed-ledger-rows): every row class a layer
files in the conversation's ledger, reachable from here by its ``kind``, and the one decoder of
their wire form.

A row is a member of a msgspec tagged union on ``kind`` (the tag field the store has always
held), so a typed row encodes to the bytes its untyped map had. The classes live with the
layer that owns their schema — findings rows in ``findings``, time rows in ``time`` — because
they are built from that layer's values; each layer registers its classes here when it is
imported (``register_ledger_row``). ``records`` is below every layer, so the store and every
reader can reach the registry without an upward arrow. The permission row has no values of
its own and lives here.

``LEDGER_KINDS`` declares every kind written anywhere and the layer that owns it; a test holds
the registry equal to it once every layer is imported. A row whose kind is not registered in
this process — a kind of a later build, or of a layer not imported — decodes as an
``UnknownRow`` carrying its wire map, key for key, and renders back to the same map: it is
never dropped and never an error. A row of a registered kind that does not decode into its
class is damaged (``InvalidValue``; the store names it ``StoreDamaged``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias, Union, cast

import msgspec

from afp_runtime.errors import InvalidValue, decoded_path, shown

LEDGER_KINDS: Final[Mapping[str, str]] = {
    "basis": "findings",
    "standing": "findings",
    "conflict": "findings",
    "clock": "time",
    "time-reading": "time",
    "time-answer": "time",
    "call-window": "time",
    "call": "time",
    "permission": "permissions",
    "schedule": "agents",
    "recall": "agents",
}
"""Every ledger row kind a layer files, and the layer that owns its class
(docs/storage.md#typed-ledger-rows)."""


class UnknownRow(msgspec.Struct, frozen=True, kw_only=True):
    """A row of a kind no class is registered for, carried key for key.

    Attributes:
        kind: the row's ``kind``.
        fields: every other key of the row, as decoded JSON values, in their order. Never
            mutated.
    """

    kind: str
    fields: Mapping[str, Any]


class LedgerRowBase(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    forbid_unknown_fields=True,
    tag_field="kind",
):
    """Base of every registered ledger row class: tagged on ``kind``, camelCase keys, absent keys
    omitted (never ``null``), unknown keys refused. A subclass says ``frozen=True, kw_only=True``
    again and names its ``tag``."""


PermissionDecision = Literal["allow", "deny", "ask", "halt"]


class PermissionRow(LedgerRowBase, frozen=True, kw_only=True, tag="permission"):
    """A permission decision on one call (docs/permissions.md#decision-rows).

    Attributes:
        turn: the turn.
        iteration: the iteration of the call's batch.
        tool_call_id: the call (wire ``toolCallId``).
        tool_name: its tool (wire ``toolName``).
        decision: ``allow``, ``deny``, ``ask`` or ``halt``.
        rule: the rule or gate that decided.
        reason: the words shown with a refusal, a question or a halt, when any.
    """

    turn: int
    iteration: int
    tool_call_id: str
    tool_name: str
    decision: PermissionDecision
    rule: str
    reason: str | None = None


LedgerRow: TypeAlias = msgspec.Struct
"""A decoded ledger row: an instance of a registered class, or an ``UnknownRow``."""

_types: dict[str, type[msgspec.Struct]] = {}
_union: list[Any] = []  # the tagged union of the registered classes, rebuilt on registration


def register_ledger_row(row_type: type[msgspec.Struct]) -> None:
    """Register the class of one ledger row kind (its tag). Registering it again is a no-op.

    Raises:
        TypeError: ``row_type`` is not a Struct tagged on ``kind`` with a declared kind.
        ValueError: its kind is already registered to another class.
    """
    config = getattr(row_type, "__struct_config__", None)
    tag = config.tag if config is not None else None
    if config is None or config.tag_field != "kind" or tag not in LEDGER_KINDS:
        raise TypeError(
            f"a ledger row class is a msgspec.Struct tagged on 'kind' with one of "
            f"{', '.join(LEDGER_KINDS)}, not {row_type!r}"
        )
    kind = str(tag)
    known = _types.get(kind)
    if known is not None and known is not row_type:
        raise ValueError(f"ledger row kind {kind!r} is already registered to {known.__name__}")
    _types[kind] = row_type
    _union[:] = [Union[tuple(_types.values())]]  # noqa: UP007 - built from a runtime tuple


def ledger_row_types() -> Mapping[str, type[msgspec.Struct]]:
    """The registered row class of each kind, in registration order."""
    return dict(_types)


register_ledger_row(PermissionRow)


# --- wire form ----------------------------------------------------------------------------------

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode


def ledger_row_from_wire(raw: object) -> LedgerRow:
    """Decode one stored row (a JSON object): a registered kind to its class, any other kind to
    an ``UnknownRow`` keeping every key.

    Raises:
        InvalidValue: the row is not an object with a string ``kind``, or a registered kind
            does not decode into its class (the message names the field).
    """
    kind = raw.get("kind") if isinstance(raw, Mapping) else None
    if not isinstance(raw, Mapping) or not isinstance(kind, str):
        raise InvalidValue(
            f"a ledger row is an object with a string kind, not {shown(raw)}", field="kind"
        )
    if kind not in _types:
        return UnknownRow(kind=kind, fields={k: v for k, v in raw.items() if k != "kind"})
    try:
        return cast("LedgerRow", msgspec.convert(raw, type=_union[0]))
    except msgspec.ValidationError as exc:
        path, detail = decoded_path(exc)
        field = path or "(row)"
        raise InvalidValue(f"a {kind} row is invalid at {field}: {detail}", field=field) from None


def ledger_rows_from_wire(raw: Iterable[object]) -> tuple[LedgerRow, ...]:
    """Decode stored rows in order (see ``ledger_row_from_wire``)."""
    return tuple(ledger_row_from_wire(item) for item in raw)


def ledger_row_kind(row: LedgerRow) -> str:
    """The row's ``kind``: its class's tag, or an unknown row's own."""
    if isinstance(row, UnknownRow):
        return row.kind
    return str(row.__struct_config__.tag)


def ledger_row_to_wire(row: LedgerRow) -> dict[str, Any]:
    """One row as its stored JSON object (camelCase keys, absent keys omitted)."""
    if isinstance(row, UnknownRow):
        return {"kind": row.kind, **row.fields}
    # Through MessagePack, so arrays come back as lists: what the stored bytes decode to.
    return cast("dict[str, Any]", _unpack(_pack(row)))


def encode_ledger_row(row: LedgerRow) -> bytes:
    """One row's stored bytes: the MessagePack of its wire map (docs/storage.md#the-schema)."""
    # Through the map: MessagePack gives a Struct a wider map header than the same map.
    return _pack(ledger_row_to_wire(row))
