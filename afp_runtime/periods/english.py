"""The English rule reader ``afp/english`` 1.0.0 (``en-US``, kind ``rule``;
docs/time.md#what-the-english-reader-understands).

It finds the words of a message that refer to a time and says what they contain, as
``TimeParts``; it never decides what they mean. Each readable expression gives one mention
with one parse. An expression the reader cannot read *whole* gives one mention marked
``problem: "unreadable"`` whose quote covers all of it — qualifying words included — and never a
reading of a part of it. Words that do not refer to a time give nothing. Mentions come in text
order and never overlap.

How it works: the text is cut into tokens (times, dates, day words, spans, zones, joiners,
glue words and unreadable phrases), tokens are grouped into expressions (a point — date and/or
time of day and a zone —, a two-sided range, or a span ending now), qualifying words before and
after each expression are looked for in the text, and an unreadable expression swallows a
neighbour it touches (``yesterday since 8 AM``).

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

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from afp_runtime.periods.parts import (
    MAX_LOOKBACK_COUNT,
    MAX_ZONE_TOKEN,
    DateParts,
    FixedDate,
    Meridiem,
    NumericDate,
    RangeSide,
    Relative,
    RelativeUnit,
    TimeParts,
    Wall,
)
from afp_runtime.periods.reader import Mention, Reading

ENGLISH_READER_ID: Final[str] = "afp/english"
ENGLISH_READER_VERSION: Final[str] = "1.0.0"
ENGLISH_READER_LOCALE: Final[str] = "en-US"

_I = re.IGNORECASE
_DG = "[0-9]"

# --- vocabulary -------------------------------------------------------------------------------

_MONTH_NUMBERS: Final[dict[str, int]] = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sept": 9,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
# Full names first so that ``march`` wins over ``mar`` and ``sept`` over ``sep``.
_MONTHS = "|".join(sorted(_MONTH_NUMBERS, key=lambda name: (-len(name), name)))
_MONTH = rf"(?P<mon>{_MONTHS})(?![a-z])\.?"
# Full month names that are hardly ever anything else; the others (and every abbreviation)
# count as a month without a day only in a context that says so.
_PLAIN_MONTHS: Final[frozenset[str]] = frozenset(
    {"january", "february", "july", "september", "october", "november", "december"}
)

_SMALL_NUMBERS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    "fifteen|sixteen|seventeen|eighteen|nineteen"
)
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_UNITS_DIGIT = "one|two|three|four|five|six|seven|eight|nine"
_NUMWORD = rf"(?:(?:{_TENS})(?:[- ](?:{_UNITS_DIGIT}))?|{_SMALL_NUMBERS}|hundred|dozen)(?![a-z])"
_NUMWORD12 = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)(?![a-z])"
_FEW = r"(?:a\s+few|few|several|a\s+couple(?:\s+of)?|couple(?:\s+of)?|many|some)"
_UNIT_WORDS = (
    r"(?:minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|seconds?|secs?|months?|years?|yrs?|"
    r"quarters?|decades?|fortnights?)"
)
_UNITS = (
    r"(?:minutes?|mins?|min|hours?|hrs?|hr|days?|weeks?|wks?|wk|seconds?|secs?|sec|months?|"
    r"mos|mo|years?|yrs?|yr|quarters?|decades?|fortnights?|[mhdwsy])"
)
_GOOD_UNITS: Final[dict[str, RelativeUnit]] = {
    "minute": "minute",
    "minutes": "minute",
    "min": "minute",
    "mins": "minute",
    "m": "minute",
    "hour": "hour",
    "hours": "hour",
    "hr": "hour",
    "hrs": "hour",
    "h": "hour",
    "day": "day",
    "days": "day",
    "d": "day",
    "week": "week",
    "weeks": "week",
    "wk": "week",
    "wks": "week",
    "w": "week",
}
_MERIDIEM = r"(?:[ap]\.\s?m\.?|[ap]m(?![a-z]))"
_POD = r"(?:morning|afternoon|evening|night)"
_NAMED_POD = (
    r"(?:(?:this|yesterday|tomorrow)\s+(?:morning|afternoon|evening|night)|last\s+(?:night|evening)"
    r"|tonight|in\s+the\s+(?:morning|afternoon|evening)|at\s+night)"
)

_ABBREVIATIONS: Final[tuple[str, ...]] = (
    "UTC",
    "GMT",
    "PST",
    "PDT",
    "PT",
    "MST",
    "MDT",
    "MT",
    "CST",
    "CDT",
    "CT",
    "EST",
    "EDT",
    "ET",
    "AKST",
    "AKDT",
    "HST",
    "AST",
    "ADT",
    "NST",
    "NDT",
    "BST",
    "IST",
    "CET",
    "CEST",
    "EET",
    "EEST",
    "WET",
    "WEST",
    "MSK",
    "JST",
    "KST",
    "HKT",
    "SGT",
    "AEST",
    "AEDT",
    "ACST",
    "ACDT",
    "AWST",
    "NZST",
    "NZDT",
    "SAST",
)
"""The zone abbreviations docs/time.md#what-the-english-reader-understands recognises (closed list;
upper case exactly)."""
_ABBR = "|".join(sorted(_ABBREVIATIONS, key=lambda a: (-len(a), a)))
_IANA_AREAS = (
    "Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc|US|"
    "Canada|Brazil|Chile|Mexico"
)
# Capitalised words before "time" that name no place.
_NOT_PLACES: Final[frozenset[str]] = frozenset(
    str.split(
        "Any Some Same What Which This That The These Those Each Every Next Last First Real "
        "Response Run Local Server System Standard Daylight Summer Winter Wall Down Up Our My "
        "Your Their His Her Its No Half Full Part Over Peak Prime Lead Load Wait Query Build "
        "Compile Start End Due Lunch Dinner Break Free Spare Screen Good Great Long Short "
        "Correct Right Exact Current Precise Processing Execution Boot Idle Busy Off On In At "
        "For From To By Since Until Is Was Its Another Other Reaction Travel Quiet Tea Bed "
        "Play Game Show Party Story Nap Lag Uptime Downtime Overtime Anytime Sometime Bedtime"
    )
)

# --- tokens -----------------------------------------------------------------------------------

TokKind = Literal[
    "iso",
    "date",
    "day",
    "wall",
    "badD",
    "badT",
    "badS",
    "look",
    "zone",
    "num",
    "join",
    "between",
    "from",
    "glue",
    "lparen",
    "rparen",
    "pod",
    "other",
]


@dataclass(frozen=True, slots=True)
class _Tok:
    """One token: its kind, its code-point span and what it holds."""

    kind: TokKind
    start: int
    end: int
    value: Any = None


_D_KINDS: Final[frozenset[str]] = frozenset({"date", "day", "badD"})
_T_KINDS: Final[frozenset[str]] = frozenset({"wall", "badT"})


def _rx(pattern: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_ISO = _rx(
    rf"(?P<y>{_DG}{{4}})-(?P<mo>{_DG}{{2}})-(?P<d>{_DG}{{2}})"
    rf"(?:T(?P<h>{_DG}{{2}}):(?P<mi>{_DG}{{2}})(?::(?P<s>{_DG}{{2}})(?:\.{_DG}{{1,9}})?)?"
    rf"(?P<z>Z|[+-]{_DG}{{2}}(?::?{_DG}{{2}})?)?)?(?![0-9A-Za-z_:])",
    0,
)
_BAD_SPANS: Final[tuple[tuple[re.Pattern[str], TokKind], ...]] = (
    # N hours ago, a few days ago, a while ago
    (
        _rx(
            rf"(?:(?:[0-9]+(?:\.[0-9]+)?|{_NUMWORD}|an?|{_FEW})\s*{_UNITS}(?!\w)"
            r"|moments|a\s+(?:while|bit|moment|little\s+while)|some\s+time)\s+ago\b"
        ),
        "badS",
    ),
    # quantities in words: last two hours, past few days
    (
        _rx(
            r"(?:the\s+)?(?:last|past|previous|prior|preceding|next|coming|following|upcoming|first)"
            rf"\s+(?:{_NUMWORD}|{_FEW})\s+{_UNIT_WORDS}(?!\w)"
        ),
        "badS",
    ),
    # previous 7 days, next 2h, the next hour, next week, the first 10 minutes
    (
        _rx(
            r"(?:the\s+)?(?:(?:previous|prior|preceding|next|coming|following|upcoming)\s+"
            rf"(?:[0-9]+(?:\.[0-9]+)?\s*{_UNITS}|{_UNIT_WORDS})"
            rf"|first\s+[0-9]+(?:\.[0-9]+)?\s*{_UNITS})(?!\w)"
        ),
        "badS",
    ),
    # compound spans: last 1h30m
    (_rx(r"(?:the\s+)?(?:last|past|next)\s+[0-9]+\s*[a-z]+[0-9]+[a-z]*(?!\w)"), "badS"),
    (_rx(r"this\s+past\s+(?:weekend|week|month|year)(?!\w)"), "badD"),
    (_rx(r"(?:(?:this|last|next|past|the|coming)\s+)weekends?(?!\w)"), "badD"),
    (_rx(r"(?:the\s+)?(?:week|month|weekend)\s+of(?!\w)"), "badD"),
    (_rx(r"(?:the\s+)?day\s+(?:before\s+yesterday|after\s+tomorrow)(?!\w)"), "badD"),
    (_rx(r"the\s+other\s+day(?!\w)"), "badD"),
    # 8 in the morning, 8:30 tonight
    (_rx(rf"[0-9]{{1,2}}(?::[0-9]{{2}})?\s+{_NAMED_POD}(?!\w)"), "badT"),
    (_rx(_NAMED_POD + r"(?!\w)"), "badD"),
    (_rx(r"(?:overnight)(?!\w)"), "badD"),
    (
        _rx(
            r"(?:noon|midnight|mid-?day|lunch\s?time|end\s+of\s+(?:the\s+)?(?:business\s+)?day)(?!\w)"
        ),
        "badT",
    ),
    (_rx(r"close\s+of\s+business(?!\w)"), "badT"),
    (_rx(r"(?:EOD|COB)(?![A-Za-z0-9_])", 0), "badT"),
    (
        _rx(
            r"(?:(?:last|this|next|past|coming|every)\s+)?"
            r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?(?!\w)"
        ),
        "badD",
    ),
    (
        _rx(
            r"(?:Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun)\.?,?"
            rf"(?=\s+(?:[0-9]|(?i:{_MONTHS})(?![a-z])))",
            0,
        ),
        "badD",
    ),
    (_rx(rf"(?:[0-9]{{1,2}}|{_NUMWORD12})\s*o['’]?\s?clock(?!\w)"), "badT"),
    (
        _rx(
            rf"(?:half|quarter)\s+(?:past|to|after)\s+(?:[0-9]{{1,2}}|{_NUMWORD12})"
            rf"(?:\s?{_MERIDIEM})?(?![0-9])"
        ),
        "badT",
    ),
    (_rx(rf"{_NUMWORD12}\s?{_MERIDIEM}"), "badT"),
    (_rx(rf"[0-9]{{1,2}}(?::[0-9]{{2}})?\s?(?:{_MERIDIEM})?\s?-?ish(?!\w)"), "badT"),
)
_LOOK_COUNT = _rx(
    rf"(?:(?P<the>the)\s+)?(?:last|past)\s+(?P<n>[0-9]+(?:\.[0-9]+)?)\s*(?P<u>{_UNITS})(?!\w)"
)
_LOOK_WORD = _rx(
    r"(?:(?P<the>the)\s+)?(?P<w>last|past|this|next|previous|coming|current)\s+"
    r"(?P<u>minute|hour|day|week|month|year|quarter|decade|fortnight|second)(?!\w)"
)
_LOOK_TAIL = _rx(
    rf"\s+(?:and\s+(?:[0-9]+|{_NUMWORD}|an?)\s*{_UNITS}(?!\w)"
    r"|of(?:\s+(?:the\s+)?(?:month|week|year|day|quarter|hour))?(?!\w))"
)
_NUMERIC_DATE = _rx(
    rf"(?P<a>{_DG}{{1,4}})/(?P<b>{_DG}{{1,2}})(?:/(?P<c>{_DG}{{4}}|{_DG}{{2}}))?(?![\w/]|[.:][0-9])"
)
_MONTH_DAY = _rx(
    rf"{_MONTH}\s+(?P<day>{_DG}{{1,2}})(?:st|nd|rd|th)?(?!\w|:[0-9]|\s?{_MERIDIEM})"
    rf"(?:,?\s+(?P<year>{_DG}{{4}})(?![\w:]))?"
)
_DAY_MONTH = _rx(
    rf"(?:(?P<the>the)\s+)?(?P<day>{_DG}{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}"
    rf"(?:,?\s+(?P<year>{_DG}{{4}})(?![\w:]))?"
)
_MONTH_ONLY = _rx(rf"{_MONTH}(?:,?\s+(?P<year>{_DG}{{4}})(?![\w:]))?")
_MONTH_CONTEXT = _rx(
    r"(?<!\w)(?:in|during|since|of|last|this|next|early|late|mid-?|until|till|before|after|by|"
    r"through|from|to|around|throughout|for|end\s+of|start\s+of|beginning\s+of)\s*$"
)
_AT_BEFORE = _rx(r"(?<!\w)at\s+$")
_DIGIT_AFTER = _rx(r"\s+[0-9]")
_HOUR_AFTER = _rx(rf"\s+[0-9]{{1,2}}\s?{_MERIDIEM}")
_MAY_VERB = _rx(r"\s+(?:I|we|you|he|she|it|they)(?!\w)", 0)
_WALL_HM = _rx(
    rf"(?P<h>{_DG}{{1,2}}):(?P<m>{_DG}{{2}})(?::(?P<s>{_DG}{{2}}))?"
    rf"(?:\s?(?P<mer>{_MERIDIEM})|(?P<z>Z)(?![\w:]))?"
)
_WALL_H = _rx(rf"(?P<h>{_DG}{{1,2}})\s?(?P<mer>{_MERIDIEM})")
_WALL_END = _rx(r"[\w:]|\.[0-9]")
_ORDINAL = _rx(rf"(?:(?P<the>the)\s+)?(?P<day>{_DG}{{1,2}})(?:st|nd|rd|th)(?!\w)")
_ORDINAL_NEXT = _rx(r"\s+(?P<w>[A-Za-z]+)")
_ORDINAL_FOLLOWERS: Final[frozenset[str]] = frozenset(
    str.split(
        "of at and or to until till through thru in from since before after between on this "
        "last next"
    )
)
_DAY_WORD = _rx(r"(?P<w>today|yesterday|tomorrow)(?!\w)")
_DAY_OFFSETS: Final[dict[str, int]] = {"today": 0, "yesterday": -1, "tomorrow": 1}
_ZONE_IANA = _rx(rf"(?:{_IANA_AREAS})/[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)*(?![\w/])", 0)
_ZONE_OFFSET = _rx(rf"(?:UTC|GMT)\s?[+\-−]\s?{_DG}{{1,2}}(?::?{_DG}{{2}})?(?![0-9])")
_ZONE_ABBR = _rx(rf"(?P<z>{_ABBR})(?![A-Za-z0-9_])(?:\s+[Tt]ime(?!\w))?", 0)
_ZONE_PLACE = _rx(r"(?P<first>[A-Z][a-z]+)(?:[ \-][A-Z][a-z]+){0,2}\s+[Tt]ime(?!\w)", 0)
_ZONE_REGION = _rx(r"(?:Pacific|Eastern|Central|Mountain)(?![A-Za-z0-9_])", 0)
_ZONE_OWN = _rx(r"(?:local|my|our)\s+time(?!\w)")
_ZONE_OTHER = _rx(r"(?:your|server|system)\s+time(?!\w)")
_NUM = _rx(rf"(?P<n>{_DG}{{1,2}})(?![\w:/]|\.[0-9])")
_JOINERS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (_rx(r"(?:to|until|till|til|through|thru|and)(?!\w)"), "word"),
    (_rx(r"\.\.(?!\.)"), "dotdot"),
    (_rx(r"[-–—−]"), "dash"),
    (_rx(r"/"), "slash"),
)
_OPENER = _rx(r"(?P<w>between|from)(?!\w)")
_GLUE = _rx(r"(?:,|@|(?:at|on|in|of)(?!\w))")
_POD_WORD = _rx(rf"{_POD}s?(?!\w)")
_OTHER = _rx(r"\w+|\S")
_SPACE = _rx(r"\s+")

# --- qualifying words (docs/time.md#what-the-english-reader-understands)
# ------------------------------------------------------------------

_QUALIFIER_BEFORE = _rx(
    r"(?:(?<!\w)(?:since|before|after|by|around|circa|approx\.?|approximately|roughly|until|till|"
    r"til|earlier(?:\s+than)?|later(?:\s+than)?|sooner\s+than|early|late|within|past|beyond|"
    r"prior\s+to|up\s+to|(?:no|not)\s+(?:later|earlier|sooner)\s+than|as\s+of|"
    r"(?:starting|beginning)(?:\s+(?:at|from|on))?|(?:the\s+)?(?:end|start|beginning|middle)\s+of|"
    r"(?:on|at)\s+or\s+(?:before|after))|(?<!\w)mid-?|~)\s*$"
)
_QUALIFIER_BEFORE_TIME = _rx(r"(?<!\w)(?:from|between|about|at\s+about)\s*$")
_QUALIFIER_AFTER = _rx(
    r"(?:\s?-?\s?ish(?!\w)|\s+ago(?!\w)|\s+onwards?(?!\w)|\s+or\s+(?:so|thereabouts)(?!\w)"
    r"|\s+(?:or|and)\s+(?:later|earlier|after|before|sooner)(?!\w)"
    r"|\s+at\s+the\s+(?:latest|earliest)(?!\w)"
    r"|\s+(?:to|until|till|til|through|thru)\s+(?:now|present)(?!\w))"
)
_MERGE_GAP = _rx(r"[ \t]*(?:(?:at|on|in|of|from)[ \t]+)?")


# --- the tokenizer ----------------------------------------------------------------------------


def _meridiem(text: str | None) -> Meridiem | None:
    if text is None:
        return None
    return "am" if text.lower().startswith("a") else "pm"


def _wall_of(h_text: str, m_text: str | None, s_text: str | None, mer: str | None) -> Wall | None:
    """A ``Wall`` for typed digits, or None when they are not a time (``25:00``)."""
    h = int(h_text)
    m = int(m_text) if m_text is not None else None
    s = int(s_text) if s_text is not None else None
    if h > 23 or (m is not None and m > 59) or (s is not None and s > 59):
        return None
    meridiem = _meridiem(mer)
    if meridiem is not None:
        return Wall(h=h, m=m, s=s, meridiem=meridiem)
    wide = h == 0 or h >= 13 or (len(h_text) == 2 and h_text.startswith("0") and m is not None)
    return Wall(h=h, m=m, s=s, clock="24h" if wide else None)


def _iso(text: str, pos: int) -> _Tok | None:
    match = _ISO.match(text, pos)
    if match is None:
        return None
    month, day = int(match["mo"]), int(match["d"])
    if not 1 <= month <= 12 or not 1 <= day <= 31 or int(match["y"]) == 0:
        return None
    date = FixedDate(year=int(match["y"]), month=month, day=day)
    wall = None
    if match["h"] is not None:
        h, mi = int(match["h"]), int(match["mi"])
        s = int(match["s"]) if match["s"] is not None else None
        if h > 23 or mi > 59 or (s is not None and s > 59):
            return None
        wall = Wall(h=h, m=mi, s=s, clock="24h")
    return _Tok("iso", pos, match.end(), (date, wall, match["z"]))


def _bad_span(text: str, pos: int) -> _Tok | None:
    for pattern, kind in _BAD_SPANS:
        match = pattern.match(text, pos)
        if match is not None:
            return _Tok(kind, pos, match.end())
    return None


def _lookback(text: str, pos: int) -> _Tok | None:
    match = _LOOK_COUNT.match(text, pos)
    if match is not None:
        unit = _GOOD_UNITS.get(match["u"].lower())
        count_text = match["n"]
        readable = unit is not None and "." not in count_text
        count = int(count_text) if readable else 0
        if not readable or not 1 <= count <= MAX_LOOKBACK_COUNT or unit is None:
            return _Tok("badS", pos, match.end())
        return _Tok("look", pos, match.end(), Relative(unit=unit, count=count))
    match = _LOOK_WORD.match(text, pos)
    if match is None:
        return None
    word, unit_word, the = match["w"].lower(), match["u"].lower(), match["the"] is not None
    if unit_word == "second":
        return None
    if unit_word not in _GOOD_UNITS or word not in ("last", "past"):
        return _Tok("badS", pos, match.end())
    unit = _GOOD_UNITS[unit_word]
    if word == "last" and not the:
        if unit == "minute":
            return None  # "last minute" is an idiom, not a span
        if unit in ("day", "week"):
            return _Tok("badS", pos, match.end())  # a calendar day or week
    if unit == "minute" and the and _AT_BEFORE.search(text, max(0, pos - 8), pos):
        return None  # "at the last minute"
    return _Tok("look", pos, match.end(), Relative(unit=unit, count=1))


def _plausible(fields: tuple[int, ...], year_at: int | None) -> bool:
    """Whether some order of ``fields`` reads as a month and a day."""

    def md(month: int, day: int) -> bool:
        return 1 <= month <= 12 and 1 <= day <= 31

    if len(fields) == 2:
        a, b = fields
        return md(a, b) or md(b, a)
    a, b, c = fields
    if year_at == 0:
        return md(b, c)
    if year_at == 2:
        return md(a, b) or md(b, a)
    return md(a, b) or md(b, a) or md(b, c)


def _numeric_date(text: str, pos: int) -> _Tok | None:
    match = _NUMERIC_DATE.match(text, pos)
    if match is None or match.group(0) == "24/7":
        return None
    a, b, c = match["a"], match["b"], match["c"]
    if c is None:
        if len(a) > 2:
            return None
        fields: tuple[int, ...] = (int(a), int(b))
        digits: Literal[2, 4] | None = None
        year_at: int | None = None
    else:
        if len(a) == 3 or (len(a) == 4 and len(c) == 4):
            return None
        fields = (int(a), int(b), int(c))
        if len(a) == 4:
            digits, year_at = 4, 0
        elif len(c) == 4:
            digits, year_at = 4, 2
        else:
            digits, year_at = 2, None
        if year_at is not None and fields[year_at] < 1000:
            return None
    if not _plausible(fields, year_at):
        return None
    return _Tok("date", pos, match.end(), NumericDate(fields=fields, year_digits=digits))


def _month_number(name: str) -> int:
    return _MONTH_NUMBERS[name.lower()]


def _month_date(text: str, pos: int) -> _Tok | None:
    match = _MONTH_DAY.match(text, pos)
    if match is not None and match["mon"] in ("may", "march") and match["year"] is None:
        # lower case: a month only when nothing but punctuation or a time word follows
        after = _ORDINAL_NEXT.match(text, match.end())
        if after is not None and not _follows_date(after["w"]):
            return None
    if match is not None:
        day = int(match["day"])
        if not 1 <= day <= 31:
            return _Tok("badD", pos, match.end())
        year = int(match["year"]) if match["year"] else None
        if year == 0:
            return _Tok("badD", pos, match.end())
        date = FixedDate(month=_month_number(match["mon"]), day=day, year=year)
        return _Tok("date", pos, match.end(), date)
    match = _DAY_MONTH.match(text, pos)
    if match is not None and match["mon"] not in ("may", "march"):
        day = int(match["day"])
        year = int(match["year"]) if match["year"] else None
        if not 1 <= day <= 31 or year == 0:
            return _Tok("badD", pos, match.end())
        date = FixedDate(month=_month_number(match["mon"]), day=day, year=year)
        return _Tok("date", pos, match.end(), date)
    return None


def _month_only(text: str, pos: int) -> _Tok | None:
    match = _MONTH_ONLY.match(text, pos)
    if match is None:
        return None
    name = match["mon"]
    bad = _Tok("badD", pos, match.end())
    if name in ("may", "march") and match["year"] is None:
        # the verb, the noun; but "may 8 AM" is a month whose day number met AM/PM
        return bad if _HOUR_AFTER.match(text, match.end()) else None
    if match["year"] is not None or _DIGIT_AFTER.match(text, match.end()):
        # "Sept 2026", "Sept 8 AM": a number follows that is no day of the month; the
        # expression is not read, and never in part.
        return bad
    if name == "May" and _MAY_VERB.match(text, match.end()):
        return None  # "May I …"
    if name.lower() in _PLAIN_MONTHS or _MONTH_CONTEXT.search(text, max(0, pos - 24), pos):
        return bad
    return None


def _wall(text: str, pos: int) -> _Tok | None:
    match = _WALL_HM.match(text, pos)
    if match is not None:
        if match["mer"] is None and match["z"] is None and _WALL_END.match(text, match.end()):
            return None
        if match["mer"] is not None:
            h = int(match["h"])
            if not 1 <= h <= 12 or int(match["m"]) > 59:
                return _Tok("badT", pos, match.end())  # 13:00 PM, 0:30 AM
        elif int(match["h"]) == 24 and match["m"] == "00" and match["s"] in (None, "00"):
            return _Tok("badT", pos, match.end())  # 24:00
        wall = _wall_of(match["h"], match["m"], match["s"], match["mer"])
        if wall is None:
            return None
        if match["z"] is not None:
            wall = Wall(h=wall.h, m=wall.m, s=wall.s, clock="24h")
            return _Tok("wall", pos, match.end(), (wall, "Z"))
        return _Tok("wall", pos, match.end(), (wall, None))
    match = _WALL_H.match(text, pos)
    if match is not None:
        h = int(match["h"])
        if not 1 <= h <= 12:
            return _Tok("badT", pos, match.end())  # 0 AM, 13 PM
        wall = _wall_of(match["h"], None, None, match["mer"])
        return _Tok("wall", pos, match.end(), (wall, None))
    return None


def _follows_date(word: str) -> bool:
    """Whether ``word`` may follow a day number that is a date (not a noun it counts)."""
    lower = word.lower()
    return (
        lower in _ORDINAL_FOLLOWERS
        or lower in _MONTH_NUMBERS
        or re.fullmatch(r"[ap]m", lower) is not None
    )


def _ordinal(text: str, pos: int) -> _Tok | None:
    match = _ORDINAL.match(text, pos)
    if match is None or not 1 <= int(match["day"]) <= 31:
        return None
    after = _ORDINAL_NEXT.match(text, match.end())
    if after is not None and not _follows_date(after["w"]):
        return None  # "the 3rd server"
    return _Tok("badD", pos, match.end())


def _day_word(text: str, pos: int) -> _Tok | None:
    match = _DAY_WORD.match(text, pos)
    if match is None:
        return None
    offset = _DAY_OFFSETS[match["w"].lower()]
    return _Tok("day", pos, match.end(), Relative(unit="day", offset=offset))


def _zone(text: str, pos: int) -> _Tok | None:
    token = _zone_token(text, pos)
    if token is not None and token.value is not None and len(token.value) > MAX_ZONE_TOKEN:
        return None
    return token


def _zone_token(text: str, pos: int) -> _Tok | None:
    for pattern in (_ZONE_IANA, _ZONE_OFFSET, _ZONE_OTHER):
        match = pattern.match(text, pos)
        if match is not None:
            return _Tok("zone", pos, match.end(), match.group(0))
    match = _ZONE_ABBR.match(text, pos)
    if match is not None:
        return _Tok("zone", pos, match.end(), match["z"])
    match = _ZONE_OWN.match(text, pos)
    if match is not None:
        return _Tok("zone", pos, match.end(), None)
    match = _ZONE_PLACE.match(text, pos)
    if match is not None and match["first"] not in _NOT_PLACES:
        return _Tok("zone", pos, match.end(), match.group(0))
    match = _ZONE_REGION.match(text, pos)
    if match is not None:
        return _Tok("zone", pos, match.end(), match.group(0))
    return None


def _small(text: str, pos: int) -> _Tok | None:
    match = _NUM.match(text, pos)
    if match is not None:
        return _Tok("num", pos, match.end(), int(match["n"]))
    for pattern, name in _JOINERS:
        match = pattern.match(text, pos)
        if match is not None:
            value = match.group(0).lower() if name == "word" else name
            return _Tok("join", pos, match.end(), value)
    match = _OPENER.match(text, pos)
    if match is not None:
        kind: TokKind = "between" if match["w"].lower() == "between" else "from"
        return _Tok(kind, pos, match.end())
    match = _GLUE.match(text, pos)
    if match is not None:
        return _Tok("glue", pos, match.end(), match.group(0).lower())
    if text.startswith("(", pos):
        return _Tok("lparen", pos, pos + 1)
    if text.startswith(")", pos):
        return _Tok("rparen", pos, pos + 1)
    match = _POD_WORD.match(text, pos)
    if match is not None:
        return _Tok("pod", pos, match.end())
    return None


_MATCHERS = (
    _iso,
    _bad_span,
    _lookback,
    _numeric_date,
    _month_date,
    _month_only,
    _wall,
    _ordinal,
    _day_word,
    _zone,
    _small,
)


def _tokens(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = 0
    while pos < len(text):
        space = _SPACE.match(text, pos)
        if space is not None:
            pos = space.end()
            continue
        for matcher in _MATCHERS:
            token = matcher(text, pos)
            if token is not None:
                break
        else:
            other = _OTHER.match(text, pos)
            end = other.end() if other is not None else pos + 1
            token = _Tok("other", pos, end)
        tokens.append(token)
        pos = token.end
    return tokens


# --- the parser -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Node:
    """An expression found in the tokens ``[start, end)``."""

    start: int
    end: int
    date: DateParts | None = None
    relative: Relative | None = None
    wall: Wall | None = None
    zone: str | None = None
    zone_own_token: bool = False
    has_d: bool = False
    has_t: bool = False
    bad: bool = False
    iso: bool = False
    num: int | None = None
    look: Relative | None = None
    sides: tuple[_Node, _Node] | None = None
    char_end: int | None = None


class _Parser:
    """Groups tokens into expressions (one ``_Node`` each)."""

    def __init__(self, text: str, tokens: list[_Tok]) -> None:
        self.text = text
        self.toks = tokens

    def kind(self, i: int) -> str | None:
        return self.toks[i].kind if i < len(self.toks) else None

    def skip_glue(self, i: int, allowed: frozenset[str]) -> int:
        while i < len(self.toks) and self.toks[i].kind == "glue" and self.toks[i].value in allowed:
            i += 1
        return i

    # points

    def take_d(self, i: int, node: _Node) -> int:
        """Take the date-like token at ``i`` into ``node``; a weekday absorbs a date after it."""
        tok = self.toks[i]
        node.has_d = True
        if tok.kind == "badD":
            node.bad = True
            j = self.skip_glue(i + 1, frozenset({","}))
            if self.kind(j) in ("date", "badD"):
                return j + 1
            return i + 1
        if tok.kind == "date":
            node.date = tok.value
        elif tok.kind == "day":
            node.relative = tok.value
        elif tok.kind == "iso":
            node.date = tok.value[0]
            node.iso = True
        return i + 1

    def take_t(self, i: int, node: _Node) -> int:
        tok = self.toks[i]
        node.has_t = True
        if tok.kind == "badT":
            node.bad = True
        else:
            node.wall, zone = tok.value
            if zone is not None:
                node.zone = zone
        return i + 1

    def is_d(self, i: int) -> bool:
        kind = self.kind(i)
        if kind == "iso":
            return self.toks[i].value[1] is None
        return kind in _D_KINDS

    def is_t(self, i: int) -> bool:
        return self.kind(i) in _T_KINDS

    def point(self, i: int) -> _Node | None:
        node = _Node(start=i, end=i)
        kind = self.kind(i)
        if kind == "iso" and self.toks[i].value[1] is not None:
            date, wall, zone = self.toks[i].value
            node.date, node.wall, node.zone = date, wall, zone
            node.has_d = node.has_t = node.iso = True
            j = i + 1
        elif self.is_d(i):
            j = self.take_d(i, node)
            k = self.skip_glue(j, frozenset({",", "at", "@", "on"}))
            if self.is_t(k):
                j = self.take_t(k, node)
            elif self.kind(k) == "num" and k > j and self.toks[k - 1].value in ("at", "@"):
                # "today at 8": a lone hour is no time, so the whole is unreadable
                node.bad, node.has_t, j = True, True, k + 1
        elif self.is_t(i):
            j = self.take_t(i, node)
            k = self.skip_glue(j, frozenset({",", "on"}))
            if self.is_d(k):
                j = self.take_d(k, node)
        elif kind == "pod" and self.kind(i + 1) == "glue" and self.toks[i + 1].value == "of":
            if not self.is_d(i + 2):
                return None
            node.bad = True
            j = self.take_d(i + 2, node)
        else:
            return None
        # A part of the day or an unreadable phrase right after makes the whole point unreadable.
        while self.kind(j) in ("pod", "badD", "badT"):
            node.bad = True
            j += 1
        j = self.attach_zone(j, node)
        node.end = j
        return node

    def attach_zone(self, j: int, node: _Node) -> int:
        if node.zone is not None and node.iso:
            return j
        k = self.skip_glue(j, frozenset({",", "in"}))
        paren = self.kind(k) == "lparen"
        if paren:
            k += 1
        if self.kind(k) != "zone" or node.zone is not None:
            return j
        node.zone = self.toks[k].value
        node.zone_own_token = True
        k += 1
        if paren and self.kind(k) == "rparen":
            k += 1
        return k

    # ranges

    def side(self, i: int) -> _Node | None:
        kind = self.kind(i)
        if kind == "look":
            return _Node(start=i, end=i + 1, look=self.toks[i].value)
        if kind == "badS":
            return _Node(start=i, end=i + 1, bad=True)
        if kind == "num":
            return _Node(start=i, end=i + 1, num=self.toks[i].value)
        return self.point(i)

    def range(self, i: int) -> _Node | None:
        opener = self.kind(i) if self.kind(i) in ("between", "from") else None
        first = self.side(i + 1 if opener else i)
        if first is None:
            return None
        k = first.end
        if self.kind(k) != "join":
            return None
        joiner = self.toks[k].value
        if opener == "between":
            allowed = {"and"}
        elif opener == "from":
            allowed = {"to", "until", "till", "til", "through", "thru", "dash"}
        else:
            allowed = {"to", "until", "till", "til", "through", "thru", "dash", "dotdot", "slash"}
        if joiner not in allowed:
            return None
        second = self.side(k + 1)
        if second is None:
            return None
        if joiner == "slash" and not (
            self.kind(first.start) == "iso" and self.kind(second.start) == "iso"
        ):
            return None
        bad = first.bad or second.bad
        if first.num is not None or second.num is not None:
            if first.num is not None and second.num is not None:
                return None  # two numbers: not a time
            if second.num is not None:
                if not first.has_t:
                    return None
                bad = True  # "8 AM to 9"
            elif not second.has_t:
                return None
            elif second.wall is None or second.wall.meridiem is None:
                bad = True  # "8 to 9:30": the unmarked start has no AM/PM to borrow
            elif first.num is not None and not 1 <= first.num <= 12:
                bad = True
        node = _Node(start=i, end=second.end, bad=bad, sides=(first, second))
        if second.zone is not None and second.zone_own_token and first.zone is None:
            node.zone, node.zone_own_token = second.zone, True
            second.zone = None
        return node

    # expressions

    def expression(self, i: int) -> _Node | None:
        kind = self.kind(i)
        if self.is_d(i):
            prefix = _Node(start=i, end=i)
            j = self.take_d(i, prefix)
            k = self.skip_glue(j, frozenset({",", "at", "on"}))
            ranged = self.range(k)
            if ranged is not None and ranged.sides is not None:
                first, second = ranged.sides
                if not first.has_d and first.look is None:
                    ranged.start = i
                    ranged.bad = ranged.bad or prefix.bad
                    if second.has_d:
                        _lend_date(prefix, first)
                    else:
                        ranged.date, ranged.relative = prefix.date, prefix.relative
                        ranged.has_d = True
                    return ranged
        ranged = self.range(i)
        if ranged is not None:
            return ranged
        if kind in ("look", "badS"):
            node = _Node(start=i, end=i + 1, bad=kind == "badS")
            if kind == "look":
                node.look = self.toks[i].value
                # "the last 2 hours of yesterday", "last 2 hours and 30 minutes"
                tail = _LOOK_TAIL.match(self.text, self.toks[i].end)
                if tail is not None:
                    node.bad, node.char_end = True, tail.end()
            return node
        return self.point(i)

    def expressions(self) -> list[_Node]:
        found: list[_Node] = []
        i = 0
        while i < len(self.toks):
            node = self.expression(i)
            if node is None:
                i += 1
                continue
            found.append(node)
            i = node.end
        return found


def _lend_date(prefix: _Node, side: _Node) -> None:
    side.date, side.relative, side.has_d = prefix.date, prefix.relative, True
    side.bad = side.bad or prefix.bad


# --- from expressions to mentions -------------------------------------------------------------


def _side_parts(node: _Node) -> RangeSide:
    if node.look is not None:
        return RangeSide(relative=node.look)
    if node.num is not None:
        return RangeSide(wall=Wall(h=node.num))
    return RangeSide(date=node.date, wall=node.wall, zone_token=node.zone, relative=node.relative)


def _parts(node: _Node) -> TimeParts:
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


def _is_time_point(node: _Node) -> bool:
    return node.sides is None and node.has_t


@dataclass(slots=True)
class _Span:
    start: int
    end: int
    bad: bool
    parts: TimeParts | None


def _with_qualifiers(text: str, node: _Node, start: int, end: int, floor: int) -> _Span:
    bad = node.bad
    while True:
        before = _QUALIFIER_BEFORE.search(text, floor, start)
        if before is None and _is_time_point(node):
            before = _QUALIFIER_BEFORE_TIME.search(text, floor, start)
        if before is None or before.start() == start:
            break
        start, bad = before.start(), True
    while True:
        after = _QUALIFIER_AFTER.match(text, end)
        if after is None or after.end() == end:
            break
        end, bad = after.end(), True
    parts = None if bad else _parts(node)
    return _Span(start, end, bad, parts)


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
    tokens = _tokens(text)
    spans: list[_Span] = []
    for node in _Parser(text, tokens).expressions():
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
