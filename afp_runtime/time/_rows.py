"""The time layer's ledger rows and their strict validation (docs/time.md#callwindowrow-fields,
docs/time.md#the-call-row, docs/time.md#row-kinds).

Rows of three kinds are defined here: ``call-window`` (one decision per call,
docs/time.md#callwindowrow-fields), ``time-answer`` (an accepted answer,
docs/time.md#recording-an-accepted-answer) and ``call`` (a dispatch, with its drift,
docs/time.md#the-call-row). ``validate_time_row`` checks these and the
``clock`` and ``time-reading`` rows strictly, as import, migration and ``afp doctor`` require:
unknown keys, keys that belong to another ``how``, wrong types, ``null`` values and non-strict
instants are rejected with ``CheckpointInvalid`` naming the row's index and the field.

Readings settled here:

* The row structs (tagged on ``kind``, ``forbid_unknown_fields``) also check the rules between
  their fields when built in Python (``InvalidValue`` naming the field), so a decision can never
  produce a row that strict validation would reject.
* Optional fields are ``None`` (or ``False`` for the ``true``-only flags) in Python and absent on
  the wire. An ordinary decode accepts ``null`` or ``false`` for them and reads them as absent;
  strict validation rejects both, at any depth of any time row.
* ``dispatchedAt`` must be written canonically in UTC on a whole millisecond (``Z``); a clock
  row's ``now`` must be written canonically in its own offset; every other instant must be strict.
* ``clock`` and ``time-reading`` rows are filed by the reading side (``clock.py``,
  ``reading_rows.py``). Strict validation decodes every time row with ``strict=True`` into the
  tagged union of the five row structs, so each struct's own checks are the word on its shape;
  an error names the path msgspec reports, followed by the field the failing struct names. On
  top it refuses only what a decode reads as absent (``null``, a ``false`` flag) and empty
  tool, argument and reader names, candidate zones, and look-backs that are not durations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, get_args

import msgspec

from afp_runtime.errors import CheckpointInvalid, InvalidValue, decoded_path, shown
from afp_runtime.records import register_ledger_row
from afp_runtime.time._clock import ClockRow, check_counts
from afp_runtime.time._durations import FACT_UNITS, is_duration
from afp_runtime.time._facts import TIME_REFUSALS, TimeRefusal
from afp_runtime.time._instants import NS_PER_MS, Instant, parse_instant, spell_instant
from afp_runtime.time._ranges import PersonWindow, TimeRange
from afp_runtime.time._reading_rows import TimeReadingRow
from afp_runtime.time._values import SAFE_INTEGER
from afp_runtime.time._windows import AnswerHow
from afp_runtime.time._wire import Wire
from afp_runtime.time._zones import is_zone_name

CallHow = Literal["filled", "bound", "model-chosen", "model", "unread", "not-filled", "refused"]
"""What the decision did with a call (docs/time.md#outcomes)."""

CALL_HOWS: Final[tuple[str, ...]] = get_args(CallHow)

BoundBy = Literal["quote", "value"]
"""How a sent window was tied to the person's: its declared quote, or identical instants."""

NotFilledWhy = Literal["no-window", "several-mentions", "open-reading"]
"""Why nothing was written into a call that omitted its period (docs/time.md#fill-path)."""

DriftOutcome = Literal["shifted", "redrawn"]
"""What dispatching later than ``now`` did to a look-back call (docs/time.md#drift)."""

TimeRowKind = Literal["clock", "time-reading", "time-answer", "call-window", "call"]
TIME_ROW_KINDS: Final[tuple[str, ...]] = get_args(TimeRowKind)
"""Every ledger row kind the time layer files (docs/time.md#row-kinds)."""

_COMMON: Final = frozenset({"kind", "turn", "iteration", "toolCallId", "toolName", "how"})
_TRUE_ONLY: Final = ("rounded", "trimmedByTool", "partlyBeyondRetention")
_ALLOWED: Final[dict[str, frozenset[str]]] = {
    # A filled row may carry every true-only flag.
    "filled": frozenset({"form", "asked", "person", "sent", "differs", *_TRUE_ONLY}),
    "bound": frozenset({"form", "asked", "person", "by", "partlyBeyondRetention"}),
    "model-chosen": frozenset({"form", "asked", "person", "partlyBeyondRetention"}),
    "model": frozenset({"form", "asked", "partlyBeyondRetention"}),
    "unread": frozenset(),
    "not-filled": frozenset({"why", "assumed"}),
    "refused": frozenset({"form", "asked", "person", "refused", "argument"}),
}
_MANDATORY: Final[dict[str, tuple[str, ...]]] = {
    "filled": ("form", "asked", "person"),
    "bound": ("form", "asked", "person", "by"),
    "model-chosen": ("form", "asked"),
    "model": ("form", "asked"),
    "unread": (),
    "not-filled": ("why",),
    "refused": ("refused",),
}


class _TimeRow(Wire, frozen=True, kw_only=True, tag_field="kind"):
    """Base of the time rows: tagged on ``kind``; absent keys omitted, never ``null``."""


class Differs(Wire, frozen=True, kw_only=True):
    """What a widened fill reads beyond the person's window (docs/time.md#callwindowrow-fields).

    Attributes:
        extra: one or two UTC ranges, earliest first.
    """

    extra: tuple[TimeRange, ...]

    def __post_init__(self) -> None:
        if not 1 <= len(self.extra) <= 2:
            raise InvalidValue(
                "differs.extra holds one or two ranges", field="extra", value=shown(self.extra)
            )


def call_window_problem(present: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first per-``how`` rule a ``call-window`` row breaks, as (wire field, what is wrong).

    Args:
        present: the row's present keys (wire names) and their values.
    """
    how = present.get("how")
    if how not in CALL_HOWS:
        return "how", f"must be one of {', '.join(CALL_HOWS)}"
    allowed = _COMMON | _ALLOWED[how]
    for key in present:
        if key not in allowed:
            return key, f"is not allowed on a {how} row"
    for key in _MANDATORY[how]:
        if key not in present:
            return key, f"is mandatory on a {how} row"
    if how == "filled":
        widened = [k for k in ("differs", "trimmedByTool") if k in present]
        if "sent" in present and len(widened) != 1:
            return "sent", "comes with exactly one of differs and trimmedByTool"
        if "sent" not in present and widened:
            return widened[0], "needs sent"
    if how == "not-filled" and "assumed" in present and present.get("why") == "open-reading":
        return "assumed", "only comes with no-window or several-mentions"
    if how == "refused":
        if present.get("refused") == "dst-gap":
            for key in ("argument", "form"):
                if key not in present:
                    return key, "is mandatory on a dst-gap refusal"
            if "asked" in present:
                return "asked", "is not allowed on a dst-gap refusal"
        elif "argument" in present:
            return "argument", "only comes with a dst-gap refusal"
        elif "asked" not in present:
            for key in ("form", "person"):
                if key in present:
                    return key, "needs asked on a refusal"
    return None


class CallWindowRow(_TimeRow, frozen=True, kw_only=True, tag="call-window"):
    """One decision about a call's period, filed before dispatch
    (docs/time.md#callwindowrow-fields).

    Attributes:
        turn: the turn, >= 1.
        iteration: the iteration of the call's batch, >= 1.
        tool_call_id: the call (wire ``toolCallId``).
        tool_name: its tool (wire ``toolName``).
        how: ``filled``, ``bound``, ``model-chosen``, ``model``, ``unread``, ``not-filled`` or
            ``refused``.
        form: the position of the form written (``filled``) or read (``bound``,
            ``model-chosen``, ``model``; ``refused`` when identified).
        asked: ``filled``: the person's window as written; ``bound``/``model-chosen``/``model``:
            the range read back (UTC, or now's offset for a span ending now); ``refused``: the
            window assessed.
        person: the person's window the call was filled from or tied to.
        by: ``bound`` only: ``quote`` or ``value``.
        rounded: ``filled``: an epoch-second bound or a look-back length was rounded outward.
        why: ``not-filled`` only: ``no-window``, ``several-mentions`` or ``open-reading``.
        assumed: ``not-filled`` with ``no-window``/``several-mentions``: the duration the
            missing-period rule supplied.
        sent: a widened fill: the range the tool will read, UTC.
        differs: a widened fill, tool not filtering: ``{extra}``.
        trimmed_by_tool: a widened fill, tool declares ``filtersToAsked`` (wire
            ``trimmedByTool``).
        partly_beyond_retention: the window begins before the data's retention (wire
            ``partlyBeyondRetention``).
        refused: ``refused`` only: the code.
        argument: a ``dst-gap`` refusal: the argument at fault.

    Raises:
        InvalidValue: a key is absent, present or mistyped against the rules of
        docs/time.md#callwindowrow-fields (names the
            wire field).
    """

    turn: int
    iteration: int
    tool_call_id: str
    tool_name: str
    how: CallHow
    form: int | None = None
    asked: TimeRange | None = None
    person: PersonWindow | None = None
    by: BoundBy | None = None
    rounded: bool = False
    why: NotFilledWhy | None = None
    assumed: str | None = None
    sent: TimeRange | None = None
    differs: Differs | None = None
    trimmed_by_tool: bool = False
    partly_beyond_retention: bool = False
    refused: TimeRefusal | None = None
    argument: str | None = None

    def __post_init__(self) -> None:
        check_counts(self.turn, self.iteration)
        if self.form is not None and (_bad_int(self.form) or self.form < 0):
            raise InvalidValue("form must be an int >= 0", field="form", value=shown(self.form))
        if self.assumed is not None and not is_duration(self.assumed, FACT_UNITS):
            raise InvalidValue(
                "assumed must be a duration", field="assumed", value=shown(self.assumed)
            )
        if self.refused is not None and self.refused not in TIME_REFUSALS:
            raise InvalidValue("refused is not a time refusal", field="refused")
        problem = call_window_problem(msgspec.to_builtins(self))
        if problem is not None:
            raise InvalidValue(f"call-window {problem[0]} {problem[1]}", field=problem[0])


class TimeAnswerRow(_TimeRow, frozen=True, kw_only=True, tag="time-answer"):
    """An accepted answer to a time question: the person's window
    (docs/time.md#recording-an-accepted-answer).

    Attributes:
        turn: the turn, >= 1.
        iteration: the paused batch's iteration, >= 1.
        mention: the mention answered, >= 0.
        start: wire ``from``, strict instant text.
        end: wire ``to``, strict instant text, after ``start``.
        zone: the reading's zone (for a typed range: the clock's zone).
        how: ``confirmed`` (one of the offered choices) or ``edited`` (typed).

    Raises:
        InvalidValue: a count is below its minimum, an end is not strict, ``from`` is not before
            ``to``, or ``zone`` is not a zone name.
    """

    turn: int
    iteration: int
    mention: int
    start: str = msgspec.field(name="from")
    end: str = msgspec.field(name="to")
    zone: str
    how: AnswerHow

    def __post_init__(self) -> None:
        check_counts(self.turn, self.iteration)
        if _bad_int(self.mention) or self.mention < 0:
            raise InvalidValue("mention must be an int >= 0", field="mention")
        if not _strict(self.start, "from") < _strict(self.end, "to"):
            raise InvalidValue("time-answer to must be after from", field="to")
        if not is_zone_name(self.zone):
            raise InvalidValue("zone must be a zone name", field="zone", value=shown(self.zone))


class Drift(Wire, frozen=True, kw_only=True):
    """A look-back call dispatched more than one step after ``now`` (docs/time.md#drift).

    Attributes:
        by_ms: ``dispatchedAt - now`` in milliseconds, signed, a non-zero safe integer (wire
            ``byMs``).
        outcome: ``shifted`` (ran with what was sent) or ``redrawn`` (rewritten in ``form``).
        form: ``redrawn`` only: the absolute form the call was rewritten in.

    Raises:
        InvalidValue: ``by_ms`` is zero or not a safe integer, or ``form`` does not fit the
            outcome.
    """

    by_ms: int
    outcome: DriftOutcome
    form: int | None = None

    def __post_init__(self) -> None:
        if _bad_int(self.by_ms) or self.by_ms == 0 or abs(self.by_ms) > SAFE_INTEGER:
            raise InvalidValue("drift.byMs must be a non-zero safe integer", field="byMs")
        if self.outcome == "redrawn" and (
            self.form is None or _bad_int(self.form) or self.form < 0
        ):
            raise InvalidValue("a redrawn drift names its form (an int >= 0)", field="form")
        if self.outcome == "shifted" and self.form is not None:
            raise InvalidValue("a shifted drift has no form", field="form")


class CallRow(_TimeRow, frozen=True, kw_only=True, tag="call"):
    """A call handed to its tool, with the drift of its period (docs/time.md#the-call-row).

    Attributes:
        turn: the turn, >= 1.
        iteration: the iteration of the call's batch, >= 1.
        tool_call_id: the call (wire ``toolCallId``).
        tool_name: its tool (wire ``toolName``).
        dispatched_at: the host clock's reading at dispatch, truncated to the millisecond,
            canonical UTC (wire ``dispatchedAt``).
        drift: present when the call's period drifted (docs/time.md#drift).

    Raises:
        InvalidValue: a count is below its minimum or ``dispatchedAt`` is not canonical UTC.
    """

    turn: int
    iteration: int
    tool_call_id: str
    tool_name: str
    dispatched_at: str
    drift: Drift | None = None

    def __post_init__(self) -> None:
        check_counts(self.turn, self.iteration)
        if not is_canonical_utc_ms(self.dispatched_at):
            raise InvalidValue(
                "dispatchedAt must be canonical UTC on a whole millisecond",
                field="dispatchedAt",
                value=shown(self.dispatched_at),
            )


TimeRow = CallWindowRow | TimeAnswerRow | CallRow
"""A row kind this module types (``clock`` and ``time-reading`` rows are the reading side's)."""

TIME_ROW_TYPES: Final = (ClockRow, TimeReadingRow, TimeAnswerRow, CallWindowRow, CallRow)
"""The class of every ledger row kind the time layer files, in ``TIME_ROW_KINDS`` order."""

# Every time row class in the ledger's one registry (docs/storage.md#typed-ledger-rows).
for _row_type in TIME_ROW_TYPES:
    register_ledger_row(_row_type)


def _bad_int(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def _strict(text: object, field: str) -> Instant:
    try:
        return parse_instant(text)  # type: ignore[arg-type]
    except InvalidValue as exc:
        raise InvalidValue(
            f"time-answer {field}: {exc.message}", field=field, value=shown(text)
        ) from exc


def is_canonical_utc_ms(text: object) -> bool:
    """Whether ``text`` is a strict instant in canonical UTC spelling on a whole millisecond."""
    try:
        instant = parse_instant(text)  # type: ignore[arg-type]
    except InvalidValue:
        return False
    return instant.offset == 0 and instant.ns % NS_PER_MS == 0 and spell_instant(instant) == text


# --- reading rows back ------------------------------------------------------------------------


def call_window_of_call(
    ledger: Iterable[object], tool_call_id: str, turn: int
) -> CallWindowRow | None:
    """The most recent ``call-window`` row of a call in a turn (docs/time.md#callwindowrow-fields),
    or None.

    ``ctx.time``, drift and observations rely on it. Rows are typed ledger rows (a wire map
    or a row of another class is not a ``call-window`` row here).
    """
    found = [
        row
        for row in ledger
        if isinstance(row, CallWindowRow) and row.turn == turn and row.tool_call_id == tool_call_id
    ]
    return found[-1] if found else None


# --- strict validation ------------------------------------------------------------------------

_ANY_TIME_ROW: Final = ClockRow | TimeReadingRow | CallWindowRow | TimeAnswerRow | CallRow


def _null_path(value: object, path: str) -> str | None:
    if value is None:
        return path
    items: Iterable[tuple[str, object]] = ()
    if isinstance(value, Mapping):
        items = ((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        items = ((f"{path}[{position}]", item) for position, item in enumerate(value))
    return next((found for where, item in items if (found := _null_path(item, where))), None)


def _wire_problem(raw: Mapping[str, Any]) -> tuple[str, str] | None:
    """What strict validation refuses that an ordinary decode reads as absent: ``null`` at any
    depth, ``false`` for a ``true``-only flag."""
    null = _null_path(raw, "")
    if null is not None:
        return null, "must not be null (leave the key out)"
    if raw.get("kind") == "call-window":
        for key in _TRUE_ONLY:
            if raw.get(key) is False:
                return key, "can only be true (leave the key out)"
    return None


def _typed_problem(row: object) -> tuple[str, str] | None:
    """What strict validation refuses beyond the structs' own checks: empty names and a
    look-back that is not a duration."""
    texts: dict[str, object] = {}
    if isinstance(row, CallWindowRow | CallRow):
        texts = {"toolCallId": row.tool_call_id, "toolName": row.tool_name}
        if isinstance(row, CallWindowRow) and row.argument is not None:
            texts["argument"] = row.argument
    elif isinstance(row, TimeReadingRow):
        info = row.reader
        texts = {"reader.id": info.id, "reader.version": info.version, "reader.locale": info.locale}
        for position, candidate in enumerate(row.candidates or ()):
            where = f"candidates[{position}]"
            texts[f"{where}.zone"] = candidate.zone
            lookback = candidate.lookback
            if lookback is not None and not is_duration(lookback, FACT_UNITS):
                return f"{where}.window.duration", "must be a duration"
    return next(((key, "must not be empty") for key, text in texts.items() if not text), None)


def validate_time_row(row: object, index: int) -> TimeRow | Mapping[str, Any]:
    """Strictly validate one time row of a committed ledger (docs/time.md#row-kinds; import,
    migration, doctor).

    The row is decoded strictly (``msgspec.convert`` with ``strict=True``) into the tagged
    union of the five row structs, whose own checks apply; ``null`` values, ``false`` flags
    and empty names are refused on top.

    Args:
        row: the decoded JSON value of the row.
        index: its position in ``findingsLedger`` (named by any error).

    Returns:
        The typed row for ``call-window``, ``time-answer`` and ``call``; the mapping itself for
        ``clock`` and ``time-reading`` rows.

    Raises:
        CheckpointInvalid: the row is not a time row or breaks a rule: unknown keys, keys of
            another ``how``, wrong types, ``null`` values, non-strict instants. The error names
            the row index, its kind and the field (``context``: ``index``, ``kind``,
            ``field``).
    """
    kind = row.get("kind") if isinstance(row, Mapping) else None
    shown_kind = kind if isinstance(kind, str) else shown(kind)
    problem: tuple[str, str] | None
    typed: object = None
    if not isinstance(row, Mapping):
        problem = "(row)", f"a row must be an object, not {shown(row)}"
    elif kind not in TIME_ROW_KINDS:
        problem = "kind", f"must be one of {', '.join(TIME_ROW_KINDS)}"
    else:
        problem = _wire_problem(row)
    if problem is None:
        try:
            typed = msgspec.convert(row, type=_ANY_TIME_ROW, strict=True)
        except msgspec.ValidationError as exc:
            path, detail = decoded_path(exc)  # the wire path msgspec names, and what is wrong
            problem = path or "(row)", detail
        else:
            problem = _typed_problem(typed)
    if problem is not None:
        field, detail = problem
        raise CheckpointInvalid(
            f"findingsLedger row {index} (kind {shown_kind}) is invalid at {field}: {detail}",
            index=index,
            kind=shown_kind,
            field=field,
        )
    if isinstance(typed, ClockRow | TimeReadingRow):
        assert isinstance(row, Mapping)
        return row
    assert isinstance(typed, CallWindowRow | TimeAnswerRow | CallRow)
    return typed
