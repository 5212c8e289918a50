"""The zone a typed zone token names (docs/time.md#the-resolver): a zone name, a numeric
offset, ``<Place> time`` or a mapped abbreviation, and the fixed offset an abbreviation
stands for in a given year."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from afp_runtime.time._candidates import CandidateNote, OffsetSaid, ZoneReadNote
from afp_runtime.time._zones import ZONE_NAMES, is_zone_name, load_zone

_OFFSET = re.compile(r"(?:(?:UTC|GMT)\s?)?([+\-−])\s?([0-9]{1,2})(?::?([0-9]{2}))?")
_PLACE = re.compile(r"(.+?)\s+[Tt]ime")


@dataclass(frozen=True)
class SideZone:
    """A side's zone: a name, and the fixed offset its instants use when one was said."""

    name: str
    said: bool
    offset: int | None = None
    note: CandidateNote | None = None
    abbreviation: str | None = None


def _offset_of(token: str) -> int | None:
    if token in ("Z", "z"):
        return 0
    found = _OFFSET.fullmatch(token.strip())
    if found is None:
        return None
    sign, hours, minutes = found.groups()
    if int(hours) > 23 or int(minutes or 0) > 59:
        return None
    seconds = int(hours) * 3600 + int(minutes or 0) * 60
    return -seconds if sign in "-−" else seconds


@functools.cache
def _places() -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for name in sorted(ZONE_NAMES):
        if "/" in name and is_zone_name(name):
            key = name.rsplit("/", 1)[1].replace("_", " ").lower()
            found.setdefault(key, []).append(name)
    return {key: tuple(names) for key, names in found.items()}


def zone_of_token(token: str, clock_zone: str, abbreviations: Mapping[str, str]) -> SideZone | None:
    """The zone a typed token names, or None when it names none (docs/time.md#the-resolver)."""
    if is_zone_name(token):
        return SideZone(name=token, said=True)
    offset = _offset_of(token)
    if offset is not None:
        return SideZone(name=clock_zone, said=True, offset=offset, note=OffsetSaid())
    place = _PLACE.fullmatch(token.strip())
    if place is not None:
        matches = _places().get(" ".join(place.group(1).split()).lower(), ())
        if len(matches) == 1:
            return SideZone(name=matches[0], said=True, note=ZoneReadNote(as_="place"))
        return None
    mapped = abbreviations.get(token)
    if mapped is not None and is_zone_name(mapped):
        return SideZone(name=mapped, said=True, abbreviation=token)
    return None


@functools.lru_cache(maxsize=1024)
def abbreviation_offset(token: str, zone: str, year: int) -> int | None:
    """The offset ``zone`` uses under the abbreviation ``token`` in ``year``, or None."""
    tz = load_zone(zone)
    for month in range(1, 13):
        for day in (1, 15):
            moment = datetime(year, month, day, 12, tzinfo=tz)
            if moment.tzname() == token:
                delta = moment.utcoffset()
                if delta is not None:
                    seconds = delta.days * 86_400 + delta.seconds
                    return seconds if seconds % 60 == 0 else None
    return None
