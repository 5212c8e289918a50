"""Durations: ``<n><unit>`` text, its length in milliseconds, and the shortest exact spelling
(docs/time.md#durations).

A duration matches ``^[1-9][0-9]*[smhdw]$`` with any number of digits. ``d`` is exactly 24 hours
and ``w`` exactly 168 hours; neither follows the calendar. Every reader states which unit
letters it allows: look-back arguments ``mhdw`` (unless a form opts into seconds), tool facts
``smhdw``. Lengths are integer milliseconds, the unit the rest of the layer measures steps in.
"""

from __future__ import annotations

import re
from typing import Final

from afp_runtime.errors import InvalidValue, shown

UNIT_MS: Final[dict[str, int]] = {
    "s": 1_000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 604_800_000,
}
"""Milliseconds in one of each unit letter."""

FACT_UNITS: Final = "smhdw"
"""The letters a tool fact (``retention``, ``maxRange``, ``granularity``) may use."""

LOOKBACK_UNITS: Final = "mhdw"
"""The letters a look-back argument allows unless its form declares ``units``."""

_DURATION = re.compile(r"[1-9][0-9]*([smhdw])")


def check_units(units: object) -> str | None:
    """Why ``units`` is not a set of unit letters, or None when it is.

    A set of units is a non-empty string of distinct letters from ``smhdw``.
    """
    if not isinstance(units, str) or not units:
        return "must be a non-empty string of letters from smhdw"
    stray = "".join(sorted(set(units) - set(FACT_UNITS)))
    if stray:
        return f"may only hold letters from smhdw, not {stray!r}"
    if len(set(units)) != len(units):
        return "must not repeat a letter"
    return None


def is_duration(text: object, units: str = FACT_UNITS) -> bool:
    """Whether ``text`` is a duration whose unit is one of ``units``."""
    if not isinstance(text, str):
        return False
    found = _DURATION.fullmatch(text)
    return found is not None and found.group(1) in units


def parse_duration(text: str, units: str = FACT_UNITS) -> int:
    """The length of a duration, in milliseconds.

    Args:
        text: e.g. ``"40m"``, ``"1d"``.
        units: the unit letters this place allows.

    Raises:
        InvalidValue: ``text`` is not a duration in ``units``.
    """
    if not is_duration(text, units):
        raise InvalidValue(
            f"{shown(text)} is not a duration: expected <n><unit> with a unit from {units!r}",
            value=shown(text),
        )
    return int(text[:-1]) * UNIT_MS[text[-1]]


def spell_duration(length_ms: int, units: str = FACT_UNITS) -> str | None:
    """The shortest exact spelling of a length, or None when no allowed unit divides it.

    The biggest allowed unit that divides the length with no remainder is used: 1960 min →
    ``1960m``, 24 h → ``1d``, 48 h → ``2d``, 3600 s → ``1h``. A length that is not positive
    has no spelling.
    """
    if length_ms <= 0:
        return None
    for letter in sorted(units, key=UNIT_MS.__getitem__, reverse=True):
        size = UNIT_MS[letter]
        if length_ms % size == 0:
            return f"{length_ms // size}{letter}"
    return None


def smallest_unit_ms(units: str) -> int:
    """Milliseconds in the smallest unit of ``units`` (the step a look-back length rounds up
    to, docs/time.md#writing-a-window-into-a-form)."""
    return min(UNIT_MS[letter] for letter in units)
