"""Facts a tool declares about its data, and checking a range against them
(docs/time.md#facts-about-the-data, docs/time.md#facts-checked-against-a-range,
docs/time.md#tools-that-filter-to-the-asked-window).

Facts are descriptions, not preferences: a range the facts rule out is refused before the call
runs, with one of the ``TimeRefusal`` codes, and the model is told why in terms of the facts.

Readings settled here:

* ``tool_facts`` keeps the declared spelling of the cap it picks (the largest; on a tie, the
  first form's), so ``{maxRange: 7d}`` stays ``7d``.
* ``partly_beyond_retention`` is true when the range begins strictly before ``now -
  retention`` and ends strictly after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, get_args

import msgspec

from afp_runtime.time._check import check_choice, check_duration, refuse
from afp_runtime.time._durations import FACT_UNITS, parse_duration
from afp_runtime.time._forms import Form
from afp_runtime.time._instants import NS_PER_MS, Instant
from afp_runtime.time._ranges import TimeRange
from afp_runtime.time._wire import Wire

Direction = Literal["past", "future", "any"]
"""Which side of now a tool's data lies on."""

DIRECTIONS: Final[tuple[str, ...]] = get_args(Direction)

TimeRefusal = Literal[
    "time-future",
    "time-past",
    "beyond-retention",
    "over-max-range",
    "multi-day",
    "dst-gap",
    "no-form-holds",
]
"""Why a call may not run with a window (docs/time.md#facts-checked-against-a-range,
docs/time.md#refused-calls)."""

TIME_REFUSALS: Final[tuple[str, ...]] = get_args(TimeRefusal)

DEFAULT_GRANULARITY_MS: Final = 60_000
"""The step assumed where one is needed and the tool declares no ``granularity``
(docs/time.md#facts-about-the-data)."""


class Facts(Wire, frozen=True, kw_only=True):
    """Facts about a tool's data (docs/time.md#facts-about-the-data); a fact that is absent is not
    checked.

    Attributes:
        direction: ``past``, ``future`` or ``any``.
        retention: how far back the data goes, a duration (``smhdw``).
        max_range: the longest window one call can read, a duration (wire ``maxRange``).
        granularity: the data's time step, a duration; one minute where a step is needed and
            none is given.
        filters_to_asked: the tool itself discards anything outside ``ctx.time.asked`` (wire
            ``filtersToAsked``); a widened fill then records ``trimmedByTool``
            (docs/time.md#tools-that-filter-to-the-asked-window).
        wall_zone: ``"agent"`` lets ``wall``, ``date`` and ``day`` forms without a zone argument
            use the agent's zone (wire ``wallZone``).

    Raises:
        PeriodDeclarationError: a value is invalid (names the wire field).
    """

    direction: Direction | None = None
    retention: str | None = None
    max_range: str | None = None
    granularity: str | None = None
    filters_to_asked: bool = False
    wall_zone: Literal["agent"] | None = None

    def __post_init__(self) -> None:
        if self.direction is not None:
            check_choice(self.direction, DIRECTIONS, "direction")
        check_duration(self.retention, "retention")
        check_duration(self.max_range, "maxRange")
        check_duration(self.granularity, "granularity")
        if not isinstance(self.filters_to_asked, bool):
            raise refuse("filtersToAsked", "must be true or false", self.filters_to_asked)
        if self.wall_zone is not None and self.wall_zone != "agent":
            raise refuse("wallZone", 'can only be "agent"', self.wall_zone)

    @property
    def retention_ms(self) -> int | None:
        """``retention`` in milliseconds, or None."""
        return None if self.retention is None else parse_duration(self.retention, FACT_UNITS)

    @property
    def max_range_ms(self) -> int | None:
        """``max_range`` in milliseconds, or None."""
        return None if self.max_range is None else parse_duration(self.max_range, FACT_UNITS)

    @property
    def granularity_ms(self) -> int:
        """``granularity`` in milliseconds, or one minute when none is declared."""
        if self.granularity is None:
            return DEFAULT_GRANULARITY_MS
        return parse_duration(self.granularity, FACT_UNITS)


def period_fact_problem(window: TimeRange, facts: Facts, now: Instant) -> TimeRefusal | None:
    """The first fact ``window`` breaks, or None (docs/time.md#facts-checked-against-a-range).

    In order: ``direction: past`` and ``from > now`` → ``time-future`` (a range beginning
    exactly at now passes); ``direction: future`` and ``to ≤ now`` → ``time-past`` (a range
    still running at now passes); ``to ≤ now - retention`` → ``beyond-retention``; reach >
    ``maxRange`` → ``over-max-range``.
    """
    start, end = window.bounds()
    if facts.direction == "past" and start > now.ns:
        return "time-future"
    if facts.direction == "future" and end <= now.ns:
        return "time-past"
    retention = facts.retention_ms
    if retention is not None and end <= now.ns - retention * NS_PER_MS:
        return "beyond-retention"
    cap = facts.max_range_ms
    if cap is not None and window.reach_ns > cap * NS_PER_MS:
        return "over-max-range"
    return None


def partly_beyond_retention(window: TimeRange, facts: Facts, now: Instant) -> bool:
    """Whether ``window`` begins before ``now - retention`` but ends after it
    (docs/time.md#one-conversion-per-window-and-tool step 2): the call still runs, and its row says
    so."""
    retention = facts.retention_ms
    if retention is None:
        return False
    edge = now.ns - retention * NS_PER_MS
    start, end = window.bounds()
    return start < edge < end


def form_cap(form: Form, facts: Facts) -> str | None:
    """The cap that applies to one form: its own ``maxRange``, else the period's."""
    return form.max_range if form.max_range is not None else facts.max_range


def tool_facts(forms: Sequence[Form], facts: Facts) -> Facts:
    """The facts that judge a window for the tool as a whole
    (docs/time.md#facts-checked-against-a-range).

    When no form has its own cap, the declared facts. Otherwise the cap is the largest among
    the forms (each form's own, or the period's when it has none), and there is no cap at all
    as soon as one form has none.
    """
    if not any(form.max_range is not None for form in forms):
        return facts
    caps = [cap for cap in (form_cap(form, facts) for form in forms) if cap is not None]
    if len(caps) < len(forms):
        return msgspec.structs.replace(facts, max_range=None)
    # max keeps the first of equal caps: the first form's spelling.
    largest = max(caps, key=lambda cap: parse_duration(cap, FACT_UNITS))
    return msgspec.structs.replace(facts, max_range=largest)


def form_facts(form: Form, facts: Facts) -> Facts:
    """The facts that judge a window the model sent through ``form``: the declared facts with
    the cap replaced by the form's own, if it has one
    (docs/time.md#facts-checked-against-a-range)."""
    return msgspec.structs.replace(facts, max_range=form_cap(form, facts))
