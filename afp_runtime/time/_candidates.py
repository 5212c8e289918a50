"""What the resolver offers: ``TimeCandidate`` windows and the ``Resolution`` of a mention
(docs/time.md#the-resolver). ``resolve.py`` draws them; ``policy.py`` chooses among them.

Wire shapes (JSON keys camelCase; every key of a candidate is always written):

* ``TimeCandidate {window, range, zone, grain, said, implied, anchor, notes, reading, parse}``

  - ``window``: ``{kind: "range"}``, or ``{kind: "lookback", duration}`` for a span ending now
    (``duration`` is ``<count><m|h|d|w>`` as typed: ``40m``, ``24h``, ``2d``, ``1w``);
  - ``range``: ``{from, to}``, half-open strict instants written in the offset the person
    intended: the zone's offset at each end, the said offset, or ``now``'s offset for a
    look-back;
  - ``zone``: the mention's zone name (docs/time.md#zone-names-and-the-database): the zone typed or
    read from a place, the mapped
    zone of an abbreviation, otherwise the clock's zone (also with a said numeric offset);
  - ``grain``: ``second | minute | hour | day | week``; the finest unit typed (a range: the
    finer of its two sides), a look-back's unit;
  - ``said``: ``[]`` (always empty when filed, docs/time.md#nothing-is-settled-without-the-person);
  - ``implied``: what the reader had to assume, in this order: ``date`` (no date or day word
    at all: the clock's date), ``year``, ``month``, ``zone`` (no zone typed: the clock's);
  - ``anchor``: ``"message"``;
  - ``notes``: objects tagged on ``kind``, in this order: ``{kind: "century-implied"}``,
    ``{kind: "zone-read", as: "place"}``, ``{kind: "offset-said"}``,
    ``{kind: "dst-overlap" | "dst-gap", which: "earlier" | "later", end?: true}`` (the start's,
    then the end's, which carries ``end: true``), ``{kind: "end-of-grain"}``;
  - ``reading``: the tags of the readings chosen, each present only when the resolver chose
    it: ``{dateOrder?: MDY | DMY | YMD | MD | DM, meridiem?: am | pm, endMeridiem?: am | pm,
    year?: current | previous, abbreviation?: zone | offset}``;
  - ``parse``: the index of the parse in the mention's ``parses``.

* ``Resolution {candidates, needsZone, unsupported}`` — all candidates of a mention, parse by
  parse; ``needsZone`` when a parse could not be resolved for want of a zone; ``unsupported``
  when a parse holds a part the resolver does not interpret.

"""

from __future__ import annotations

from typing import Final, Literal, get_args

import msgspec

from afp_runtime.time._parts import Meridiem
from afp_runtime.time._ranges import TimeRange
from afp_runtime.time._wire import Wire

Grain = Literal["second", "minute", "hour", "day", "week"]
"""A candidate's unit of precision."""

Implied = Literal["date", "year", "month", "zone"]
"""What a candidate had to assume because the words did not say it."""

IMPLIED: Final[tuple[str, ...]] = get_args(Implied)
"""The ``implied`` values, in the order a candidate lists them."""

DateOrderTag = Literal["MDY", "DMY", "YMD", "MD", "DM"]
"""The order in which the fields of a numeric date were read."""

YearTag = Literal["current", "previous"]
"""The year given to a date typed without one: the clock's, or the one before."""

AbbreviationTag = Literal["zone", "offset"]
"""An abbreviation read as its mapped zone, or as the fixed offset it stands for."""

Which = Literal["earlier", "later"]
"""Which reading of a repeated or skipped local time
(docs/time.md#local-times-around-clock-changes)."""


# --- the window kind --------------------------------------------------------------------------


class RangeWindow(Wire, frozen=True, kw_only=True, tag_field="kind", tag="range"):
    """A candidate that is a plain range: wire ``{kind: "range"}``."""


class LookbackWindow(Wire, frozen=True, kw_only=True, tag_field="kind", tag="lookback"):
    """A candidate that is a span ending now: wire ``{kind: "lookback", duration}``.

    Attributes:
        duration: the span as typed, ``<count><m|h|d|w>`` (``40m``, ``24h``).
    """

    duration: str


CandidateWindow = RangeWindow | LookbackWindow
"""A candidate's ``window``."""


# --- notes ------------------------------------------------------------------------------------


class EndOfGrain(Wire, frozen=True, kw_only=True, tag_field="kind", tag="end-of-grain"):
    """The end covers the whole unit of what was typed: wire ``{kind: "end-of-grain"}``."""


class CenturyImplied(Wire, frozen=True, kw_only=True, tag_field="kind", tag="century-implied"):
    """A two-digit year got the clock's century: wire ``{kind: "century-implied"}``."""


class OffsetSaid(Wire, frozen=True, kw_only=True, tag_field="kind", tag="offset-said"):
    """The instants use a numeric offset the person typed: wire ``{kind: "offset-said"}``."""


class ZoneReadNote(Wire, frozen=True, kw_only=True, tag_field="kind", tag="zone-read"):
    """The zone was read from the words: wire ``{kind: "zone-read", as: "place"}``.

    Attributes:
        as_: wire ``as``; ``place`` (``London time`` → ``Europe/London``).
    """

    as_: Literal["place"] = msgspec.field(name="as")


class DstOverlap(Wire, frozen=True, kw_only=True, tag_field="kind", tag="dst-overlap"):
    """A local time that happens twice, read one way: wire ``{kind: "dst-overlap", which,
    end?}``.

    Attributes:
        which: ``earlier`` (the first occurrence) or ``later``.
        end: ``true`` when the time is the range's end (absent for the start or a point).
    """

    which: Which
    end: bool = False


class DstGap(Wire, frozen=True, kw_only=True, tag_field="kind", tag="dst-gap"):
    """A local time that never happens, read one way: wire ``{kind: "dst-gap", which, end?}``.

    Attributes:
        which: ``earlier`` (read with the offset in force after the change) or ``later``
            (with the one before it: the time pushed forward), as ``read_wall`` names them.
        end: ``true`` when the time is the range's end.
    """

    which: Which
    end: bool = False


CandidateNote = EndOfGrain | CenturyImplied | OffsetSaid | ZoneReadNote | DstOverlap | DstGap
"""One of a candidate's ``notes``."""


class ReadingTags(Wire, frozen=True, kw_only=True):
    """The readings the resolver chose for a candidate: wire ``{dateOrder?, meridiem?,
    endMeridiem?, year?, abbreviation?}``.

    Attributes:
        date_order: wire ``dateOrder``; how a numeric date's fields were read.
        meridiem: AM or PM given to a time of day typed without it (a range's start).
        end_meridiem: wire ``endMeridiem``; AM or PM given to a range's unmarked end.
        year: ``current`` or ``previous`` for a date typed without a year.
        abbreviation: ``zone`` or ``offset`` for a mapped abbreviation.
    """

    date_order: DateOrderTag | None = None
    meridiem: Meridiem | None = None
    end_meridiem: Meridiem | None = None
    year: YearTag | None = None
    abbreviation: AbbreviationTag | None = None


class TimeCandidate(Wire, frozen=True, kw_only=True):
    """One window the words may mean (docs/time.md#the-resolver); every key is written (module
    docstring).

    Attributes:
        window: ``{kind: "range"}`` or ``{kind: "lookback", duration}``.
        range: the half-open range, written in the offset the person intended.
        zone: the mention's zone name.
        grain: the unit of precision.
        said: always empty when filed (docs/time.md#nothing-is-settled-without-the-person).
        implied: what had to be assumed (``date``, ``year``, ``month``, ``zone``).
        anchor: ``"message"``: relative words count from the clock's ``now``.
        notes: notes on how the window was drawn.
        reading: the reading tags.
        parse: the index of the parse it came from.
    """

    window: CandidateWindow
    range: TimeRange
    zone: str
    grain: Grain
    said: tuple[str, ...]
    implied: tuple[Implied, ...]
    anchor: Literal["message"]
    notes: tuple[CandidateNote, ...]
    reading: ReadingTags
    parse: int

    @property
    def lookback(self) -> str | None:
        """The duration when the candidate is a span ending now, else None."""
        return self.window.duration if isinstance(self.window, LookbackWindow) else None


class Resolution(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What the resolver made of one mention: wire ``{candidates, needsZone, unsupported}``.

    Attributes:
        candidates: every candidate, parse by parse, in the order of the module docstring.
        needs_zone: wire ``needsZone``; a parse could not be resolved for want of a zone.
        unsupported: a parse holds a part the resolver does not interpret.
    """

    candidates: tuple[TimeCandidate, ...] = ()
    needs_zone: bool = False
    unsupported: bool = False
