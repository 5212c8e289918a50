"""Decoding checked arguments into a tool's declared types.

The arguments have already passed the input schema, where a number with no fractional part
(``3.0``) counts as an integer, as JSON Schema says; msgspec refuses a float for an ``int``. So
before decoding, every integral float that stands where the type takes an integer (and no float)
becomes an ``int``, and so does one in a union whose float members' constraints refuse it while
another member takes an integer (msgspec decodes a float only into the float members): the
schema and the decoder then accept the same values.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
import msgspec.inspect as mi


@functools.lru_cache(maxsize=512)
def _info(args_type: Any) -> mi.Type:
    return mi.type_info(args_type)


def _takes_int_not_float(info: mi.Type) -> bool:
    if isinstance(info, mi.IntType):
        return True
    if isinstance(info, mi.LiteralType):
        return any(isinstance(v, int) and not isinstance(v, bool) for v in info.values)
    if isinstance(info, mi.EnumType):
        return any(isinstance(m.value, int) and not isinstance(m.value, bool) for m in info.cls)
    if isinstance(info, mi.UnionType):
        return not any(isinstance(t, mi.FloatType) for t in info.types) and any(
            _takes_int_not_float(t) for t in info.types
        )
    return False


def _object_fields(info: mi.Type, value: dict[str, Any]) -> dict[str, mi.Type] | None:
    """Field types by wire name of the object-like type ``value`` decodes into, if known."""
    if isinstance(info, mi.StructType | mi.DataclassType | mi.TypedDictType):
        return {field.encode_name: field.type for field in info.fields}
    if isinstance(info, mi.UnionType):
        for member in info.types:
            if isinstance(member, mi.StructType) and member.tag_field is not None:
                if value.get(member.tag_field) == member.tag:
                    return _object_fields(member, value)
            elif isinstance(member, mi.StructType | mi.DataclassType | mi.TypedDictType):
                return _object_fields(member, value)
    return None


def _fits_float(value: float, info: mi.FloatType) -> bool:
    """Whether ``value`` meets a float type's constraints."""
    return (
        (info.gt is None or value > info.gt)
        and (info.ge is None or value >= info.ge)
        and (info.lt is None or value < info.lt)
        and (info.le is None or value <= info.le)
        and (info.multiple_of is None or value % info.multiple_of == 0)
    )


def _int_instead(value: float, info: mi.Type) -> bool:
    """Whether an integral float must become an ``int``: the type takes an int and no float,
    or (a union) every float member's constraints refuse it while another member takes an int
    — msgspec tries a float only on the float members, the schema tries every member."""
    if _takes_int_not_float(info):
        return True
    if not isinstance(info, mi.UnionType):
        return False
    floats = [t for t in info.types if isinstance(t, mi.FloatType)]
    others = [t for t in info.types if not isinstance(t, mi.FloatType)]
    return (
        bool(floats)
        and not any(_fits_float(value, t) for t in floats)
        and any(_takes_int_not_float(t) for t in others)
    )


def _whole_numbers(value: Any, info: mi.Type) -> Any:
    """``value`` with integral floats turned into ints where ``info`` takes an int."""
    if isinstance(value, float):
        if value.is_integer() and _int_instead(value, info):
            return int(value)
        return value
    if isinstance(value, list):
        return _items(value, info)
    if isinstance(value, dict):
        if isinstance(info, mi.UnionType):
            dicts = [t for t in info.types if isinstance(t, mi.DictType)]
            if dicts:
                info = dicts[0]
        if isinstance(info, mi.DictType):
            return {k: _whole_numbers(v, info.value_type) for k, v in value.items()}
        fields = _object_fields(info, value)
        if fields is None:
            return value
        return {k: _whole_numbers(v, fields[k]) if k in fields else v for k, v in value.items()}
    return value


def _items(value: list[Any], info: mi.Type) -> list[Any]:
    if isinstance(info, mi.UnionType):
        arrays = [
            t for t in info.types if isinstance(t, mi.ListType | mi.VarTupleType | mi.TupleType)
        ]
        if not arrays:
            return value
        info = arrays[0]
    if isinstance(info, mi.ListType | mi.VarTupleType):
        return [_whole_numbers(item, info.item_type) for item in value]
    if isinstance(info, mi.TupleType):
        return [
            _whole_numbers(item, info.item_types[i]) if i < len(info.item_types) else item
            for i, item in enumerate(value)
        ]
    return value


def decode_args(args: Any, args_type: Any) -> Any:
    """Decode checked arguments into ``args_type`` (strictly: no string-to-number coercion).

    Raises:
        msgspec.ValidationError: the arguments do not decode.
    """
    return msgspec.convert(_whole_numbers(args, _info(args_type)), args_type, strict=True)
