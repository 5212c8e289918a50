"""Option checks shared by the built-in strategy factories
(docs/window.md#definition-time-validation).

Every error is a ``WindowConfigError`` naming the factory, the option and the offending value.
Counts reject ``bool`` first (``True`` is an ``int`` in Python).
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Literal

from afp_runtime.errors import WindowConfigError, shown


class _Missing:
    """The default of a required option, so that leaving it out is a WindowConfigError."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


def refuse_positional(factory: str, args: tuple[object, ...]) -> None:
    """Options are keywords only: any positional argument is refused."""
    if args:
        raise WindowConfigError(
            f"{factory}() takes its options as keywords only; it was given "
            f"{len(args)} positional value(s)",
            factory=factory,
            option="(positional)",
            value=shown(args),
        )


def _fail(factory: str, option: str, value: object, wanted: str) -> WindowConfigError:
    if value is MISSING:
        detail = f"{factory}() needs the option {option} ({wanted})"
    else:
        detail = f"{factory}() option {option} must be {wanted}, not {shown(value)}"
    return WindowConfigError(detail, factory=factory, option=option, value=shown(value))


# The largest count an option takes: what every JSON reader holds exactly (2**53 - 1).
_MAX_COUNT = 2**53 - 1


def keep_turns(factory: str, value: object) -> int:
    """``keep_recent_turns``: an int from 1 to 2**53 - 1 (bool refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_COUNT:
        raise _fail(factory, "keep_recent_turns", value, "an int from 1 to 2**53 - 1")
    return value


def threshold(factory: str, value: object) -> float:
    """``threshold_tokens``: a number > 0 and at most 2**53 - 1, int or float (bool, NaN and
    the infinities refused; an int too large for a float is refused, not an OverflowError)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
        or not 0 < value <= _MAX_COUNT
    ):
        raise _fail(factory, "threshold_tokens", value, "a number above 0, at most 2**53 - 1")
    return value


def summarizer(factory: str, value: object) -> Any:
    """``summarizer``: anything with a ``str`` ``provider`` and an async ``send``."""
    provider = getattr(value, "provider", None)
    send = getattr(value, "send", None)
    if (
        value is MISSING
        or isinstance(value, type)
        or not isinstance(provider, str)
        or not inspect.iscoroutinefunction(send)
    ):
        raise _fail(
            factory,
            "summarizer",
            value,
            "an object with a str provider and an async send(request), such as a Model",
        )
    return value


def model_id(factory: str, value: object) -> str:
    """``model``: a non-empty str."""
    if not isinstance(value, str) or not value:
        raise _fail(factory, "model", value, "a non-empty str (the summarizer's model id)")
    return value


def retain(factory: str, value: object) -> Literal["conversation", "discard"]:
    """``retain``: ``"conversation"`` or ``"discard"``."""
    if not isinstance(value, str) or value not in ("conversation", "discard"):
        raise _fail(factory, "retain", value, "'conversation' or 'discard'")
    return "conversation" if value == "conversation" else "discard"
