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
  ``reading_rows.py``). They are checked here key for key against the wire shapes of
  docs/time.md#the-clock-row, docs/time.md#readers, docs/time.md#the-resolver,
  docs/time.md#policy-and-confirmation and docs/time.md#row-kinds (so that the error names the
  field), and then decoded into that side's own ``ClockRow`` / ``TimeReadingRow``, whose checks are
  the final word on their shapes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from afp_runtime.errors import CheckpointInvalid, InvalidValue, shown
from afp_runtime.periods.clock import ClockRow
from afp_runtime.periods.durations import FACT_UNITS, is_duration
from afp_runtime.periods.facts import TIME_REFUSALS, TimeRefusal
from afp_runtime.periods.instants import NS_PER_MS, parse_instant, spell_instant
from afp_runtime.periods.parts import TimeParts
from afp_runtime.periods.ranges import PersonWindow, TimeRange
from afp_runtime.periods.reading_rows import TimeReadingRow
from afp_runtime.periods.windows import AnswerHow, wire_row
from afp_runtime.periods.zones import is_zone_name

CallHow = Literal["filled", "bound", "model-chosen", "model", "unread", "not-filled", "refused"]
"""What the decision did with a call (docs/time.md#outcomes)."""

CALL_HOWS: Final[tuple[str, ...]] = (
    "filled",
    "bound",
    "model-chosen",
    "model",
    "unread",
    "not-filled",
    "refused",
)

BoundBy = Literal["quote", "value"]
"""How a sent window was tied to the person's: its declared quote, or identical instants."""

NotFilledWhy = Literal["no-window", "several-mentions", "open-reading"]
"""Why nothing was written into a call that omitted its period (docs/time.md#fill-path)."""

NOT_FILLED_WHYS: Final[tuple[str, ...]] = ("no-window", "several-mentions", "open-reading")

DriftOutcome = Literal["shifted", "redrawn"]
"""What dispatching later than ``now`` did to a look-back call (docs/time.md#drift)."""

TIME_ROW_KINDS: Final[tuple[str, ...]] = (
    "clock",
    "time-reading",
    "time-answer",
    "call-window",
    "call",
)
"""Every ledger row kind the time layer files (docs/time.md#row-kinds)."""

SAFE_INTEGER: Final = 2**53 - 1

_COMMON: Final = frozenset({"kind", "turn", "iteration", "toolCallId", "toolName", "how"})
_ALLOWED: Final[dict[str, frozenset[str]]] = {
    "filled": frozenset(
        {
            "form",
            "asked",
            "person",
            "rounded",
            "sent",
            "differs",
            "trimmedByTool",
            "partlyBeyondRetention",
        }
    ),
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
_TRUE_ONLY: Final = ("rounded", "trimmedByTool", "partlyBeyondRetention")


class _TimeRow(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    forbid_unknown_fields=True,
    tag_field="kind",
):
    """Base of the time rows: tagged on ``kind``; absent keys omitted, never ``null``."""


class Differs(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    forbid_unknown_fields=True,
):
    """What a widened fill reads beyond the person's window (docs/time.md#callwindowrow-fields).

    Attributes:
        extra: one or two UTC ranges, earliest first.
    """

    extra: tuple[TimeRange, ...]

    def __post_init__(self) -> None:
        if not 1 <= len(self.extra) <= 2:
            raise InvalidValue("differs.extra holds one or two ranges", value=shown(self.extra))


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
        else:
            if "argument" in present:
                return "argument", "only comes with a dst-gap refusal"
            if "asked" not in present:
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
        _check_counts(self.turn, self.iteration)
        if self.form is not None and (_bad_int(self.form) or self.form < 0):
            raise InvalidValue("form must be an int >= 0", field="form", value=shown(self.form))
        if self.assumed is not None and not is_duration(self.assumed, FACT_UNITS):
            raise InvalidValue(
                "assumed must be a duration", field="assumed", value=shown(self.assumed)
            )
        if self.refused is not None and self.refused not in TIME_REFUSALS:
            raise InvalidValue("refused is not a time refusal", field="refused")
        problem = call_window_problem(present_keys(self))
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
        _check_counts(self.turn, self.iteration)
        if _bad_int(self.mention) or self.mention < 0:
            raise InvalidValue("mention must be an int >= 0", field="mention")
        TimeRange(start=self.start, end=self.end)
        if not is_zone_name(self.zone):
            raise InvalidValue("zone must be a zone name", field="zone", value=shown(self.zone))

    @property
    def range(self) -> TimeRange:
        """The answered range."""
        return TimeRange(start=self.start, end=self.end)


class Drift(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    forbid_unknown_fields=True,
):
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
            raise InvalidValue("drift.byMs must be a non-zero safe integer", field="drift.byMs")
        if self.outcome == "redrawn" and (
            self.form is None or _bad_int(self.form) or self.form < 0
        ):
            raise InvalidValue("a redrawn drift names its form (an int >= 0)", field="drift.form")
        if self.outcome == "shifted" and self.form is not None:
            raise InvalidValue("a shifted drift has no form", field="drift.form")


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
        _check_counts(self.turn, self.iteration)
        if not is_canonical_utc_ms(self.dispatched_at):
            raise InvalidValue(
                "dispatchedAt must be canonical UTC on a whole millisecond",
                field="dispatchedAt",
                value=shown(self.dispatched_at),
            )


TimeRow = CallWindowRow | TimeAnswerRow | CallRow
"""A row kind this module types (``clock`` and ``time-reading`` rows are the reading side's)."""


def _bad_int(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def _check_counts(turn: object, iteration: object) -> None:
    for name, value in (("turn", turn), ("iteration", iteration)):
        if _bad_int(value) or value < 1:  # type: ignore[operator]
            raise InvalidValue(f"{name} must be an int >= 1", field=name, value=shown(value))


def present_keys(row: msgspec.Struct) -> dict[str, Any]:
    """The keys a row struct writes (wire names), with their values."""
    built = msgspec.to_builtins(row)
    assert isinstance(built, dict)
    return built


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

    ``ctx.time``, drift and observations rely on it. Rows may be wire mappings, structs or
    carried rows (see ``windows.wire_row``).
    """
    found: Mapping[str, Any] | None = None
    for row in ledger:
        if isinstance(row, CallWindowRow):
            if row.tool_call_id == tool_call_id and row.turn == turn:
                found = present_keys(row) | {"kind": "call-window"}
            continue
        wire = wire_row(row)
        if (
            wire is not None
            and wire.get("kind") == "call-window"
            and wire.get("toolCallId") == tool_call_id
            and wire.get("turn") == turn
        ):
            found = wire
    return None if found is None else msgspec.convert(found, type=CallWindowRow)


def time_row_to_wire(row: TimeRow) -> dict[str, Any]:
    """A time row as its committed JSON object (camelCase keys, absent keys omitted; arrays as
    lists, exactly what the committed bytes decode to)."""
    wire: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(row))
    return wire


# --- strict validation ------------------------------------------------------------------------

_AT = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_NAMED = re.compile(r"(?:unknown|missing required) field `(?P<name>[^`]*)`")


_FIELD = re.compile(r"\(field=(?P<name>[^,)]+)")


def _field_of(error: msgspec.ValidationError) -> tuple[str, str]:
    text = str(error)
    at = _AT.search(text)
    path = at.group("path") if at else ""
    detail = text[: at.start()] if at else text
    named = _NAMED.search(detail) or _FIELD.search(detail)
    if named:
        path = f"{path}.{named.group('name')}" if path else named.group("name")
    return path or "(row)", detail


class _Invalid(Exception):
    def __init__(self, field: str, detail: str) -> None:
        super().__init__(field, detail)
        self.field = field
        self.detail = detail


def _null_path(value: object, path: str) -> str | None:
    if value is None:
        return path
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = _null_path(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        for position, item in enumerate(value):
            found = _null_path(item, f"{path}[{position}]")
            if found:
                return found
    return None


def _convert(raw: Any, struct_type: type[Any], prefix: str = "") -> Any:
    try:
        return msgspec.convert(raw, type=struct_type)
    except msgspec.ValidationError as exc:
        field, detail = _field_of(exc)
        if prefix:
            field = prefix if field == "(row)" else f"{prefix}.{field}"
        raise _Invalid(field, detail) from exc


def _require(condition: bool, field: str, detail: str) -> None:
    if not condition:
        raise _Invalid(field, detail)


def _keys(raw: Mapping[str, Any], allowed: Iterable[str], prefix: str = "") -> None:
    known = frozenset(allowed)
    for key in raw:
        if key not in known:
            raise _Invalid(f"{prefix}{key}", "is not a known key")


def _count(raw: Mapping[str, Any], key: str, minimum: int, prefix: str = "") -> int:
    value: Any = raw.get(key)
    _require(key in raw, f"{prefix}{key}", "is mandatory")
    _require(not _bad_int(value), f"{prefix}{key}", f"must be an int, not {shown(value)}")
    _require(value >= minimum, f"{prefix}{key}", f"must be >= {minimum}")
    return int(value)


def _text(raw: Mapping[str, Any], key: str, prefix: str = "", *, empty: bool = False) -> str:
    value = raw.get(key)
    _require(key in raw, f"{prefix}{key}", "is mandatory")
    _require(isinstance(value, str), f"{prefix}{key}", f"must be a string, not {shown(value)}")
    _require(empty or bool(value), f"{prefix}{key}", "must not be empty")
    return str(value)


def _choice_of(raw: Mapping[str, Any], key: str, choices: Sequence[str], prefix: str = "") -> str:
    value = raw.get(key)
    _require(key in raw, f"{prefix}{key}", "is mandatory")
    _require(value in choices, f"{prefix}{key}", f"must be one of {', '.join(choices)}")
    return str(value)


def _strict_instant(raw: Mapping[str, Any], key: str, prefix: str = "") -> None:
    value = _text(raw, key, prefix)
    try:
        parse_instant(value)
    except InvalidValue as exc:
        raise _Invalid(f"{prefix}{key}", exc.message) from exc


def _check_clock(raw: Mapping[str, Any]) -> None:
    _keys(raw, ("kind", "turn", "iteration", "now", "nowSource", "zone", "zoneSource", "window"))
    _count(raw, "turn", 1)
    _count(raw, "iteration", 1)
    _strict_instant(raw, "now")
    now = parse_instant(raw["now"])
    canonical = spell_instant(now) == raw["now"]
    _require(canonical, "now", "must be written canonically (docs/time.md#instants)")
    _choice_of(raw, "nowSource", ("message", "inbox"))
    zone = _text(raw, "zone")
    _require(is_zone_name(zone), "zone", f"{shown(zone)} is not a zone name")
    source = _choice_of(raw, "zoneSource", ("message", "agent", "answered", "unknown"))
    _require(source != "unknown" or zone == "UTC", "zone", 'is "UTC" when zoneSource is unknown')
    if "window" in raw:
        window = _convert(raw["window"], PersonWindow, "window")
        _require(window.source == "control", "window.source", "must be control")
    _convert(raw, ClockRow)


_READER_KEYS: Final = ("id", "version", "kind", "locale")
_CANDIDATE_KEYS: Final = (
    "window",
    "range",
    "zone",
    "grain",
    "said",
    "implied",
    "anchor",
    "notes",
    "reading",
    "parse",
)
_CHOICE_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "only": ("by",),
    "policy": ("by", "candidate", "policy"),
    "open": ("by", "remaining", "open", "policy"),
    "none": ("by", "why"),
}
_OPEN_QUESTIONS: Final = (
    "date-order",
    "year",
    "meridiem",
    "dst",
    "zone",
    "abbreviation",
    "parse",
    "confirm",
)
_NONE_WHYS: Final = ("unreadable", "unsupported", "no-candidate", "excluded-by-policy")
_POLICY_KEYS: Final = ("dateOrder", "year", "abbreviations")
_READING_TAGS: Final = ("dateOrder", "meridiem", "endMeridiem", "year", "abbreviation")


def _list(raw: Mapping[str, Any], key: str, prefix: str = "") -> Sequence[Any]:
    value: Any = raw.get(key)
    _require(key in raw, f"{prefix}{key}", "is mandatory")
    _require(
        isinstance(value, Sequence) and not isinstance(value, str | bytes),
        f"{prefix}{key}",
        "must be a list",
    )
    return value


def _mapping(raw: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    value: Any = raw.get(key)
    _require(key in raw, f"{prefix}{key}", "is mandatory")
    _require(isinstance(value, Mapping), f"{prefix}{key}", "must be an object")
    return value


def _check_candidate(raw: object, path: str, parses: int) -> None:
    _require(isinstance(raw, Mapping), path, "must be an object")
    assert isinstance(raw, Mapping)
    prefix = f"{path}."
    _keys(raw, _CANDIDATE_KEYS, prefix)
    window = _mapping(raw, "window", prefix)
    kind = _choice_of(window, "kind", ("range", "lookback"), f"{prefix}window.")
    if kind == "lookback":
        _keys(window, ("kind", "duration"), f"{prefix}window.")
        duration = _text(window, "duration", f"{prefix}window.")
        _require(is_duration(duration, FACT_UNITS), f"{prefix}window.duration", "not a duration")
    else:
        _keys(window, ("kind",), f"{prefix}window.")
    _convert(_mapping(raw, "range", prefix), TimeRange, f"{prefix}range")
    _text(raw, "zone", prefix)
    _text(raw, "grain", prefix)
    _require(not _list(raw, "said", prefix), f"{prefix}said", "is always empty when filed")
    for position, item in enumerate(_list(raw, "implied", prefix)):
        _require(isinstance(item, str), f"{prefix}implied[{position}]", "must be a string")
    _choice_of(raw, "anchor", ("message",), prefix)
    for position, note in enumerate(_list(raw, "notes", prefix)):
        where = f"{prefix}notes[{position}]"
        if isinstance(note, Mapping):
            _text(note, "kind", f"{where}.")
        else:
            _require(isinstance(note, str) and bool(note), where, "must be a string or object")
    if "reading" in raw:
        reading = _mapping(raw, "reading", prefix)
        _keys(reading, _READING_TAGS, f"{prefix}reading.")
    parse = _count(raw, "parse", 0, prefix)
    _require(parse < max(parses, 1), f"{prefix}parse", "must name one of the mention's parses")


def _check_choice(raw: Mapping[str, Any], candidates: int) -> None:
    choice = _mapping(raw, "choice")
    by = _choice_of(choice, "by", tuple(_CHOICE_KEYS), "choice.")
    _keys(choice, _CHOICE_KEYS[by], "choice.")
    if "policy" in choice:
        policy = _mapping(choice, "policy", "choice.")
        _keys(policy, _POLICY_KEYS, "choice.policy.")
    if by == "policy":
        _require("policy" in choice, "choice.policy", "is mandatory")
        index = _count(choice, "candidate", 0, "choice.")
        _require(index < candidates, "choice.candidate", "must name a candidate")
    elif by == "open":
        for position, index in enumerate(_list(choice, "remaining", "choice.")):
            where = f"choice.remaining[{position}]"
            _require(not _bad_int(index), where, "must be an int")
            _require(0 <= index < candidates, where, "must name a candidate")
        for position, question in enumerate(_list(choice, "open", "choice.")):
            where = f"choice.open[{position}]"
            _require(question in _OPEN_QUESTIONS, where, f"must be one of {_OPEN_QUESTIONS}")
    elif by == "none":
        _choice_of(choice, "why", _NONE_WHYS, "choice.")


def _check_reading(raw: Mapping[str, Any]) -> None:
    head = ("kind", "turn", "iteration", "reader", "tzdata", "mentions")
    _count(raw, "turn", 1)
    _count(raw, "iteration", 1)
    reader = _mapping(raw, "reader")
    _keys(reader, _READER_KEYS, "reader.")
    for key in ("id", "version", "locale"):
        _text(reader, key, "reader.")
    _choice_of(reader, "kind", ("rule", "model"), "reader.")
    _text(raw, "tzdata")
    mentions = _count(raw, "mentions", 0)
    if mentions == 0:
        _keys(raw, head)
        _convert(raw, TimeReadingRow)
        return
    mention = _count(raw, "mention", 0)
    _require(mention < mentions, "mention", "must be less than mentions")
    if "refused" in raw:
        _keys(raw, (*head, "mention", "refused"))
        _choice_of(raw, "refused", ("quote-not-in-text", "malformed"))
        _convert(raw, TimeReadingRow)
        return
    _keys(raw, (*head, "mention", "quote", "parses", "problem", "candidates", "choice"))
    _text(raw, "quote")
    parses = _list(raw, "parses")
    _require(len(parses) <= 4, "parses", "holds at most four parses")
    for position, parse in enumerate(parses):
        _convert(parse, TimeParts, f"parses[{position}]")
    if "problem" in raw:
        _choice_of(raw, "problem", ("unreadable",))
        _require(not parses, "problem", "comes only with empty parses")
    candidates = _list(raw, "candidates")
    for position, candidate in enumerate(candidates):
        _check_candidate(candidate, f"candidates[{position}]", len(parses))
    _check_choice(raw, len(candidates))
    _convert(raw, TimeReadingRow)


def _check_call_window(raw: Mapping[str, Any]) -> CallWindowRow:
    problem = call_window_problem(raw)
    if problem is not None:
        raise _Invalid(*problem)
    _count(raw, "turn", 1)
    _count(raw, "iteration", 1)
    _text(raw, "toolCallId")
    _text(raw, "toolName")
    if "form" in raw:
        _count(raw, "form", 0)
    for key in _TRUE_ONLY:
        if key in raw:
            _require(raw[key] is True, key, "can only be true")
    if "assumed" in raw:
        _require(is_duration(raw["assumed"], FACT_UNITS), "assumed", "must be a duration")
    if "argument" in raw:
        _text(raw, "argument")
    if "differs" in raw:
        extra = _list(_mapping(raw, "differs"), "extra", "differs.")
        _require(1 <= len(extra) <= 2, "differs.extra", "holds one or two ranges")
    row: CallWindowRow = _convert(raw, CallWindowRow)
    return row


def _check_call(raw: Mapping[str, Any]) -> CallRow:
    _keys(raw, ("kind", "turn", "iteration", "toolCallId", "toolName", "dispatchedAt", "drift"))
    _count(raw, "turn", 1)
    _count(raw, "iteration", 1)
    _text(raw, "toolCallId")
    _text(raw, "toolName")
    _require(
        is_canonical_utc_ms(raw.get("dispatchedAt")),
        "dispatchedAt",
        "must be a strict instant in canonical UTC on a whole millisecond",
    )
    if "drift" in raw:
        drift = _mapping(raw, "drift")
        outcome = _choice_of(drift, "outcome", ("shifted", "redrawn"), "drift.")
        allowed = ("byMs", "outcome", "form") if outcome == "redrawn" else ("byMs", "outcome")
        _keys(drift, allowed, "drift.")
        by_ms: Any = drift.get("byMs")
        _require(
            not _bad_int(by_ms) and by_ms != 0 and abs(by_ms) <= SAFE_INTEGER,
            "drift.byMs",
            "must be a non-zero safe integer",
        )
        if outcome == "redrawn":
            _count(drift, "form", 0, "drift.")
    row: CallRow = _convert(raw, CallRow)
    return row


def _check_answer(raw: Mapping[str, Any]) -> TimeAnswerRow:
    _keys(raw, ("kind", "turn", "iteration", "mention", "from", "to", "zone", "how"))
    _count(raw, "turn", 1)
    _count(raw, "iteration", 1)
    _count(raw, "mention", 0)
    _strict_instant(raw, "from")
    _strict_instant(raw, "to")
    _require(parse_instant(raw["from"]) < parse_instant(raw["to"]), "to", "must be after from")
    zone = _text(raw, "zone")
    _require(is_zone_name(zone), "zone", f"{shown(zone)} is not a zone name")
    _choice_of(raw, "how", ("confirmed", "edited"))
    row: TimeAnswerRow = _convert(raw, TimeAnswerRow)
    return row


def validate_time_row(row: object, index: int) -> TimeRow | Mapping[str, Any]:
    """Strictly validate one time row of a committed ledger (docs/time.md#row-kinds; import,
    migration, doctor).

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
    try:
        _require(isinstance(row, Mapping), "(row)", f"a row must be an object, not {shown(row)}")
        assert isinstance(row, Mapping)
        _require(kind in TIME_ROW_KINDS, "kind", f"must be one of {', '.join(TIME_ROW_KINDS)}")
        null = _null_path(row, "")
        _require(null is None, null or "", "must not be null (leave the key out)")
        if kind == "clock":
            _check_clock(row)
            return row
        if kind == "time-reading":
            _check_reading(row)
            return row
        if kind == "call-window":
            return _check_call_window(row)
        if kind == "call":
            return _check_call(row)
        return _check_answer(row)
    except _Invalid as exc:
        raise CheckpointInvalid(
            f"findingsLedger row {index} (kind {shown_kind}) is invalid at {exc.field}: "
            f"{exc.detail}",
            index=index,
            kind=shown_kind,
            field=exc.field,
        ) from exc
