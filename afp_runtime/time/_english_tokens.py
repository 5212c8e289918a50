"""The English reader's tokenizer: a message cut into tokens (times, dates, day words, spans,
zones, joiners, glue words and unreadable phrases), each with its code-point span and what it
holds (docs/time.md#what-the-english-reader-understands)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from afp_runtime.time import _english_words as words
from afp_runtime.time._english_words import TokKind
from afp_runtime.time._parts import (
    MAX_LOOKBACK_COUNT,
    MAX_ZONE_TOKEN,
    FixedDate,
    NumericDate,
    Relative,
    Wall,
)


@dataclass(frozen=True, slots=True)
class Tok:
    """One token: its kind, its code-point span and what it holds."""

    kind: TokKind
    start: int
    end: int
    value: Any = None


D_KINDS: Final[frozenset[str]] = frozenset({"date", "day", "badD"})
T_KINDS: Final[frozenset[str]] = frozenset({"wall", "badT"})


# --- the tokenizer ----------------------------------------------------------------------------


def _wall_of(h_text: str, m_text: str | None, s_text: str | None, mer: str | None) -> Wall | None:
    """A ``Wall`` for typed digits, or None when they are not a time (``25:00``)."""
    h = int(h_text)
    m = int(m_text) if m_text is not None else None
    s = int(s_text) if s_text is not None else None
    if h > 23 or (m is not None and m > 59) or (s is not None and s > 59):
        return None
    if mer is not None:
        return Wall(h=h, m=m, s=s, meridiem="am" if mer.lower().startswith("a") else "pm")
    wide = h == 0 or h >= 13 or (len(h_text) == 2 and h_text.startswith("0") and m is not None)
    return Wall(h=h, m=m, s=s, clock="24h" if wide else None)


def _iso(text: str, pos: int) -> Tok | None:
    match = words.ISO.match(text, pos)
    if match is None:
        return None
    month, day = int(match["mo"]), int(match["d"])
    if not 1 <= month <= 12 or not 1 <= day <= 31 or int(match["y"]) == 0:
        return None
    date = FixedDate(year=int(match["y"]), month=month, day=day)
    wall = None
    if match["h"] is not None:
        wall = _wall_of(match["h"], match["mi"], match["s"], None)
        if wall is None:
            return None
        wall = Wall(h=wall.h, m=wall.m, s=wall.s, clock="24h")  # an ISO time is on the 24h clock
    return Tok("iso", pos, match.end(), (date, wall, match["z"]))


def _bad_span(text: str, pos: int) -> Tok | None:
    for pattern, kind in words.BAD_SPANS:
        match = pattern.match(text, pos)
        if match is not None:
            return Tok(kind, pos, match.end())
    return None


def _lookback(text: str, pos: int) -> Tok | None:
    match = words.LOOK_COUNT.match(text, pos)
    if match is not None:
        unit = words.GOOD_UNITS.get(match["u"].lower())
        count = 0 if "." in match["n"] else int(match["n"])  # a fraction is unreadable
        if unit is None or not 1 <= count <= MAX_LOOKBACK_COUNT:
            return Tok("badS", pos, match.end())
        return Tok("look", pos, match.end(), Relative(unit=unit, count=count))
    match = words.LOOK_WORD.match(text, pos)
    if match is None:
        return None
    word, unit_word, the = match["w"].lower(), match["u"].lower(), match["the"] is not None
    if unit_word == "second":
        return None
    if unit_word not in words.GOOD_UNITS or word not in ("last", "past"):
        return Tok("badS", pos, match.end())
    unit = words.GOOD_UNITS[unit_word]
    if word == "last" and not the:
        if unit == "minute":
            return None  # "last minute" is an idiom, not a span
        if unit in ("day", "week"):
            return Tok("badS", pos, match.end())  # a calendar day or week
    if unit == "minute" and the and words.AT_BEFORE.search(text, max(0, pos - 8), pos):
        return None  # "at the last minute"
    return Tok("look", pos, match.end(), Relative(unit=unit, count=1))


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


def _numeric_date(text: str, pos: int) -> Tok | None:
    match = words.NUMERIC_DATE.match(text, pos)
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
    return Tok("date", pos, match.end(), NumericDate(fields=fields, year_digits=digits))


def _fixed_date(match: re.Match[str], pos: int) -> Tok:
    """A month-name date token, ``badD`` when its day is not 1-31 or its year is 0."""
    day = int(match["day"])
    year = int(match["year"]) if match["year"] else None
    if not 1 <= day <= 31 or year == 0:
        return Tok("badD", pos, match.end())
    date = FixedDate(month=words.MONTH_NUMBERS[match["mon"].lower()], day=day, year=year)
    return Tok("date", pos, match.end(), date)


def _month_date(text: str, pos: int) -> Tok | None:
    match = words.MONTH_DAY.match(text, pos)
    if match is not None and match["mon"] in ("may", "march") and match["year"] is None:
        # lower case: a month only when nothing but punctuation or a time word follows
        after = words.ORDINAL_NEXT.match(text, match.end())
        if after is not None and not _follows_date(after["w"]):
            return None
    if match is not None:
        return _fixed_date(match, pos)
    match = words.DAY_MONTH.match(text, pos)
    if match is not None and match["mon"] not in ("may", "march"):
        return _fixed_date(match, pos)
    return None


def _month_only(text: str, pos: int) -> Tok | None:
    match = words.MONTH_ONLY.match(text, pos)
    if match is None:
        return None
    name = match["mon"]
    bad = Tok("badD", pos, match.end())
    if name in ("may", "march") and match["year"] is None:
        # the verb, the noun; but "may 8 AM" is a month whose day number met AM/PM
        return bad if words.HOUR_AFTER.match(text, match.end()) else None
    if match["year"] is not None or words.DIGIT_AFTER.match(text, match.end()):
        # "Sept 2026", "Sept 8 AM": a number follows that is no day of the month; the
        # expression is not read, and never in part.
        return bad
    if name == "May" and words.MAY_VERB.match(text, match.end()):
        return None  # "May I …"
    plain = name.lower() in words.PLAIN_MONTHS
    return bad if plain or words.MONTH_CONTEXT.search(text, max(0, pos - 24), pos) else None


def _wall(text: str, pos: int) -> Tok | None:
    match = words.WALL_HM.match(text, pos)
    if match is not None:
        if match["mer"] is None and match["z"] is None and words.WALL_END.match(text, match.end()):
            return None
        if match["mer"] is not None:
            h = int(match["h"])
            if not 1 <= h <= 12 or int(match["m"]) > 59:
                return Tok("badT", pos, match.end())  # 13:00 PM, 0:30 AM
        elif int(match["h"]) == 24 and match["m"] == "00" and match["s"] in (None, "00"):
            return Tok("badT", pos, match.end())  # 24:00
        wall = _wall_of(match["h"], match["m"], match["s"], match["mer"])
        if wall is None:
            return None
        if match["z"] is not None:  # 15:40Z: a 24-hour wall with its zone token
            wall = Wall(h=wall.h, m=wall.m, s=wall.s, clock="24h")
        return Tok("wall", pos, match.end(), (wall, match["z"]))
    match = words.WALL_H.match(text, pos)
    if match is not None:
        h = int(match["h"])
        if not 1 <= h <= 12:
            return Tok("badT", pos, match.end())  # 0 AM, 13 PM
        wall = _wall_of(match["h"], None, None, match["mer"])
        return Tok("wall", pos, match.end(), (wall, None))
    return None


def _follows_date(word: str) -> bool:
    """Whether ``word`` may follow a day number that is a date (not a noun it counts)."""
    lower = word.lower()
    return (
        lower in words.ORDINAL_FOLLOWERS
        or lower in words.MONTH_NUMBERS
        or re.fullmatch(r"[ap]m", lower) is not None
    )


def _ordinal(text: str, pos: int) -> Tok | None:
    match = words.ORDINAL.match(text, pos)
    if match is None or not 1 <= int(match["day"]) <= 31:
        return None
    after = words.ORDINAL_NEXT.match(text, match.end())
    if after is not None and not _follows_date(after["w"]):
        return None  # "the 3rd server"
    return Tok("badD", pos, match.end())


def _day_word(text: str, pos: int) -> Tok | None:
    match = words.DAY_WORD.match(text, pos)
    if match is None:
        return None
    offset = words.DAY_OFFSETS[match["w"].lower()]
    return Tok("day", pos, match.end(), Relative(unit="day", offset=offset))


def _zone(text: str, pos: int) -> Tok | None:
    token = _zone_token(text, pos)
    if token is not None and token.value is not None and len(token.value) > MAX_ZONE_TOKEN:
        return None
    return token


def _zone_token(text: str, pos: int) -> Tok | None:
    for pattern in (words.ZONE_IANA, words.ZONE_OFFSET, words.ZONE_OTHER):
        match = pattern.match(text, pos)
        if match is not None:
            return Tok("zone", pos, match.end(), match.group(0))
    match = words.ZONE_ABBR.match(text, pos)
    if match is not None:
        return Tok("zone", pos, match.end(), match["z"])
    match = words.ZONE_OWN.match(text, pos)
    if match is not None:
        return Tok("zone", pos, match.end(), None)
    match = words.ZONE_PLACE.match(text, pos)
    if match is not None and match["first"] not in words.NOT_PLACES:
        return Tok("zone", pos, match.end(), match.group(0))
    match = words.ZONE_REGION.match(text, pos)
    if match is not None:
        return Tok("zone", pos, match.end(), match.group(0))
    return None


def _small(text: str, pos: int) -> Tok | None:
    match = words.NUM.match(text, pos)
    if match is not None:
        return Tok("num", pos, match.end(), int(match["n"]))
    for pattern, name in words.JOINERS:
        match = pattern.match(text, pos)
        if match is not None:
            value = match.group(0).lower() if name == "word" else name
            return Tok("join", pos, match.end(), value)
    match = words.OPENER.match(text, pos)
    if match is not None:
        kind: TokKind = "between" if match["w"].lower() == "between" else "from"
        return Tok(kind, pos, match.end())
    match = words.GLUE.match(text, pos)
    if match is not None:
        return Tok("glue", pos, match.end(), match.group(0).lower())
    if text.startswith("(", pos):
        return Tok("lparen", pos, pos + 1)
    if text.startswith(")", pos):
        return Tok("rparen", pos, pos + 1)
    match = words.POD_WORD.match(text, pos)
    if match is not None:
        return Tok("pod", pos, match.end())
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


def tokenize(text: str) -> list[Tok]:
    tokens: list[Tok] = []
    pos = 0
    while pos < len(text):
        space = words.SPACE.match(text, pos)
        if space is not None:
            pos = space.end()
            continue
        for matcher in _MATCHERS:
            token = matcher(text, pos)
            if token is not None:
                break
        else:
            other = words.OTHER.match(text, pos)
            end = other.end() if other is not None else pos + 1
            token = Tok("other", pos, end)
        tokens.append(token)
        pos = token.end
    return tokens
