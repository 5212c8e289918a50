"""The words and patterns of the English reader (docs/time.md#what-the-english-reader-understands):
month names, numbers and units, zone abbreviations and places, and the regular expressions
that match each kind of token (``_english_tokens.py`` uses them)."""

from __future__ import annotations

import re
from typing import Final, Literal

from afp_runtime.time._parts import RelativeUnit

_I = re.IGNORECASE
_DG = "[0-9]"

# --- vocabulary -------------------------------------------------------------------------------

_MONTH_NAMES: Final = str.split(
    "january february march april may june july august september october november december"
)
MONTH_NUMBERS: Final[dict[str, int]] = {
    name: number
    for number, month in enumerate(_MONTH_NAMES, start=1)
    for name in (month, month[:3])
} | {"sept": 9}
"""Month names and abbreviations (the first three letters, and ``sept``), lower case."""
# Full names first so that ``march`` wins over ``mar`` and ``sept`` over ``sep``.
_MONTHS = "|".join(sorted(MONTH_NUMBERS, key=lambda name: (-len(name), name)))
_MONTH = rf"(?P<mon>{_MONTHS})(?![a-z])\.?"
# Full month names that are hardly ever anything else; the others (and every abbreviation)
# count as a month without a day only in a context that says so.
PLAIN_MONTHS: Final[frozenset[str]] = frozenset(
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
_UNIT_SPELLINGS: Final[dict[RelativeUnit, str]] = {
    "minute": "minute minutes min mins m",
    "hour": "hour hours hr hrs h",
    "day": "day days d",
    "week": "week weeks wk wks w",
}
GOOD_UNITS: Final[dict[str, RelativeUnit]] = {
    spelling: unit for unit, spellings in _UNIT_SPELLINGS.items() for spelling in spellings.split()
}
_MERIDIEM = r"(?:[ap]\.\s?m\.?|[ap]m(?![a-z]))"
_POD = r"(?:morning|afternoon|evening|night)"
_NAMED_POD = (
    r"(?:(?:this|yesterday|tomorrow)\s+(?:morning|afternoon|evening|night)|last\s+(?:night|evening)"
    r"|tonight|in\s+the\s+(?:morning|afternoon|evening)|at\s+night)"
)

_ABBREVIATIONS: Final[tuple[str, ...]] = tuple(
    str.split(
        "UTC GMT PST PDT PT MST MDT MT CST CDT CT EST EDT ET AKST AKDT HST AST ADT NST NDT BST IST "
        "CET CEST EET EEST WET WEST MSK JST KST HKT SGT AEST AEDT ACST ACDT AWST NZST NZDT SAST"
    )
)
"""The zone abbreviations docs/time.md#what-the-english-reader-understands recognises (closed list;
upper case exactly)."""
_ABBR = "|".join(sorted(_ABBREVIATIONS, key=lambda a: (-len(a), a)))
_IANA_AREAS = (
    "Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc|US|"
    "Canada|Brazil|Chile|Mexico"
)
# Capitalised words before "time" that name no place.
NOT_PLACES: Final[frozenset[str]] = frozenset(
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

# --- token kinds and their patterns -----------------------------------------------------------

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


def rx(pattern: str, flags: int = _I) -> re.Pattern[str]:
    """``pattern`` compiled, case-insensitive unless ``flags`` say otherwise."""
    return re.compile(pattern, flags)


ISO = rx(
    rf"(?P<y>{_DG}{{4}})-(?P<mo>{_DG}{{2}})-(?P<d>{_DG}{{2}})"
    rf"(?:T(?P<h>{_DG}{{2}}):(?P<mi>{_DG}{{2}})(?::(?P<s>{_DG}{{2}})(?:\.{_DG}{{1,9}})?)?"
    rf"(?P<z>Z|[+-]{_DG}{{2}}(?::?{_DG}{{2}})?)?)?(?![0-9A-Za-z_:])",
    0,
)
BAD_SPANS: Final[tuple[tuple[re.Pattern[str], TokKind], ...]] = (
    # N hours ago, a few days ago, a while ago
    (
        rx(
            rf"(?:(?:[0-9]+(?:\.[0-9]+)?|{_NUMWORD}|an?|{_FEW})\s*{_UNITS}(?!\w)"
            r"|moments|a\s+(?:while|bit|moment|little\s+while)|some\s+time)\s+ago\b"
        ),
        "badS",
    ),
    # quantities in words: last two hours, past few days
    (
        rx(
            r"(?:the\s+)?(?:last|past|previous|prior|preceding|next|coming|following|upcoming|first)"
            rf"\s+(?:{_NUMWORD}|{_FEW})\s+{_UNIT_WORDS}(?!\w)"
        ),
        "badS",
    ),
    # previous 7 days, next 2h, the next hour, next week, the first 10 minutes
    (
        rx(
            r"(?:the\s+)?(?:(?:previous|prior|preceding|next|coming|following|upcoming)\s+"
            rf"(?:[0-9]+(?:\.[0-9]+)?\s*{_UNITS}|{_UNIT_WORDS})"
            rf"|first\s+[0-9]+(?:\.[0-9]+)?\s*{_UNITS})(?!\w)"
        ),
        "badS",
    ),
    # compound spans: last 1h30m
    (rx(r"(?:the\s+)?(?:last|past|next)\s+[0-9]+\s*[a-z]+[0-9]+[a-z]*(?!\w)"), "badS"),
    (rx(r"this\s+past\s+(?:weekend|week|month|year)(?!\w)"), "badD"),
    (rx(r"(?:(?:this|last|next|past|the|coming)\s+)weekends?(?!\w)"), "badD"),
    (rx(r"(?:the\s+)?(?:week|month|weekend)\s+of(?!\w)"), "badD"),
    (rx(r"(?:the\s+)?day\s+(?:before\s+yesterday|after\s+tomorrow)(?!\w)"), "badD"),
    (rx(r"the\s+other\s+day(?!\w)"), "badD"),
    # 8 in the morning, 8:30 tonight
    (rx(rf"[0-9]{{1,2}}(?::[0-9]{{2}})?\s+{_NAMED_POD}(?!\w)"), "badT"),
    (rx(_NAMED_POD + r"(?!\w)"), "badD"),
    (rx(r"(?:overnight)(?!\w)"), "badD"),
    (
        rx(
            r"(?:noon|midnight|mid-?day|lunch\s?time|end\s+of\s+(?:the\s+)?(?:business\s+)?day)(?!\w)"
        ),
        "badT",
    ),
    (rx(r"close\s+of\s+business(?!\w)"), "badT"),
    (rx(r"(?:EOD|COB)(?![A-Za-z0-9_])", 0), "badT"),
    (
        rx(
            r"(?:(?:last|this|next|past|coming|every)\s+)?"
            r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?(?!\w)"
        ),
        "badD",
    ),
    (
        rx(
            r"(?:Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun)\.?,?"
            rf"(?=\s+(?:[0-9]|(?i:{_MONTHS})(?![a-z])))",
            0,
        ),
        "badD",
    ),
    (rx(rf"(?:[0-9]{{1,2}}|{_NUMWORD12})\s*o['’]?\s?clock(?!\w)"), "badT"),
    (
        rx(
            rf"(?:half|quarter)\s+(?:past|to|after)\s+(?:[0-9]{{1,2}}|{_NUMWORD12})"
            rf"(?:\s?{_MERIDIEM})?(?![0-9])"
        ),
        "badT",
    ),
    (rx(rf"{_NUMWORD12}\s?{_MERIDIEM}"), "badT"),
    (rx(rf"[0-9]{{1,2}}(?::[0-9]{{2}})?\s?(?:{_MERIDIEM})?\s?-?ish(?!\w)"), "badT"),
)
LOOK_COUNT = rx(
    rf"(?:(?P<the>the)\s+)?(?:last|past)\s+(?P<n>[0-9]+(?:\.[0-9]+)?)\s*(?P<u>{_UNITS})(?!\w)"
)
LOOK_WORD = rx(
    r"(?:(?P<the>the)\s+)?(?P<w>last|past|this|next|previous|coming|current)\s+"
    r"(?P<u>minute|hour|day|week|month|year|quarter|decade|fortnight|second)(?!\w)"
)
LOOK_TAIL = rx(
    rf"\s+(?:and\s+(?:[0-9]+|{_NUMWORD}|an?)\s*{_UNITS}(?!\w)"
    r"|of(?:\s+(?:the\s+)?(?:month|week|year|day|quarter|hour))?(?!\w))"
)
NUMERIC_DATE = rx(
    rf"(?P<a>{_DG}{{1,4}})/(?P<b>{_DG}{{1,2}})(?:/(?P<c>{_DG}{{4}}|{_DG}{{2}}))?(?![\w/]|[.:][0-9])"
)
MONTH_DAY = rx(
    rf"{_MONTH}\s+(?P<day>{_DG}{{1,2}})(?:st|nd|rd|th)?(?!\w|:[0-9]|\s?{_MERIDIEM})"
    rf"(?:,?\s+(?P<year>{_DG}{{4}})(?![\w:]))?"
)
DAY_MONTH = rx(
    rf"(?:(?P<the>the)\s+)?(?P<day>{_DG}{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}"
    rf"(?:,?\s+(?P<year>{_DG}{{4}})(?![\w:]))?"
)
MONTH_ONLY = rx(rf"{_MONTH}(?:,?\s+(?P<year>{_DG}{{4}})(?![\w:]))?")
MONTH_CONTEXT = rx(
    r"(?<!\w)(?:in|during|since|of|last|this|next|early|late|mid-?|until|till|before|after|by|"
    r"through|from|to|around|throughout|for|end\s+of|start\s+of|beginning\s+of)\s*$"
)
AT_BEFORE = rx(r"(?<!\w)at\s+$")
DIGIT_AFTER = rx(r"\s+[0-9]")
HOUR_AFTER = rx(rf"\s+[0-9]{{1,2}}\s?{_MERIDIEM}")
MAY_VERB = rx(r"\s+(?:I|we|you|he|she|it|they)(?!\w)", 0)
WALL_HM = rx(
    rf"(?P<h>{_DG}{{1,2}}):(?P<m>{_DG}{{2}})(?::(?P<s>{_DG}{{2}}))?"
    rf"(?:\s?(?P<mer>{_MERIDIEM})|(?P<z>Z)(?![\w:]))?"
)
WALL_H = rx(rf"(?P<h>{_DG}{{1,2}})\s?(?P<mer>{_MERIDIEM})")
WALL_END = rx(r"[\w:]|\.[0-9]")
ORDINAL = rx(rf"(?:(?P<the>the)\s+)?(?P<day>{_DG}{{1,2}})(?:st|nd|rd|th)(?!\w)")
ORDINAL_NEXT = rx(r"\s+(?P<w>[A-Za-z]+)")
ORDINAL_FOLLOWERS: Final[frozenset[str]] = frozenset(
    str.split(
        "of at and or to until till through thru in from since before after between on this "
        "last next"
    )
)
DAY_WORD = rx(r"(?P<w>today|yesterday|tomorrow)(?!\w)")
DAY_OFFSETS: Final[dict[str, int]] = {"today": 0, "yesterday": -1, "tomorrow": 1}
ZONE_IANA = rx(rf"(?:{_IANA_AREAS})/[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)*(?![\w/])", 0)
ZONE_OFFSET = rx(rf"(?:UTC|GMT)\s?[+\-−]\s?{_DG}{{1,2}}(?::?{_DG}{{2}})?(?![0-9])")
ZONE_ABBR = rx(rf"(?P<z>{_ABBR})(?![A-Za-z0-9_])(?:\s+[Tt]ime(?!\w))?", 0)
ZONE_PLACE = rx(r"(?P<first>[A-Z][a-z]+)(?:[ \-][A-Z][a-z]+){0,2}\s+[Tt]ime(?!\w)", 0)
ZONE_REGION = rx(r"(?:Pacific|Eastern|Central|Mountain)(?![A-Za-z0-9_])", 0)
ZONE_OWN = rx(r"(?:local|my|our)\s+time(?!\w)")
ZONE_OTHER = rx(r"(?:your|server|system)\s+time(?!\w)")
NUM = rx(rf"(?P<n>{_DG}{{1,2}})(?![\w:/]|\.[0-9])")
JOINERS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (rx(r"(?:to|until|till|til|through|thru|and)(?!\w)"), "word"),
    (rx(r"\.\.(?!\.)"), "dotdot"),
    (rx(r"[-–—−]"), "dash"),
    (rx(r"/"), "slash"),
)
OPENER = rx(r"(?P<w>between|from)(?!\w)")
GLUE = rx(r"(?:,|@|(?:at|on|in|of)(?!\w))")
POD_WORD = rx(rf"{_POD}s?(?!\w)")
OTHER = rx(r"\w+|\S")
SPACE = rx(r"\s+")
