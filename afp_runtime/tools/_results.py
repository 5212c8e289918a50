"""Turning what a tool function returned into observation text, and capping it.

Internal to the ``tools`` layer: the dispatcher is its only user.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from afp_runtime.tools.texts import NO_OUTPUT, truncation_note

_SURROGATE = re.compile("[\ud800-\udfff]")
_BYTES_LIKE = (bytes, bytearray, memoryview)


class Unencodable(Exception):
    """A result that cannot become JSON text; carries the offending type's name."""

    def __init__(self, type_name: str) -> None:
        super().__init__(type_name)
        self.type_name = type_name


def result_text(value: Any) -> str:
    """The text standing for a result: a str as is, None as the no-output note, else JSON.

    msgspec would quietly turn bytes into base64 and NaN into ``null``; both are refused here
    instead (docs/loop.md#observations), as are lone surrogates (not UTF-8) and anything msgspec
    cannot encode.

    Raises:
        Unencodable: naming the type of the value (or of the part of it) that failed.
    """
    if value is None:
        return NO_OUTPUT
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise Unencodable("str")
        return value
    try:
        plain = msgspec.to_builtins(value, builtin_types=_BYTES_LIKE)
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError) as exc:
        raise Unencodable(type(value).__name__) from exc
    _refuse_non_json(plain)
    try:
        return msgspec.json.encode(plain).decode("utf-8")
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError) as exc:
        raise Unencodable(type(value).__name__) from exc


def _refuse_non_json(value: Any) -> None:
    """Raise Unencodable for bytes, non-finite floats or surrogates anywhere in ``value``."""
    if isinstance(value, _BYTES_LIKE):
        raise Unencodable(type(value).__name__)
    if isinstance(value, float) and not math.isfinite(value):
        raise Unencodable("float")
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise Unencodable("str")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _refuse_non_json(key)
            _refuse_non_json(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_non_json(item)


def capped(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to its first ``limit`` code points plus the truncation note, if longer.

    Returns:
        The content and whether it was cut.
    """
    if len(text) <= limit:
        return text, False
    return text[:limit] + truncation_note(limit, len(text)), True
