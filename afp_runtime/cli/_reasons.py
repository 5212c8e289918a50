"""The legend printed under what shows codes: each code that appeared, once, with its sentence
from the one table (docs/architecture.md#reasons-in-words), so a refusal or a gap reads in words
beside its code."""

from __future__ import annotations

from collections.abc import Iterable

from afp_runtime.app import reasons_for
from afp_runtime.cli._show import say


def say_reasons(codes: Iterable[str]) -> None:
    """Print ``what the codes mean:`` and each explained code among ``codes`` (first-seen
    order, once) with its sentence; nothing when none is explained."""
    found = reasons_for(codes)
    if not found:
        return
    say("what the codes mean:")
    width = max(len(code) for code in found)
    for code, text in found.items():
        say(f"  {code.ljust(width)}  {text}")
