"""The time layer's authored texts (docs/time.md#judging-answers,
docs/time.md#recording-an-accepted-answer, docs/time.md#fill-path, docs/time.md#refused-calls,
docs/time.md#the-served-time-line).

Every sentence here is afp_runtime's own: the observations a model reads when a call is refused,
filled, left unsettled or abandoned; the sentence that explains why a typed answer was not
accepted; and the served time line. Refusal observations are in the past tense, name the tool,
and explain the refusal only through the tool's declared facts — the window's own value is never
repeated.

Readings settled here:

* Weekday and month names are English words from fixed tables (never the process locale).
* The time line shows hours and minutes; an offset is written ``UTC±HH:MM`` (``UTC+00:00`` for a
  known zone at zero offset).
* A refusal that states a fact the tool did not declare (``beyond-retention`` without a
  ``retention``) leaves the number out rather than inventing one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from afp_runtime.time._facts import Facts, TimeRefusal
from afp_runtime.time._instants import (
    Instant,
    fraction_text,
    local_parts,
    signed_offset,
)
from afp_runtime.time._rows import CallWindowRow
from afp_runtime.time._zones import is_zone_name, to_zone

WEEKDAYS: Final[tuple[str, ...]] = tuple(
    str.split("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
)

TIME_LINE_PREFIX: Final = "[Clock note from the runtime, not written by the person]"
"""The fixed start of the served time line (registered with the window's authored prefixes)."""

FILLED_NOTE: Final = (
    "[Runtime note] The time period for this call was taken from the person's window."
)
"""Appended to a filled call's observation (docs/time.md#fill-path)."""

WIDENED_NOTE: Final = (
    "The tool covered more time than was requested, so its result may include data from "
    "outside that window."
)
"""Added to ``FILLED_NOTE`` when the fill was widened and the tool does not filter."""

TRIMMED_NOTE: Final = (
    "The tool's request covered more time than was requested; the tool itself leaves out what "
    "falls outside the requested window."
)
"""Added to ``FILLED_NOTE`` when the fill was widened and the tool declares ``filtersToAsked``."""

_EXAMPLE_RANGE: Final = "2026-10-09T08:00:00-07:00/2026-10-09T09:00:00-07:00"

ANSWER_REASON_TEXTS: Final[Mapping[str, str]] = {
    "not-a-zone": (
        "That is not a time zone name. Please give a name such as America/Los_Angeles, "
        "Europe/London or UTC."
    ),
    "not-a-range": (
        "That is not a range. Please give a start and an end separated by one slash, for "
        f"example {_EXAMPLE_RANGE}."
    ),
    "no-offset": (
        "Each end needs its offset from UTC (such as -07:00, or Z for UTC) so that it names "
        "one moment."
    ),
    "not-an-instant": (
        f"Each end must be a date and a time with its offset, for example {_EXAMPLE_RANGE}."
    ),
    "out-of-order": "The start must come before the end.",
    "off-calendar": "Please give a range between the years 2 and 9998.",
    "dst-gap": (
        "One end names a local time that never happens in your time zone that day, because "
        "the clocks skip it."
    ),
    "time-future": "That time has not happened yet, and the data only covers the past.",
    "time-past": "That time is already over, and the data only covers what is still to come.",
    "beyond-retention": "All of that time is older than the data that is kept.",
    "over-max-range": "That range is longer than one lookup can cover; please give a shorter one.",
}
"""The short sentence shown with a re-asked time question, per reason code
(docs/time.md#judging-answers)."""


def refusal_observation(
    tool_name: str,
    refused: TimeRefusal,
    facts: Facts | None = None,
    *,
    argument: str | None = None,
) -> str:
    """The observation of a call refused before dispatch (docs/time.md#refused-calls).

    Args:
        tool_name: the tool.
        refused: the code.
        facts: the facts that judged the window (``tool_facts`` for a fill, ``form_facts`` for a
            sent window); only these are stated.
        argument: for ``dst-gap``, the argument at fault.
    """
    declared = facts if facts is not None else Facts()
    head = f"The call to {tool_name} was not run:"
    cap = declared.max_range
    if refused == "time-future":
        body = (
            "the time it asked about has not happened yet, and this source only holds data "
            "about the past."
        )
    elif refused == "time-past":
        body = (
            "the time it asked about was already over, and this source only covers what is "
            "still to come."
        )
    elif refused == "beyond-retention":
        kept = f" (it keeps {declared.retention})" if declared.retention else ""
        body = f"all of the time it asked about is older than the data this source keeps{kept}."
    elif refused == "over-max-range":
        most = f" (at most {cap} per call)" if cap else ""
        body = (
            f"the time it asked about is longer than one call of this tool can cover{most}. "
            "Shorter calls are possible."
        )
    elif refused == "multi-day":
        body = (
            "the time it asked about spans several dates, and this tool takes one date per "
            "call. One call per date is possible."
        )
    elif refused == "dst-gap":
        named = f"the argument {argument}" if argument else "one of its arguments"
        body = (
            f"the local time given for {named} never occurs in the tool's time zone, because a "
            "clock change skips it."
        )
    else:
        within = f", within its maximum of {cap} per call" if cap else ""
        body = (
            "none of the ways this tool accepts a time can cover the time it asked about, even "
            f"by reading more than was asked{within}."
        )
    return f"{head} {body}"


def filled_note(row: CallWindowRow) -> str | None:
    """The note added to a filled call's observation (docs/time.md#fill-path), or None for any other
    row.

    It says the period was taken from the person's window and, when widened, that the tool
    covered more time than requested.
    """
    if row.how != "filled":
        return None
    if row.sent is None:
        return FILLED_NOTE
    return f"{FILLED_NOTE} {TRIMMED_NOTE if row.trimmed_by_tool else WIDENED_NOTE}"


def unsettled_observation(tool_name: str) -> str:
    """The observation of a call whose time question closed ``unsettled``
    (docs/time.md#judging-answers)."""
    return (
        f"The time for the call to {tool_name} could not be agreed with the person, so the tool "
        "was not run."
    )


def abandoned_observation(tool_name: str) -> str:
    """The observation of a call whose time question was abandoned
    (docs/time.md#recording-an-accepted-answer)."""
    return (
        f"The person chose not to give a time for the call to {tool_name}, so the tool was not run."
    )


def weekday_date_time(instant: Instant, *, seconds: bool = False) -> tuple[str, str, str]:
    """The weekday, ``YYYY-MM-DD`` and ``HH:MM`` of an instant in its own offset; with
    ``seconds``, ``:SS`` and a fraction follow when they are not zero."""
    day, of_day, sub = local_parts(instant)
    hours, rest = divmod(of_day, 3600)
    clock = f"{hours:02d}:{rest // 60:02d}"
    if seconds and (rest % 60 or sub):
        clock += f":{rest % 60:02d}{fraction_text(sub)}"
    return WEEKDAYS[day.weekday()], day.isoformat(), clock


def time_line(now: Instant, zone: str, *, zone_unknown: bool = False) -> str:
    """The served time line of a turn (docs/time.md#the-served-time-line), the same in every request
    of the turn.

    It says it is supplied by the runtime, and gives the turn's clock as weekday, date, hour and
    minute in the person's zone, naming the zone and its UTC offset (``Friday, 2026-10-09, 08:40,
    America/Los_Angeles, UTC-07:00``); with an unknown zone it gives the time in UTC and says the
    person's zone is not known.

    Args:
        now: the turn's clock ``now``.
        zone: the clock's zone.
        zone_unknown: the clock's ``zoneSource`` is ``unknown`` (or the zone is not a zone name).
    """
    if zone_unknown or not is_zone_name(zone):
        weekday, day, clock = weekday_date_time(now.utc())
        return (
            f"{TIME_LINE_PREFIX} The current time for this turn is {weekday}, {day}, {clock} "
            "UTC. The person's time zone is not known."
        )
    local = to_zone(now, zone)
    weekday, day, clock = weekday_date_time(local)
    return (
        f"{TIME_LINE_PREFIX} The current time for this turn is {weekday}, {day}, {clock}, "
        f"{zone}, UTC{signed_offset(local.offset)}."
    )
