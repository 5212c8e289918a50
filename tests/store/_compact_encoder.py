"""The encoder of the compact form of version 1 (``afp_runtime/store/codec_compact.py``), as
the runtime used it until the writes codec replaced it: the tests make compact blobs with it to
check that the read-only decoder still expands every tree the way the plain form decodes."""

from __future__ import annotations

import operator
from typing import Any

import msgspec

from afp_runtime.errors import InvalidValue
from afp_runtime.store.codec_compact import (
    _BIG_INT,
    _DIGEST,
    _NIBBLES,
    _SAME,
    _STEPS,
    _STRIDE,
    _TABLE,
    _UUID,
    _WORD,
    MARKER,
    WORDS,
)

_CODES: dict[str, int] = {word: code for code, word in enumerate(WORDS)}
_WORD_EXTS = {word: msgspec.msgpack.Ext(_WORD, bytes((code,))) for word, code in _CODES.items()}
_SCALARS = (str, int, bool, type(None))  # the types a same-value column may hold
_DICTS, _TEXTS = {dict}, {str}
_KEPT = frozenset({int, float, bool, type(None), bytes, msgspec.msgpack.Ext})
_encoder = msgspec.msgpack.Encoder()
_plain_decoder = msgspec.msgpack.Decoder()


class _NotCompact(Exception):
    """The tree holds something the compact form cannot say (a non-text map key, an ext)."""


def encode(value: Any) -> bytes:
    """``value`` (a bundle's writes) in the compact form, or plain when it cannot be.

    Raises:
        InvalidValue: ``value`` holds an int beyond 64 bits in a tree the compact form cannot
            hold (MessagePack has no such ints).
    """
    try:
        plain = _encoder.encode(value)
    except OverflowError:
        # An int beyond 64 bits (a model's argument of 10**30): kept as its digits.
        return _with_big_ints(value)
    try:
        return MARKER + _encoder.encode(_compact(_plain_decoder.decode(plain)))
    except _NotCompact:
        return plain


def _with_big_ints(value: Any) -> bytes:
    tree = _big_ints(msgspec.to_builtins(value, builtin_types=(bytes, bytearray, memoryview)))
    try:
        return MARKER + _encoder.encode(_compact(tree))
    except _NotCompact:
        raise InvalidValue(
            "a value holds an int beyond 64 bits where it cannot be stored", field="value"
        ) from None


def _big_ints(value: Any) -> Any:
    kind = type(value)
    if kind is int and not _INT_LOW <= value <= _INT_HIGH:
        return msgspec.msgpack.Ext(_BIG_INT, str(value).encode())
    if kind is dict:
        return {k: _big_ints(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_big_ints(v) for v in value]
    return value


# -- encoding ---------------------------------------------------------------------------------


def _compact(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        return _seen.get(value) or _text(value)
    if kind is dict:
        if set(map(type, value)) - _TEXTS:
            raise _NotCompact
        # Leaves inline (no call for a scalar or a text seen before): this runs on every commit.
        return {
            _CODES.get(k, k): v
            if type(v) in _KEPT
            else (_seen.get(v) or _text(v))
            if type(v) is str
            else _compact(v)
            for k, v in value.items()
        }
    if kind is list:
        if len(value) > 1 and type(value[0]) is dict:
            table = _table(value)
            if table is not None:
                return table
        return [
            v if type(v) in _KEPT else (_seen.get(v) or _text(v)) if type(v) is str else _compact(v)
            for v in value
        ]
    if kind in _KEPT:
        return value
    raise _NotCompact  # an ext, or a type the plain decoder does not give


def _text(text: str) -> Any:
    """The compact form of a text not in ``_seen``, remembered there: digests, run ids and names
    recur in bundle after bundle (a run's id, its tools' schema hashes, a message's hash in later
    receipts). A text stored as it is is remembered as it is; ``_seen.get(t) or _text(t)`` then
    spells an empty text again, harmlessly. Only short texts are remembered (what recurs is
    short), so the cache stays small however long the texts a host commits."""
    if len(text) > _SEEN_TEXT_MAX:
        return _spelled(text)
    if len(_seen) >= _SEEN_LIMIT:
        _seen.clear()
        _seen.update(_WORD_EXTS)
    found = _seen[text] = _spelled(text)
    return found


_SEEN_LIMIT = 4096
_SEEN_TEXT_MAX = 200  # a digest is 64, a run id about 40
_seen: dict[str, Any] = dict(_WORD_EXTS)


def _spelled(text: str) -> Any:
    size = len(text)
    if size == 64:
        raw = _hex(text)
        if raw is not None:
            return msgspec.msgpack.Ext(_DIGEST, raw)
    elif size >= 36 and text[-28] == "-" and text[-23] == "-" and text[-18] == "-":
        raw = _hex(text[-36:-28] + text[-27:-23] + text[-22:-18] + text[-17:-13] + text[-12:])
        if raw is not None and text[-13] == "-" and _uuid(raw) == text[-36:]:
            return msgspec.msgpack.Ext(_UUID, text[:-36].encode() + raw)
    return text


def _hex(text: str) -> bytes | None:
    """The bytes of lowercase hex ``text`` that spells them back exactly, else None."""
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    return raw if raw.hex() == text else None


def _uuid(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _table(rows: list[Any]) -> msgspec.msgpack.Ext | None:
    if set(map(type, rows)) != _DICTS:
        return None
    shapes = set(map(tuple, rows))  # each row's keys, in order
    if len(shapes) != 1 or not rows[0]:
        return None
    (keys,) = shapes
    if set(map(type, keys)) != _TEXTS:
        raise _NotCompact
    head = [_CODES.get(key, key) for key in keys]
    columns = [_column(c) for c in zip(*map(dict.values, rows), strict=True)]
    return msgspec.msgpack.Ext(_TABLE, _encoder.encode([head, *columns]))


def _column(values: tuple[Any, ...]) -> Any:
    first = values[0]
    kind = type(first)
    if set(map(type, values)) == {kind}:
        # One type throughout, so ``==`` is exact (no ``True == 1``); floats are left out
        # (``0.0 == -0.0``).
        if kind in _SCALARS and values.count(first) == len(values):
            return msgspec.msgpack.Ext(_SAME, _encoder.encode([len(values), _compact(first)]))
        if kind is int:
            ints = _ints(values)
            if ints is not None:
                return ints
        if kind in _KEPT:
            return values
    return [v if type(v) in _KEPT else _compact(v) for v in values]


# The ints MessagePack holds; a column's values are in range, a step between two may not be.
_INT_LOW, _INT_HIGH = -(2**63), 2**64 - 1


def _ints(values: tuple[int, ...]) -> msgspec.msgpack.Ext | None:
    """A column of ints as a stride, or as steps of 0 to 15 (two a byte) or of 0 to 255."""
    steps = list(map(operator.sub, values[1:], values[:-1]))
    low, high = min(steps), max(steps)
    if low == high:
        if not _INT_LOW <= low <= _INT_HIGH:  # a step MessagePack cannot hold: kept plain
            return None
        return msgspec.msgpack.Ext(_STRIDE, _encoder.encode([len(values), values[0], low]))
    if low < 0 or high > 255:
        return None
    if high < 16:
        steps.append(0)  # an odd count fills its last byte
        packed = bytes(a << 4 | b for a, b in zip(steps[::2], steps[1::2], strict=False))
        return msgspec.msgpack.Ext(_NIBBLES, _encoder.encode([len(values), values[0], packed]))
    return msgspec.msgpack.Ext(_STEPS, _encoder.encode([values[0], bytes(steps)]))
