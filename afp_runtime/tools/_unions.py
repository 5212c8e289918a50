"""Type annotations msgspec must not be shown: building a decoder or a schema for them
corrupts memory in msgspec (seen with 0.22 and 0.23), so the tools layer refuses them first."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import msgspec


def crashing_union(hint: Any, seen: frozenset[Any] = frozenset()) -> Any:
    """The first union within ``hint`` that pairs an ``Annotated`` member (constraints) with a
    fixed-length tuple: building a decoder for one corrupts memory in msgspec (seen with 0.22
    and 0.23), so such an annotation is refused before msgspec sees it. ``seen`` holds the
    Structs, dataclasses and TypedDicts being walked: a recursive one (a tree node naming
    itself) is walked once."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        constrained = any(typing.get_origin(a) is typing.Annotated for a in args)
        fixed_tuple = any(
            typing.get_origin(_bare(a)) is tuple and ... not in typing.get_args(_bare(a))
            for a in args
        )
        if constrained and fixed_tuple:
            return hint
    if origin is typing.Annotated:
        return crashing_union(args[0], seen)
    struct = isinstance(hint, type) and issubclass(hint, msgspec.Struct)
    if struct or typing.is_typeddict(hint) or dataclasses.is_dataclass(hint):
        if hint in seen:
            return None
        inner = seen | {hint}
        fields = typing.get_type_hints(hint, include_extras=True)
        return next(
            (u for f in fields.values() if (u := crashing_union(f, inner)) is not None), None
        )
    return next((u for a in args if (u := crashing_union(a, seen)) is not None), None)


def crashing_text(crashing: Any) -> str:
    """How a refusal names the union ``crashing_union`` found, and what to do instead."""
    return (
        f"the union {str(crashing).replace('typing.', '')} (a constrained value beside a "
        "fixed-length tuple); use a variable-length tuple or drop the constraint"
    )


def _bare(hint: Any) -> Any:
    """``hint`` without an ``Annotated`` wrapper."""
    return typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
