"""Texts the loop authors (our own words, defined once)."""

from __future__ import annotations

WRAP_UP_PREFIX = "[afp:wrap-up]"

WRAP_UP_TEXT = (
    f"{WRAP_UP_PREFIX} The step budget for this request is spent: no further tools can be "
    "used. Give your best final answer now from what you already have, and say plainly what "
    "remains undone."
)
