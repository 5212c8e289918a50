"""How a schedule field is refused: ``field: "value" is not …`` or ``field: "value": why``
(docs/schedules.md#refusals)."""

from __future__ import annotations

import msgspec

from afp_runtime.errors import InvalidValue, shown


def quoted(value: object) -> str:
    """A string as JSON writes it (so a person sees exactly what was given), else its repr."""
    if isinstance(value, str):
        return msgspec.json.encode(value).decode()
    return shown(value)


def refuse(field: str, value: object, why: str) -> InvalidValue:
    """The error for a bad field; ``why`` reads on from the value (``is not a zone name``,
    ``has 3 fields, not 5``) or, otherwise, after a colon."""
    joined = f" {why}" if why.startswith(("is ", "has ")) else f": {why}"
    return InvalidValue(f"{field}: {quoted(value)}{joined}", field=field)
