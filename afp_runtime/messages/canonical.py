"""The one deterministic encoder behind every digest: canonical JSON, fingerprints, salting.

Canonical JSON is msgspec's JSON with keys sorted by code point at every depth, compact, raw
UTF-8, and defaults omitted. A fingerprint hashes an explicit projection of a message (role,
content, toolCalls, toolCallId, toolName) so that markers, and any field added later, never
change an existing fingerprint.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import msgspec

from afp_runtime.messages.message import Message, ToolCall

_encoder = msgspec.json.Encoder(order="sorted")


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` canonically: sorted keys, compact, defaults omitted."""
    return _encoder.encode(value)


class _Body(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The fingerprinted projection of a message (no markers)."""

    role: str
    # Required, so an empty content is still written: the canonical form always carries it
    # (docs/served.md digest vector 3).
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None


_body_decoder = msgspec.json.Decoder(_Body)


def message_body(message: Message) -> bytes:
    """Canonical bytes of a message without its markers: what the store keeps per body."""
    return _encoder.encode(
        _Body(
            role=message.role,
            content=message.content,
            tool_calls=message.tool_calls,
            tool_call_id=message.tool_call_id,
            tool_name=message.tool_name,
        )
    )


def message_from_body(
    body: bytes, *, not_dispatched: bool = False, injected_by: str | None = None
) -> Message:
    """Rebuild a message from its stored body and the markers of its list reference."""
    raw = _body_decoder.decode(body)
    return Message(
        role=raw.role,  # type: ignore[arg-type]
        content=raw.content,
        tool_calls=raw.tool_calls,
        tool_call_id=raw.tool_call_id,
        tool_name=raw.tool_name,
        not_dispatched=not_dispatched,
        injected_by=injected_by,
    )


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def fingerprint(message: Message) -> str:
    """SHA-256 (64 lower-case hex) of the message's canonical body; markers excluded."""
    return sha256_hex(message_body(message))


@functools.lru_cache(maxsize=256)
def salt(run_id: str) -> bytes:
    """The bytes ``salted`` puts before its data: ``run_id`` and a unit separator (a run hashes
    many times with one salt, so it is encoded once)."""
    return run_id.encode("utf-8") + b"\x1f"


def salted(run_id: str, data: bytes | str) -> str:
    """SHA-256 of ``run_id``, a unit separator and ``data``: the receipt digest H."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(salt(run_id) + data).hexdigest()
