"""Served values are immutable (docs/served.md#a-view-is-a-value): JSON-object payloads are
read-only mappings, arrays tuples; this module freezes and thaws them and encodes served values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import msgspec

from afp_runtime.messages import Message


def freeze(value: Any) -> Any:
    """A read-only copy of a JSON-like value: mappings as MappingProxyType, arrays as tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable copy of a frozen JSON-like value: dicts and lists."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value


def served_enc_hook(obj: Any) -> Any:
    """msgspec ``enc_hook`` for served values: read-only mappings encode as objects."""
    if isinstance(obj, MappingProxyType):
        return dict(obj)
    raise TypeError(f"a served value cannot hold {type(obj).__name__}")


_json_encoder = msgspec.json.Encoder(enc_hook=served_enc_hook)


def encode_served(value: Any) -> bytes:
    """JSON bytes of any served value (view, location, report, receipt)."""
    return _json_encoder.encode(value)


def _with_args(message: Message, convert: Callable[[Any], Any]) -> Message:
    """The message with each tool call's ``args`` passed through ``convert``."""
    if not message.tool_calls:
        return message
    calls = tuple(
        msgspec.structs.replace(call, args=convert(call.args)) for call in message.tool_calls
    )
    return msgspec.structs.replace(message, tool_calls=calls)


def thaw_message(message: Message) -> Message:
    """The message with plain ``args`` dicts, ready for ``canonical_json`` and encoders."""
    return _with_args(message, thaw)


def freeze_message(message: Message) -> Message:
    """The message with read-only ``args`` (see ``freeze``), as a view holds it."""
    return _with_args(message, freeze)
