"""Reading back the period a model sent in a call's arguments (docs/time.md#reading-values-back,
docs/time.md#which-path-a-call-takes, docs/time.md#sent-window-path).

Sent values are never edited here: they are read into a ``TimeRange`` (or not), and the
decision built on top records the call as bound, model-chosen, model or unread.

Readings settled here:

* docs/time.md#reading-values-back reads "the earliest form for which every argument except the zone
  argument was sent";
  docs/time.md#sent-window-path reads "the earliest form with all non-zone arguments sent *whose
  values read back*". ``read_back`` follows docs/time.md#sent-window-path: it tries the fully-sent
  forms in order and the first that reads back wins. (With ``accepts: [iso-range, signed-lookback]``
  both forms share one argument, and ``"-40m"`` must still read back through the second.)
* A zone argument that was sent must be a valid zone name
  (docs/time.md#zone-names-and-the-database), or the form does not read
  back, whatever its ``as``; a zone argument that was not sent falls back to the agent's zone,
  as does a form without one. Local values (``wall``, ``date``, ``day``) need a zone.
* An inclusive ``wall`` value gains its written step as an instant (after the local time was
  read to that single instant).
* An epoch value in a ``bounds`` or ``object`` form is a JSON number (an int, or a float with no
  fractional part); inside a joined string it is digits.
* Model-sent ``iso`` values use the strict profile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import msgspec

from afp_runtime.errors import InvalidValue
from afp_runtime.time._convert import PeriodContext
from afp_runtime.time._durations import is_duration, parse_duration
from afp_runtime.time._forms import (
    BoundsForm,
    DayForm,
    Form,
    JoinedForm,
    LookbackForm,
    ObjectForm,
    ends_of,
    value_arguments_of,
    zone_argument_of,
)
from afp_runtime.time._instants import (
    NS_PER_MS,
    NS_PER_S,
    Instant,
    dated_in_every_zone,
    parse_written,
)
from afp_runtime.time._ranges import TimeRange, lookback_range
from afp_runtime.time._values import parse_date, parse_wall, read_epoch
from afp_runtime.time._zones import WallGap, WallUnique, date_start, is_zone_name, read_wall

_DAY = timedelta(days=1)


def is_missing(value: object) -> bool:
    """Whether a sent argument counts as missing (docs/time.md#which-path-a-call-takes): None (the
    key absent too) or a string that is empty after trimming."""
    return value is None or (isinstance(value, str) and not value.strip())


class ReadBack(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The window a call's arguments name (docs/time.md#reading-values-back).

    Attributes:
        form: the position of the form that read back.
        range: the range read back: in UTC, or in now's offset for a look-back form.
        lookback: for a look-back form, the length that was sent (without its sign), so that a
            span ending now can be matched by value (docs/time.md#sent-window-path).
    """

    form: int
    range: TimeRange
    lookback: str | None = None


class SentGap(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A sent ``wall`` value naming a local time its zone skips (docs/time.md#sent-window-path step
    2: ``dst-gap``).

    Attributes:
        form: the position of the form.
        argument: the argument at fault (a bounds form's first bound at fault; the form's own
            argument for a joined or object form).
    """

    form: int
    argument: str


def _fully_sent(form: Form, args: Mapping[str, Any]) -> bool:
    return not any(is_missing(args.get(name)) for name in value_arguments_of(form))


def _zone_of(form: Form, args: Mapping[str, Any], ctx: PeriodContext) -> tuple[bool, str | None]:
    """(usable, zone): a sent zone argument must be valid; otherwise the agent zone applies."""
    argument = zone_argument_of(form)
    if argument is not None and not is_missing(args.get(argument)):
        sent = args[argument]
        return (True, sent) if is_zone_name(sent) else (False, None)
    return True, ctx.agent_zone if is_zone_name(ctx.agent_zone) else None


def _point(
    as_: str, value: object, zone: str | None, *, in_string: bool
) -> tuple[Instant, Instant] | None:
    """A sent end: (the instant it names, the end it stands for when read as inclusive)."""
    if as_ == "iso":
        if not isinstance(value, str):
            return None
        try:
            instant, step = parse_written(value)
        except InvalidValue:
            return None
        return instant, instant.plus(step)
    if as_ in ("epoch-ms", "epoch-s"):
        number = read_epoch(value, in_string=in_string)
        if number is None:
            return None
        unit = NS_PER_MS if as_ == "epoch-ms" else NS_PER_S
        return Instant(ns=number * unit), Instant(ns=(number + 1) * unit)
    if zone is None:
        return None
    if as_ == "date":
        day = parse_date(value)
        if day is None:
            return None
        return date_start(day, zone), date_start(day + _DAY, zone)
    wall = parse_wall(value)
    if wall is None:
        return None
    reading = read_wall(wall[0], zone)
    if not isinstance(reading, WallUnique):
        return None
    return reading.instant, reading.instant.plus(wall[1])


def _pair(
    from_as: str,
    to_as: str,
    edge: str | None,
    values: tuple[object, object],
    zone: str | None,
    *,
    in_string: bool,
) -> TimeRange | None:
    first = _point(from_as, values[0], zone, in_string=in_string)
    last = _point(to_as, values[1], zone, in_string=in_string)
    if first is None or last is None:
        return None
    start, end = first[0], last[1] if edge == "inclusive" else last[0]
    if not start < end:
        return None
    return TimeRange.of(start.utc(), end.utc())


def _sent_ends(
    form: BoundsForm | JoinedForm | ObjectForm, args: Mapping[str, Any]
) -> tuple[object, object] | None:
    """The two ends a call sent through a two-ended form; None when a joined string does not
    split into exactly two parts or an object form's value is not an object."""
    if isinstance(form, BoundsForm):
        return args[form.start.argument], args[form.end.argument]
    value = args[form.argument]
    if isinstance(form, JoinedForm):
        parts = value.split(form.joiner) if isinstance(value, str) else []
        return (parts[0], parts[1]) if len(parts) == 2 else None
    if not isinstance(value, Mapping):
        return None
    return value.get(form.keys.start), value.get(form.keys.end)


def _read(
    form: Form, args: Mapping[str, Any], ctx: PeriodContext
) -> tuple[TimeRange, str | None] | None:
    if isinstance(form, LookbackForm):
        value = args[form.argument]
        if not isinstance(value, str) or value.startswith("-") != form.signed:
            return None
        length = value.removeprefix("-")  # an unsigned form refused a leading "-" above
        if not is_duration(length, form.letters):
            return None
        return lookback_range(ctx.now, parse_duration(length, form.letters)), length
    usable, zone = _zone_of(form, args, ctx)
    if not usable:
        return None
    if isinstance(form, DayForm):
        day = parse_date(args[form.argument])
        if day is None or zone is None:
            return None
        return TimeRange.of(date_start(day, zone).utc(), date_start(day + _DAY, zone).utc()), None
    sent = _sent_ends(form, args)
    if sent is None:
        return None
    found = _pair(*ends_of(form), sent, zone, in_string=isinstance(form, JoinedForm))
    return None if found is None else (found, None)


def read_back(
    args: Mapping[str, Any], forms: Sequence[Form], ctx: PeriodContext
) -> ReadBack | None:
    """The window a call's arguments name, read through the earliest fully-sent form that
    reads back (docs/time.md#reading-values-back, docs/time.md#sent-window-path step 1).

    ``lookback`` → ``lookback_range(now, L)`` in now's offset (a signed form requires a leading
    ``-``, an unsigned one rejects it; the rest is a duration in the form's units). ``day`` →
    the local start of the date to the next date's. ``bounds``, ``joined`` and ``object``:
    ``from`` is inclusive; an inclusive ``to`` gains its written precision (60 s for ``HH:MM``,
    1 s with seconds, 1 ms with a fraction; 1 ms for ``epoch-ms``; ``(v + 1) * 1000`` ms for
    ``epoch-s``; the written step for ``wall``; the next day's start for ``date``). A wall value
    that is not one single instant fails; a joined string must split into exactly two parts.

    Returns:
        The form and the range (UTC, ``from < to``), or None when nothing reads back.
    """
    for index, form in enumerate(forms):
        if not _fully_sent(form, args):
            continue
        try:
            found = _read(form, args, ctx)
        except InvalidValue:
            continue  # it left the calendar on the way (a huge look-back): it reads as nothing
        if found is not None and _readable_everywhere(found[0]):
            return ReadBack(form=index, range=found[0], lookback=found[1])
    return None


def _readable_everywhere(found: TimeRange) -> bool:
    """Whether both ends have a date in every zone: a window the person, the rows and the pages
    can show in any zone (an end in 9999-12-31 UTC is the next year east of it)."""
    return dated_in_every_zone(found.start_instant) and dated_in_every_zone(found.end_instant)


def _is_gap(value: object, zone: str) -> bool:
    wall = parse_wall(value)
    try:
        return wall is not None and isinstance(read_wall(wall[0], zone), WallGap)
    except InvalidValue:
        return False  # a wall time off the calendar in its zone: no gap, it reads as nothing


def find_sent_gap(
    args: Mapping[str, Any], forms: Sequence[Form], ctx: PeriodContext
) -> SentGap | None:
    """A sent ``wall`` value its zone skips, in the first fully-sent form that has one
    (docs/time.md#sent-window-path step 2, for a call whose values did not read back).

    The zone is the sent zone argument when valid, otherwise the agent zone. A repeated local
    hour is not a gap (the call is then ``unread``), nor is a ``date`` whose midnight is
    skipped.
    """
    for index, form in enumerate(forms):
        if not _fully_sent(form, args) or isinstance(form, DayForm | LookbackForm):
            continue
        argument = zone_argument_of(form)
        sent = args.get(argument) if argument is not None else None
        zone = sent if is_zone_name(sent) else ctx.agent_zone
        if not is_zone_name(zone):
            continue
        assert isinstance(zone, str)
        sent = _sent_ends(form, args)
        if sent is None:
            continue
        if isinstance(form, BoundsForm):
            names = (form.start.argument, form.end.argument)
        else:
            names = (form.argument, form.argument)
        for as_, argument, value in zip(ends_of(form)[:2], names, sent, strict=True):
            if as_ == "wall" and _is_gap(value, zone):
                return SentGap(form=index, argument=argument)
    return None
