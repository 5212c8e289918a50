"""Helpers shared by the declaration checks: the error, and checks of single values."""

from __future__ import annotations

from typing import Any

from afp_runtime.errors import PeriodDeclarationError, shown
from afp_runtime.time._durations import FACT_UNITS, is_duration

_NO_VALUE: Any = object()


def refuse(field: str, why: str, value: Any = _NO_VALUE) -> PeriodDeclarationError:
    """A ``PeriodDeclarationError`` naming ``field`` (its wire path) and, if given, the value."""
    context: dict[str, Any] = {"field": field}
    if value is not _NO_VALUE:
        context["value"] = shown(value)
    return PeriodDeclarationError(f"period declaration: {field} {why}", **context)


def prefixed(exc: PeriodDeclarationError, prefix: str) -> PeriodDeclarationError:
    """``exc`` again, its field path placed under ``prefix`` (``forms[1]`` + ``units``)."""
    field = str(exc.context.get("field", ""))
    path = f"{prefix}.{field}" if field else prefix
    context = {**exc.context, "field": path}
    old, new = f"period declaration: {field} ", f"period declaration: {path} "
    message = exc.message.replace(old, new, 1)
    return PeriodDeclarationError(message, **context)


def check_name(value: object, field: str) -> None:
    """An argument name: a non-empty string."""
    if not isinstance(value, str) or not value:
        raise refuse(field, "must be a non-empty argument name", value)


def check_duration(value: object, field: str) -> None:
    """An optional duration with any of the letters ``smhdw`` (facts, caps)."""
    if value is not None and not is_duration(value, FACT_UNITS):
        raise refuse(field, "must be a duration such as 30m, 24h or 7d (units smhdw)", value)


def check_choice(value: object, choices: tuple[str, ...], field: str) -> None:
    """A string that is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise refuse(field, f"must be one of {', '.join(choices)}", value)
