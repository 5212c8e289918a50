"""Served views: exactly what one model call was sent, rebuilt from its run's commit log.

Pure functions over the ``RunLog`` read interface (docs/served.md#the-runlog-interface,
docs/served.md#the-served-view). A view reads every per-request key "as the call read it"
(``value_at(key, anchorSeq)``), takes the receipt from its anchor bundle, and names what it cannot
prove in its ``gaps`` (docs/served.md#gaps).

Readings settled here (docs/served.md leaves them open or does not cover them):

* Immutability (docs/served.md#a-view-is-a-value): every list is a tuple; JSON-object payloads (a
  schema's
  ``inputSchema``, a tool call's ``args``) are ``types.MappingProxyType``, recursively, with
  JSON arrays inside them as tuples. Writing into one raises ``TypeError``. Encode views with
  ``encode_served`` (or pass ``served_enc_hook`` to msgspec); ``thaw_message`` and
  ``ServedTool.as_schema`` give plain values back for digests and encoders.
* ``messages.asSent`` holds ``Message`` values carrying the markers of their references.
* A substitution's ``message`` is a full message mapping; a mapping that holds a
  ``fingerprint`` and no ``role`` is read as a reference and resolved from the body store.
  A substitution whose index lies outside the list, or whose message cannot be read, is a
  damaged record: it is ignored, no gap excuses it, and the digest clauses fail.
* An element of the system pieces, tool schemas or request-only lines that arrives as a bare
  reference (a ``fingerprint`` without its text) lost its stored text: it is left out and
  reported by ``body-missing``. Any other malformed element is damage: left out, no gap.
* A stored body that is present but cannot be decoded into a message is damage, not absence:
  the message is left out without a gap, so the digest clauses fail and a check given the log
  names its index.
* A committed ``history`` that is neither unknown nor a list is damage: ``asSent`` is empty and
  no gap excuses it.
* Folding (the one-pass ``served_views`` and ``MemoryRunLog``): ``set`` replaces, ``append``
  extends (onto an unknown or non-list value it starts from an empty list), ``delete`` makes the
  value unknown again.
* A stored receipt is accepted when it is a mapping (or a Struct) with an ``int`` ``version`` in
  ``1..RECEIPT_VERSION``, an ``int`` ``basis.epoch``, and it decodes into ``Receipt``; extra keys
  are ignored (the stored record is never touched). A ``receipt`` write holding anything else is
  ``receipt-shape-rejected``; no write at all (or a legacy ``call-model`` anchor) is
  ``receipt-missing``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeVar

import msgspec

from afp_runtime.messages import Message, ToolSchema
from afp_runtime.records import (
    UNKNOWN,
    Anchor,
    CommitBundle,
    ForcedToolWrite,
    HistoryWrite,
    IterationWrite,
    MessageRef,
    ReceiptWrite,
    RequestOnlyWrite,
    RunLog,
    ServedToolsWrite,
    SubstitutionsWrite,
    SystemPiecesWrite,
    WrapUpAskedWrite,
)
from afp_runtime.served.bodies import Bodies, as_sent_slots
from afp_runtime.served.gaps import (
    ReceiptCause,
    ServedGap,
    body_missing_fields,
    make_gap,
)
from afp_runtime.served.locate import (
    EpochLocation,
    Locator,
    check_epoch,
    find,
    last_set,
    number_of,
    readable_int,
)
from afp_runtime.served.payloads import freeze, freeze_message, thaw
from afp_runtime.served.receipt import RECEIPT_VERSION, Receipt

_T = TypeVar("_T")

# The keys a view reads at its call.
VIEW_KEYS: Final = (
    "history",
    "substitutions",
    "systemPieces",
    "requestOnly",
    "servedTools",
    "wrapUpAsked",
    "forcedTool",
)
# The writes a pass over the log folds: those of ``VIEW_KEYS`` and the iteration.
_FOLD_TYPES: Final = (
    HistoryWrite,
    SubstitutionsWrite,
    SystemPiecesWrite,
    RequestOnlyWrite,
    ServedToolsWrite,
    WrapUpAskedWrite,
    ForcedToolWrite,
    IterationWrite,
)


# --- the view -------------------------------------------------------------------------------


class ServedBasis(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Model, provider and run of the call, copied from its accepted receipt."""

    model: str
    provider: str
    run_id: str


class ServedPiece(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One contributing system piece: its text, slot and source."""

    text: str
    slot: str
    source: str


class ServedSystem(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The joined system text and the contributing pieces in wire order."""

    text: str
    pieces: tuple[ServedPiece, ...]


class RequestOnlyLine(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A line sent only in this one request (never part of the conversation)."""

    role: str
    text: str
    reason: str

    def as_message(self) -> Message:
        """The line as the message it was sent as: ``{role, content: text}``."""
        return Message(role=self.role, content=self.text)  # type: ignore[arg-type]


class ServedMessages(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The conversation as sent (substitutions applied) and the request-only lines after it."""

    as_sent: tuple[Message, ...]
    request_only: tuple[RequestOnlyLine, ...]


class ServedTool(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One served tool schema; ``input_schema`` is a read-only mapping."""

    name: str
    description: str
    input_schema: Any

    def as_schema(self) -> ToolSchema:
        """A plain ``ToolSchema`` with the same content."""
        return ToolSchema(
            name=self.name, description=self.description, input_schema=thaw(self.input_schema)
        )


class ServedTools(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Served tool names and schemas in order; ``forced`` and ``withheld`` absent when unset."""

    names: tuple[str, ...]
    schemas: tuple[ServedTool, ...]
    forced: str | None = None
    withheld: Literal["wrap-up"] | None = None


class ServedView(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What one model call was sent, rebuilt from the log (docs/served.md#view-fields).

    Attributes:
        epoch: the located number of the call.
        call_runtime_stage_id: the id of the call's ``call-model`` execution; never absent.
        basis: model, provider and run id from the accepted receipt; absent without one.
        system: the joined system text and its contributing pieces.
        messages: the as-sent conversation and the request-only lines.
        tools: served names and schemas, forced tool, withheld marker.
        gaps: what this view cannot prove; never empty.
    """

    epoch: int
    call_runtime_stage_id: str
    basis: ServedBasis | None = None
    system: ServedSystem
    messages: ServedMessages
    tools: ServedTools
    gaps: tuple[ServedGap, ...]


# --- reading receipts -----------------------------------------------------------------------


def receipt_write(bundle: CommitBundle | None) -> Any:
    """The value of the anchor bundle's ``receipt`` write, or ``UNKNOWN`` without one."""
    if bundle is None or bundle.stage != "receipt":
        return UNKNOWN
    return last_set(bundle, ReceiptWrite, UNKNOWN)


def accept_receipt(value: Any) -> tuple[Receipt | None, ReceiptCause | None]:
    """Accept a stored receipt as stored, or say why not
    (docs/served.md#reading-a-stored-receipt)."""
    if value is UNKNOWN:
        return None, "receipt-missing"
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if not isinstance(value, Mapping):
        return None, "receipt-shape-rejected"
    version = readable_int(value.get("version"))
    if version is None or not 1 <= version <= RECEIPT_VERSION:
        return None, "receipt-shape-rejected"
    try:  # strict: ``basis.epoch`` (like every int) refuses a bool
        return msgspec.convert(value, Receipt), None
    except (msgspec.ValidationError, ValueError):
        return None, "receipt-shape-rejected"


# --- composing a view -----------------------------------------------------------------------


class _Lost:
    """Collects the containers that lost elements and the fingerprints that went missing."""

    def __init__(self) -> None:
        self.containers: dict[str, None] = {}
        self.refs: list[str] = []

    def add(self, container: str, fp: str | None) -> None:
        self.containers[container] = None
        if fp is not None:
            self.refs.append(fp)


def _bare_ref(item: Mapping[str, Any], text_key: str) -> str | None:
    """The fingerprint of an element that arrived as a reference without its text."""
    fp = item.get("fingerprint")
    if isinstance(fp, str) and not isinstance(item.get(text_key), str):
        return fp
    return None


def _elements(value: Any, lost: _Lost, container: str, text_key: str, into: type[_T]) -> list[_T]:
    """The elements of a stored list that decode into ``into``. One that arrived as a bare
    reference (its text lost) is reported to ``lost`` instead; any other element that does not
    decode is damage, skipped."""
    decoded: list[_T] = []
    for item in value if isinstance(value, list | tuple) else ():
        if not isinstance(item, Mapping):
            continue
        fp = _bare_ref(item, text_key)
        if fp is not None:
            lost.add(container, fp)
            continue
        try:
            decoded.append(msgspec.convert(item, into))
        except (msgspec.ValidationError, ValueError):
            continue
    return decoded


def _as_sent(history: Any, substitutions: Any, bodies: Bodies, lost: _Lost) -> tuple[Message, ...]:
    if not isinstance(history, list | tuple):
        return ()
    sent: list[Message] = []
    for slot in as_sent_slots(history, substitutions):
        if isinstance(slot, Message):
            sent.append(freeze_message(slot))
        elif isinstance(slot, MessageRef):
            found = bodies.resolve(slot)
            if found is None:
                lost.add("messages", slot.fingerprint)
            elif isinstance(found, Message):
                sent.append(found)
    return tuple(sent)


def compose(
    *,
    epoch: int,
    call_runtime_stage_id: str,
    has_base: bool,
    values: Mapping[str, Any],
    receipt_value: Any,
    bodies: Bodies,
) -> ServedView:
    """Build one view from the values its call read and its anchor's receipt
    (docs/served.md#rebuild-order)."""
    receipt, cause = accept_receipt(receipt_value)
    lost = _Lost()
    pieces = tuple(
        piece
        for piece in _elements(values["systemPieces"], lost, "pieces", "text", ServedPiece)
        if piece.text
    )
    history = values["history"]
    subs = values["substitutions"]
    as_sent = _as_sent(history, subs, bodies, lost)
    request_only = tuple(
        _elements(values["requestOnly"], lost, "requestOnly", "text", RequestOnlyLine)
    )
    tools = values["servedTools"]
    if isinstance(tools, list | tuple):  # a log may hand back the ToolSchema structs the loop wrote
        tools = [msgspec.to_builtins(t) if isinstance(t, msgspec.Struct) else t for t in tools]
    schemas = tuple(
        ServedTool(
            name=schema.name,
            description=schema.description,
            input_schema=freeze(schema.input_schema),
        )
        for schema in _elements(tools, lost, "schemas", "name", ToolSchema)
    )
    names = tuple(schema.name for schema in schemas)
    forced_tool = values["forcedTool"]
    forced = forced_tool if forced_tool and forced_tool in names else None
    withheld: Literal["wrap-up"] | None = "wrap-up" if values["wrapUpAsked"] is True else None

    gaps: list[ServedGap] = []
    if not has_base:
        gaps.append(make_gap("no-fold-base"))
    if history is UNKNOWN:
        gaps.append(make_gap("no-conversation-on-record"))
    if lost.containers:
        gaps.append(
            make_gap("body-missing", fields=body_missing_fields(lost.containers), refs=lost.refs)
        )
    if receipt is None:
        gaps.append(make_gap("no-receipt-on-record", cause=cause))
    else:
        if receipt.wire is None:
            gaps.append(make_gap("no-wire-digest"))
        elif not receipt.wire.deterministic:
            gaps.append(make_gap("wire-not-reproducible"))
        gaps.append(make_gap("provider-defaults"))

    return ServedView(
        epoch=epoch,
        call_runtime_stage_id=call_runtime_stage_id,
        basis=(
            None
            if receipt is None
            else msgspec.convert(receipt.basis, ServedBasis, from_attributes=True)
        ),
        system=ServedSystem(text="\n\n".join(p.text for p in pieces), pieces=pieces),
        messages=ServedMessages(as_sent=as_sent, request_only=request_only),
        tools=ServedTools(names=names, schemas=schemas, forced=forced, withheld=withheld),
        gaps=tuple(gaps),
    )


def _view(log: RunLog, anchor_seq: int, epoch: int, call_runtime_stage_id: str) -> ServedView:
    return compose(
        epoch=epoch,
        call_runtime_stage_id=call_runtime_stage_id,
        has_base=log.has_base,
        values={key: log.value_at(key, anchor_seq) for key in VIEW_KEYS},
        receipt_value=receipt_write(log.bundle(anchor_seq)),
        bodies=Bodies(log),
    )


def view_of(location: EpochLocation, log: RunLog) -> ServedView:
    """The served view of a located epoch: one bundle read and one ``value_at`` per key."""
    return _view(log, location.anchor_seq, location.epoch, location.call_runtime_stage_id)


def served_at(log: RunLog, k: int) -> ServedView | None:
    """The view of epoch ``k``; None only when no epoch numbered ``k`` exists.

    Raises:
        TypeError: ``k`` is not an ``int`` (or is a ``bool``); the message names ``epoch``.
    """
    hit = find(log, check_epoch(k))
    if hit is None:
        return None
    found, number = hit
    return _view(log, found.anchor.seq, number, found.call_runtime_stage_id)


def receipt_at(log: RunLog, k: int) -> Receipt | None:
    """The accepted receipt of epoch ``k``; None when the epoch or an acceptable receipt lacks.

    Raises:
        TypeError: ``k`` is not an ``int`` (or is a ``bool``); the message names ``epoch``.
    """
    hit = find(log, check_epoch(k))
    if hit is None:
        return None
    receipt, _ = accept_receipt(receipt_write(log.bundle(hit[0].anchor.seq)))
    return receipt


def apply_write(fold: dict[str, Any], key: str, verb: str, value: Any) -> None:
    """Fold one write of ``key`` into ``fold`` (arrays kept as lists)."""
    if verb == "set":
        fold[key] = list(value) if isinstance(value, list | tuple) else value
    elif verb == "append":
        base = fold[key]
        if not isinstance(base, list):
            base = fold[key] = []
        base.extend(value if isinstance(value, list | tuple) else (value,))
    else:
        fold[key] = UNKNOWN


def served_views(log: RunLog) -> tuple[ServedView, ...]:
    """Every epoch's view in commit order, in one pass over the log.

    Each bundle is read once and each body resolved at most once; equal element-wise to
    ``served_at`` over ``epochs`` when epoch numbers are unique.
    """
    fold: dict[str, Any] = dict.fromkeys((*VIEW_KEYS, "iteration"), UNKNOWN)
    locator = Locator()
    bodies = Bodies(log)
    views: list[ServedView] = []
    for bundle in log.bundles(0):
        for write in bundle.writes:
            if isinstance(write, _FOLD_TYPES):
                apply_write(fold, write.key, write.verb, write.value)
        if bundle.stage not in ("receipt", "call-model"):
            continue
        found = locator.feed(Anchor(seq=bundle.seq, stage=bundle.stage, iteration=bundle.iteration))
        if found is None:
            continue
        views.append(
            compose(
                epoch=number_of(fold["iteration"], found.position),
                call_runtime_stage_id=found.call_runtime_stage_id,
                has_base=log.has_base,
                values=fold,
                receipt_value=receipt_write(bundle),
                bodies=bodies,
            )
        )
    return tuple(views)
