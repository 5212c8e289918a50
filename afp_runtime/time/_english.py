"""The English rule reader ``afp/english`` 1.0.0 (``en-US``, kind ``rule``;
docs/time.md#what-the-english-reader-understands).

It finds the words of a message that refer to a time and says what they contain, as
``TimeParts``; it never decides what they mean. Each readable expression gives one mention
with one parse. An expression the reader cannot read *whole* gives one mention marked
``problem: "unreadable"`` whose quote covers all of it — qualifying words included — and never a
reading of a part of it. Words that do not refer to a time give nothing. Mentions come in text
order and never overlap.

How it works: the text is cut into tokens (times, dates, day words, spans, zones, joiners,
glue words and unreadable phrases; ``_english_tokens.py``, with the words and patterns of
``_english_words.py``), tokens are grouped into expressions (a point — date and/or time of day
and a zone —, a two-sided range, or a span ending now; ``_english_parser.py``), and here
qualifying words before and after each expression are looked for in the text, and an unreadable
expression swallows a neighbour it touches (``yesterday since 8 AM``).

Readable (docs/time.md#what-the-english-reader-understands), with the shapes of ``parts.py``:

* ISO dates, instants and intervals (``2026-10-09``, ``2026-10-09T08:00-07:00``,
  ``…T08:00Z/…T09:00Z``); a wall of an ISO instant has ``clock: "24h"`` and its offset is the
  ``zoneToken`` (``Z``, ``-07:00``).
* numeric dates with ``/`` (``10/09/26``, ``10/9``, ``2026/10/09``); dates with a month name
  (``Sept 29``, ``11 September``, ``September 29, 2026``, ``29th of Sep``, ``May 3``,
  ``oct 9``).
* times of day with minutes or AM/PM (``8 AM``, ``8:40``, ``20:40``, ``8:40 p.m.``,
  ``8:40:15``).
* ranges joined by ``to``, ``until``, ``till``, ``through``, ``thru``, a hyphen or dash, ``..``,
  ``/`` (between two ISO values only), or ``and`` after ``between``; ``from`` may open a range.
  A lone hour (``8``) is read only as the start of a range whose end carries AM/PM.
* a zone after a time, date or day word: IANA names, ``UTC±hh:mm``, the closed list of
  abbreviations, ``<Place> time``, ``(PST)``, ``in Asia/Kolkata``.
* ``today``, ``yesterday``, ``tomorrow``; spans ending now (``last 40 minutes``,
  ``past 6h``, ``the last hour``, ``the past week``).

Readings settled here (beyond the lists of docs/time.md#what-the-english-reader-understands):

* A zone token on its own (``I'm in PST``, ``London time``) is no mention:
  docs/time.md#what-the-english-reader-understands reads a zone
  only after a time, date or day word. A zone after a span ending now is not taken (a span
  never takes a zone) and is left out of the quote.
* ``Pacific``, ``Eastern``, ``Central`` and ``Mountain`` after a time are zone tokens as typed
  (the resolver asks for the zone). ``local time``, ``my time`` and ``our time`` after a time
  belong to the quote but give no ``zoneToken`` (the person's own zone is the clock's);
  ``your time``, ``server time`` and ``system time`` are zone tokens as typed. An abbreviation
  followed by ``time`` (``UTC time``) keeps the abbreviation alone as the token.
* ``15:40Z`` reads as a 24-hour wall with zone token ``Z``. ``08:00-07:00`` is a range, never
  a wall with an offset (offsets are read only inside ISO instants).
* ``clock: "24h"`` marks hours 0 and 13 to 23 and hours written ``00`` to ``09`` with minutes
  (``08:00``); ``10:30`` and ``8:40`` stay open to AM and PM.
* A fraction of a second in an ISO instant is dropped (the wall names its whole second).
* Spans ending now: with a count, ``last``/``past`` and the units ``minutes|mins|min|m``,
  ``hours|hrs|hr|h``, ``days|d``, ``weeks|wks|wk|w``; without a count, ``past`` or
  ``the last`` with minute/hour/day/week, and ``last hour``. ``the`` is part of the quote.
  ``last minute`` and ``at the last minute`` (idioms) and ``last second`` give nothing;
  ``last day``, ``last week`` (calendar), a count of 0, above 100000 or with a fraction, a
  compound (``1h30m``, ``2 hours and 30 minutes``) and a span followed by ``of`` are
  unreadable.
* Unreadable besides docs/time.md#what-the-english-reader-understands's list:
  ``this``/``next``/``previous``/``coming`` with a unit
  (``this hour``, ``the following day``), ``the first 10 minutes``, ``the week of``,
  ``the other day``, ``day after tomorrow``, ``midday``, ``overnight``, ``lunchtime``,
  ``end of day``/``EOD``/``COB``, ``in the morning``, ``at night``, ``8 in the morning``,
  times in words (``eight AM``, ``half past 8``), ``8ish``, ``24:00``, a weekday written
  with a date (``Friday, October 9`` — the whole expression), a month with a year and no day
  (``September 2026``), ``Sept 8 AM`` (a month whose number is followed by AM/PM), a day
  word or date ``at`` a lone hour (``today at 8``), and a weekday abbreviation before a date
  (``Fri Oct 9``).
* A month with no day is quoted without the word before it (``in September`` → quote
  ``September``), since ``in`` qualifies nothing.
* More qualifying words: ``about`` (before a time of day), ``roughly``, ``mid``/``mid-``,
  ``the end/start/beginning/middle of``, ``on or before/after``; following: ``or thereabouts``,
  ``or sooner``, ``until/till/through now``, ``to present``. ``from`` and ``between`` qualify
  only a time of day left without its other side (``from 8 AM``); ``logs from yesterday``
  reads ``yesterday``.
* Not time words: a lone number (``since 8``, ``8 to 9``, ``between 8 and 9``), a part of the
  day on its own (``Good morning``, ``good night``), ``weekend``/``weekends`` without
  ``this``/``last``/``next``/``the``/``coming``/``past``, ``24/7``, a two-field numeric date
  that no order makes a month and day (``50/50``), an ordinal followed by another noun
  (``the 3rd server``), the lower-case ``may`` and ``march`` unless a day number follows that
  is not followed by a noun (``may 3`` is a date, ``may 2 weeks`` nothing), and ``May``
  followed by a pronoun. ``April``, ``May``, ``June``, ``August``, ``March`` and the
  abbreviations, without a day, count as a month only after a word such as ``in``, ``since``,
  ``during``, ``of``, ``last``, or with a year; the other full month names always do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from afp_runtime.time._english_parser import Node, Parser
from afp_runtime.time._english_tokens import tokenize
from afp_runtime.time._english_words import rx
from afp_runtime.time._parts import RangeSide, TimeParts, Wall
from afp_runtime.time._reader import Mention, Reading

ENGLISH_READER_ID: Final[str] = "afp/english"
ENGLISH_READER_VERSION: Final[str] = "1.0.0"
ENGLISH_READER_LOCALE: Final[str] = "en-US"


# --- qualifying words (docs/time.md#what-the-english-reader-understands)
# ------------------------------------------------------------------

_QUALIFIER_BEFORE = rx(
    r"(?:(?<!\w)(?:since|before|after|by|around|circa|approx\.?|approximately|roughly|until|till|"
    r"til|earlier(?:\s+than)?|later(?:\s+than)?|sooner\s+than|early|late|within|past|beyond|"
    r"prior\s+to|up\s+to|(?:no|not)\s+(?:later|earlier|sooner)\s+than|as\s+of|"
    r"(?:starting|beginning)(?:\s+(?:at|from|on))?|(?:the\s+)?(?:end|start|beginning|middle)\s+of|"
    r"(?:on|at)\s+or\s+(?:before|after))|(?<!\w)mid-?|~)\s*$"
)
_QUALIFIER_BEFORE_TIME = rx(r"(?<!\w)(?:from|between|about|at\s+about)\s*$")
_QUALIFIER_AFTER = rx(
    r"(?:\s?-?\s?ish(?!\w)|\s+ago(?!\w)|\s+onwards?(?!\w)|\s+or\s+(?:so|thereabouts)(?!\w)"
    r"|\s+(?:or|and)\s+(?:later|earlier|after|before|sooner)(?!\w)"
    r"|\s+at\s+the\s+(?:latest|earliest)(?!\w)"
    r"|\s+(?:to|until|till|til|through|thru)\s+(?:now|present)(?!\w))"
)
_MERGE_GAP = rx(r"[ \t]*(?:(?:at|on|in|of|from)[ \t]+)?")


# --- from expressions to mentions -------------------------------------------------------------


def _side_parts(node: Node) -> RangeSide:
    if node.look is not None:
        return RangeSide(relative=node.look)
    if node.num is not None:
        return RangeSide(wall=Wall(h=node.num))
    return RangeSide(date=node.date, wall=node.wall, zone_token=node.zone, relative=node.relative)


def _parts(node: Node) -> TimeParts:
    if node.look is not None:
        return TimeParts(relative=node.look)
    if node.sides is not None:
        return TimeParts(
            date=node.date,
            relative=node.relative,
            zone_token=node.zone,
            range_of=(_side_parts(node.sides[0]), _side_parts(node.sides[1])),
        )
    return TimeParts(date=node.date, wall=node.wall, zone_token=node.zone, relative=node.relative)


@dataclass(slots=True)
class _Span:
    start: int
    end: int
    bad: bool
    parts: TimeParts | None


def _with_qualifiers(text: str, node: Node, start: int, end: int, floor: int) -> _Span:
    bad = node.bad
    while True:
        before = _QUALIFIER_BEFORE.search(text, floor, start)
        if before is None and node.sides is None and node.has_t:  # a point with a time of day
            before = _QUALIFIER_BEFORE_TIME.search(text, floor, start)
        if before is None or before.start() == start:
            break
        start, bad = before.start(), True
    while True:
        after = _QUALIFIER_AFTER.match(text, end)
        if after is None or after.end() == end:
            break
        end, bad = after.end(), True
    return _Span(start, end, bad, None if bad else _parts(node))


def _merged(text: str, spans: list[_Span]) -> list[_Span]:
    """An unreadable expression swallows a neighbour it touches (``yesterday since 8 AM``)."""
    out: list[_Span] = []
    for span in spans:
        if out:
            last = out[-1]
            gap = _MERGE_GAP.fullmatch(text, last.end, span.start)
            if gap is not None and (last.bad or span.bad):
                out[-1] = _Span(last.start, span.end, True, None)
                continue
        out.append(span)
    return out


def read_english(text: str) -> Reading:
    """The mentions of time in ``text``, read by the English rules (module docstring).

    Args:
        text: the message exactly as typed.

    Returns:
        One mention per time expression, in text order; no mention for text that names no
        time. A readable expression has exactly one parse; an unreadable one has none and
        ``problem: "unreadable"``.
    """
    tokens = tokenize(text)
    spans: list[_Span] = []
    for node in Parser(text, tokens).expressions():
        start = tokens[node.start].start
        end = node.char_end if node.char_end is not None else tokens[node.end - 1].end
        if spans and start < spans[-1].end:
            # Inside words a qualifier or a span's tail already took: part of that expression.
            last = spans[-1]
            spans[-1] = _Span(last.start, max(last.end, end), True, None)
            continue
        floor = spans[-1].end if spans else 0
        spans.append(_with_qualifiers(text, node, start, end, floor))
    mentions = []
    for span in _merged(text, spans):
        quote = text[span.start : span.end]
        if span.parts is None:
            mentions.append(Mention(quote=quote, parses=(), problem="unreadable"))
        else:
            mentions.append(Mention(quote=quote, parses=(span.parts,)))
    return Reading(mentions=tuple(mentions))


class EnglishReader:
    """The English rule reader: ``afp/english`` 1.0.0, ``en-US``, kind ``rule``
    (docs/time.md#what-the-english-reader-understands).

    It holds no state; ``read`` is a pure function of the text.
    """

    id: Final[str] = ENGLISH_READER_ID
    version: Final[str] = ENGLISH_READER_VERSION
    locale: Final[str] = ENGLISH_READER_LOCALE
    kind: Final[Literal["rule"]] = "rule"

    def read(self, text: str) -> Reading:
        """The mentions of time in ``text`` (see ``read_english``)."""
        return read_english(text)
