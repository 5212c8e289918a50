"""The run clock: a message's ``time``, the turn's ``TimeClock`` and its ``clock`` row (docs/time.md
docs/time.md#the-clock-row, docs/time.md#unknown-zone).

The ``seed`` of a turn's first run fixes the clock once and files it as a ``clock`` row;
every later run of the turn reads that row back, so the words of a turn are always read
against the same ``now`` and zone, however long the turn waits.

Wire shapes (JSON keys camelCase; absent keys omitted, never ``null``):

* ``MessageTime {now?, zone?, window?: {from, to}}`` — the optional ``time`` of an inbox
  message: ``now`` a strict instant, ``zone`` an accepted zone name, ``window`` a range with
  ``from < to`` (a UI's selection). Unknown keys are refused.
* ``TimeClock {now, nowSource, zone, zoneSource, window?}`` — ``now`` strict instant text,
  written canonically in its own offset; ``nowSource`` ``message | inbox``; ``zone`` a zone name
  kept exactly as provided; ``zoneSource`` ``message | agent | answered | unknown`` (with
  ``unknown`` the zone is ``"UTC"``, which is then only how instants are written);
  ``window`` ``{from, to, source: "control"}``.
* ``ClockRow {kind: "clock", turn, iteration, now, nowSource, zone, zoneSource, window?}`` —
  the same clock as a findings-ledger row.

Readings settled here:

* ``time.now`` is kept in the offset it was written in and spelled canonically
  (``2026-10-09T08:40-07:00`` → ``2026-10-09T08:40:00-07:00``), sub-second digits included.
* ``acceptedAt`` arrives as integer milliseconds (the inbox's ``acceptedAtMs``) and is written
  canonically in UTC (``1791560400000`` → ``2026-10-09T15:40:00Z``).
* A ``time.window`` is kept as written (both ends strict); it does not have to lie before
  ``now``.
* Errors: a bad ``MessageTime`` raises ``InvalidValue`` naming the field under ``time``
  (``time.now``, ``time.zone``, ``time.window``); ``message_time_from_wire`` turns decoding
  errors (unknown keys, wrong types) into the same error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

import msgspec

from afp_runtime.errors import InvalidValue, decoded_path, shown
from afp_runtime.time._instants import NS_PER_MS, Instant, dated_in_every_zone, parse_instant
from afp_runtime.time._ranges import PersonWindow, TimeRange
from afp_runtime.time._wire import Wire
from afp_runtime.time._zones import is_zone_name

NowSource = Literal["message", "inbox"]
"""Where the clock's ``now`` came from: the message's ``time.now``, or the inbox's
``acceptedAt``."""

ZoneSource = Literal["message", "agent", "answered", "unknown"]
"""Where the clock's zone came from (docs/time.md#the-clock-row)."""

NOW_SOURCES: Final[tuple[str, ...]] = get_args(NowSource)
ZONE_SOURCES: Final[tuple[str, ...]] = get_args(ZoneSource)
UNKNOWN_ZONE: Final = "UTC"
"""The zone written on a clock whose zone is unknown (docs/time.md#unknown-zone)."""


def _refuse(field: str, why: str, value: object) -> InvalidValue:
    return InvalidValue(f"{field} {why}", field=field, value=shown(value))


def _check_zone(zone: object, field: str) -> None:
    if not is_zone_name(zone):
        raise _refuse(field, "must be a zone name (Area/Location, UTC or GMT)", zone)


def _check_strict(text: object, field: str) -> Instant:
    if not isinstance(text, str):
        raise _refuse(field, "must be instant text", text)
    try:
        return parse_instant(text)
    except InvalidValue as exc:
        raise _refuse(field, f"must be a strict instant: {exc.message}", text) from exc


def _check_message_instant(text: object, field: str) -> None:
    # The turn's clock and the periods it anchors must be readable wherever the person is.
    instant = _check_strict(text, field)
    if not dated_in_every_zone(instant):
        raise _refuse(
            field,
            "must lie from 0001-01-02 to 9999-12-30 (UTC), so it has a date in every zone",
            text,
        )


class MessageTime(Wire, frozen=True, kw_only=True):
    """The optional ``time`` of an inbox message: wire ``{now?, zone?, window?: {from, to}}``.

    Attributes:
        now: the instant the person's words count from, strict instant text.
        zone: the person's zone, an accepted zone name.
        window: a window a UI set with the message (``from < to``).

    Raises:
        InvalidValue: ``now`` is not strict, ``zone`` is not a zone name, or ``window`` is
            not a range (a ``msgspec.ValidationError`` when decoding).
    """

    now: str | None = None
    zone: str | None = None
    window: TimeRange | None = None

    def __post_init__(self) -> None:
        if self.now is not None:
            _check_message_instant(self.now, "time.now")
        if self.zone is not None:
            _check_zone(self.zone, "time.zone")
        if self.window is not None and not isinstance(self.window, TimeRange):
            raise _refuse("time.window", "must be a range {from, to}", self.window)
        if self.window is not None:
            _check_message_instant(self.window.start, "time.window.from")
            _check_message_instant(self.window.end, "time.window.to")


def message_time_from_wire(data: object) -> MessageTime:
    """Decode a message's ``time`` object (camelCase keys), strictly.

    Raises:
        InvalidValue: not an object, an unknown key, a wrong type, a non-strict instant, a
            name that is not a zone, or a window without ``from < to``; ``field`` names the
            path (``time.now``, ``time.window.from``…).
    """
    if not isinstance(data, Mapping):
        raise _refuse("time", "must be an object {now?, zone?, window?}", data)
    try:
        return msgspec.convert(data, MessageTime, strict=True)
    except msgspec.ValidationError as exc:
        cause = exc.__cause__
        if isinstance(cause, InvalidValue) and "field" in cause.context:
            raise cause from exc
        raise InvalidValue(
            f"time is refused: {exc}", field=time_field(exc), value=shown(dict(data))
        ) from exc


def time_field(error: msgspec.ValidationError) -> str:
    """``time.<key path>`` of a decoding error (``time.window``, ``time.x`` for unknown
    ``x``)."""
    path, _ = decoded_path(error, missing=False)
    return f"time.{path}" if path else "time"


class TimeClock(Wire, frozen=True, kw_only=True):
    """The turn's clock (docs/time.md#the-clock-row): wire ``{now, nowSource, zone, zoneSource,
    window?}``.

    Attributes:
        now: strict instant text, written canonically in its own offset.
        now_source: wire ``nowSource``; ``message`` or ``inbox``.
        zone: the clock's zone name, exactly as provided; ``UTC`` when unknown.
        zone_source: wire ``zoneSource``; ``message``, ``agent``, ``answered`` or ``unknown``.
        window: the message's control window, ``{from, to, source: "control"}``.

    Raises:
        InvalidValue: a field breaks the rules above.
    """

    now: str
    now_source: NowSource
    zone: str
    zone_source: ZoneSource
    window: PersonWindow | None = None

    def __post_init__(self) -> None:
        _check_clock_fields(self)

    @property
    def now_instant(self) -> Instant:
        """``now`` as an instant (in the offset it is written in)."""
        return parse_instant(self.now)

    @property
    def zone_known(self) -> bool:
        """Whether the person's zone is known (``zoneSource`` is not ``unknown``)."""
        return self.zone_source != "unknown"


def _check_clock_fields(clock: TimeClock | ClockRow) -> None:
    if _check_strict(clock.now, "now").text != clock.now:
        raise _refuse("now", "must be written canonically (docs/time.md#instants)", clock.now)
    if clock.now_source not in NOW_SOURCES:
        raise _refuse("nowSource", f"must be one of {', '.join(NOW_SOURCES)}", clock.now_source)
    _check_zone(clock.zone, "zone")
    source = clock.zone_source
    if source not in ZONE_SOURCES:
        raise _refuse("zoneSource", f"must be one of {', '.join(ZONE_SOURCES)}", source)
    if source == "unknown" and clock.zone != UNKNOWN_ZONE:
        raise _refuse("zone", 'must be "UTC" when zoneSource is unknown', clock.zone)
    window = clock.window
    if window is not None and not isinstance(window, PersonWindow):
        raise _refuse("window", "must be a control window {from, to, source: control}", window)
    if window is not None and window.source != "control":
        raise _refuse("window.source", "must be control", window.source)


def turn_clock(
    time: MessageTime | None,
    *,
    agent_zone: str | None,
    answered_zone: str | None,
    accepted_at_ms: int,
) -> TimeClock:
    """Fix a turn's clock from its message (docs/time.md#the-clock-row).

    Args:
        time: the message's ``time``, if it carried one.
        agent_zone: ``TimeConfig.zone``.
        answered_zone: the zone the person gave in an earlier turn of this conversation
            (docs/time.md#unknown-zone), if any.
        accepted_at_ms: the inbox's ``acceptedAt``, integer milliseconds since the epoch.

    Returns:
        ``zone``: the message's (``message``), else the agent's (``agent``), else the answered
        one (``answered``), else ``UTC`` with ``unknown``. ``now``: the message's
        (``message``), else ``acceptedAt`` in UTC (``inbox``). ``window``: the message's, as
        a ``control`` window.

    Raises:
        InvalidValue: a zone given is not a zone name, or ``accepted_at_ms`` is not an int.
    """
    zone: str
    zone_source: ZoneSource
    if time is not None and time.zone is not None:
        zone, zone_source = time.zone, "message"
    elif agent_zone is not None:
        _check_zone(agent_zone, "agent zone")
        zone, zone_source = agent_zone, "agent"
    elif answered_zone is not None:
        _check_zone(answered_zone, "answered zone")
        zone, zone_source = answered_zone, "answered"
    else:
        zone, zone_source = UNKNOWN_ZONE, "unknown"
    now_source: NowSource
    if time is not None and time.now is not None:
        now, now_source = parse_instant(time.now).text, "message"
    else:
        if isinstance(accepted_at_ms, bool) or not isinstance(accepted_at_ms, int):
            raise _refuse("acceptedAt", "must be integer milliseconds", accepted_at_ms)
        now, now_source = Instant(ns=accepted_at_ms * NS_PER_MS).text, "inbox"
    window = None
    if time is not None and time.window is not None:
        window = PersonWindow.of(time.window, "control")
    return TimeClock(
        now=now, now_source=now_source, zone=zone, zone_source=zone_source, window=window
    )


class ClockRow(Wire, frozen=True, kw_only=True, tag_field="kind", tag="clock"):
    """The ``clock`` row a turn's first ``seed`` files (docs/time.md#the-clock-row,
    docs/time.md#row-kinds): wire ``{kind: "clock", turn, iteration, now, nowSource, zone,
    zoneSource, window?}``.

    Attributes:
        turn: the turn number (>= 1).
        iteration: the iteration that filed it (>= 1; 1 for a first ``seed``).
        now, now_source, zone, zone_source, window: as on ``TimeClock``.

    Raises:
        InvalidValue: a field breaks the rules of ``TimeClock`` or a count is below 1.
    """

    turn: int
    iteration: int
    now: str
    now_source: NowSource
    zone: str
    zone_source: ZoneSource
    window: PersonWindow | None = None

    def __post_init__(self) -> None:
        check_counts(self.turn, self.iteration)
        _check_clock_fields(self)

    @property
    def clock(self) -> TimeClock:
        """The clock this row files."""
        return TimeClock(**{name: getattr(self, name) for name in TimeClock.__struct_fields__})


def check_counts(turn: object, iteration: object) -> None:
    """A row's ``turn`` and ``iteration``: ints >= 1 (``InvalidValue`` naming the field)."""
    for name, count in (("turn", turn), ("iteration", iteration)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise _refuse(name, "must be an int >= 1", count)


def clock_row(clock: TimeClock, *, turn: int, iteration: int = 1) -> ClockRow:
    """The ``clock`` row of ``clock`` for ``turn`` (iteration 1: a turn's first ``seed``)."""
    return ClockRow(turn=turn, iteration=iteration, **msgspec.structs.asdict(clock))


def clock_from_wire(data: Mapping[str, Any]) -> TimeClock:
    """The clock of a filed ``clock`` row in wire form (a continuation run reads it back).

    Raises:
        InvalidValue: the row is not a valid ``clock`` row.
    """
    try:
        return msgspec.convert(data, ClockRow).clock
    except msgspec.ValidationError as exc:
        raise InvalidValue(f"clock row is refused: {exc}", value=shown(dict(data))) from exc
