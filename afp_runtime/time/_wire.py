"""The base of the time layer's wire values."""

from __future__ import annotations

import msgspec


class Wire(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    forbid_unknown_fields=True,
):
    """Base of the time layer's wire values: frozen, camelCase keys, absent keys omitted, unknown
    keys refused. Every subclass says ``frozen=True, kw_only=True`` again: msgspec keeps
    ``kw_only`` to the fields of the class that says it, and mypy checks ``frozen`` per class."""
