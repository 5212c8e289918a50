"""The stored form of a bundle's writes (docs/storage.md#the-writes-codec), one module for both
backends.

A blob written today is a format marker, then the MessagePack of the writes' wire form, either
as it is or compressed by zstd with a dictionary trained on the runtime's own rows and shipped
in the package (``dictionaries/``). Which of the two is chosen per row, by size: the smaller,
and only rows of at least ``COMPRESS_FROM`` bytes are tried. The markers start with ``0xC1``,
the one byte MessagePack never uses, followed by a format byte no earlier version wrote, so
every row any version wrote reads back:

* no marker: plain MessagePack (the first versions);
* ``0xC1 0x01``: the compact form of version 1 (``codec_compact``, read only);
* ``0xC1 0x02`` (``PLAIN``): MessagePack;
* ``0xC1 0x03`` (``ZSTD_1``): a zstd frame of the MessagePack, compressed with dictionary
  ``writes-1.zdict`` (magicless: no magic number, dictionary id or checksum; the marker names
  the dictionary, and the frame its content size).

A dictionary, once shipped, is never changed or removed: stored rows name it by their format
byte. A retrained one (``scripts/codec_dictionary.py``) is added beside it under the next
format byte, and new rows are written with it.
"""

from __future__ import annotations

import importlib.resources
import threading
from typing import Any, TypeVar, cast

import msgspec
import zstandard

from afp_runtime.errors import InvalidValue
from afp_runtime.store import codec_compact

T = TypeVar("T")

PLAIN = b"\xc1\x02"
"""Starts a blob holding the MessagePack as it is."""

ZSTD_1 = b"\xc1\x03"
"""Starts a blob holding a zstd frame of the MessagePack, made with dictionary 1."""

DICTIONARIES: dict[bytes, str] = {ZSTD_1: "writes-1.zdict"}
"""Each compressed format's marker and the shipped dictionary it names: append only."""

WRITE_WITH = ZSTD_1
"""The compressed format new rows are written in (the newest dictionary)."""

COMPRESS_FROM = 16
"""Rows whose MessagePack is shorter are stored as they are: a frame's own header and block
header cost about five bytes, more than a dictionary saves on a row this small."""

MAX_SIZE = 256 * 1024 * 1024
"""The largest MessagePack a blob is compressed from, and so the largest a frame may say it
holds: a damaged frame claiming more is refused instead of allocated."""

_LEVEL = 3
_FORMAT = zstandard.FORMAT_ZSTD1_MAGICLESS
_PARAMS = zstandard.ZstdCompressionParameters.from_level(
    _LEVEL, format=_FORMAT, write_checksum=0, write_dict_id=0, write_content_size=1
)
_BIG_INT = 1
"""The ext type of an int beyond MessagePack's 64 bits, held as its decimal digits."""
_INT_LOW, _INT_HIGH = -(2**63), 2**64 - 1


def _load(name: str) -> zstandard.ZstdCompressionDict:
    data = importlib.resources.files(__package__).joinpath("dictionaries", name).read_bytes()
    return zstandard.ZstdCompressionDict(data)


# Loaded once, at import (a few KB each): never a file read on the event loop.
_DICTS = {marker: _load(name) for marker, name in DICTIONARIES.items()}


class _PerThread(threading.local):
    """zstd contexts are not safe to share between threads, and are dear to make per row."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(
            dict_data=_DICTS[WRITE_WITH], compression_params=_PARAMS
        )
        self.decompressors: dict[bytes, zstandard.ZstdDecompressor] = {}

    def decompressor(self, marker: bytes) -> zstandard.ZstdDecompressor:
        found = self.decompressors.get(marker)
        if found is None:
            found = zstandard.ZstdDecompressor(dict_data=_DICTS[marker], format=_FORMAT)
            self.decompressors[marker] = found
        return found


_local = _PerThread()
_encoder = msgspec.msgpack.Encoder()
_plain_decoder = msgspec.msgpack.Decoder()


def _ext(code: int, data: memoryview) -> Any:
    if code == _BIG_INT:
        return int(bytes(data).decode("ascii"))
    return msgspec.msgpack.Ext(code, bytes(data))


_tree_decoder = msgspec.msgpack.Decoder(ext_hook=_ext)
_typed: dict[Any, msgspec.msgpack.Decoder[Any]] = {}


def encode(value: Any) -> bytes:
    """``value`` (a bundle's writes) as a blob: compressed when that is smaller, else plain.

    Raises:
        InvalidValue: ``value`` holds an int beyond 64 bits as a map key (MessagePack has no
            such ints, and a key cannot be held as its digits).
    """
    try:
        packed = _encoder.encode(value)
    except OverflowError:
        packed = _with_big_ints(value)
    if COMPRESS_FROM <= len(packed) <= MAX_SIZE:
        compressed = _local.compressor.compress(packed)
        if len(compressed) < len(packed):
            return WRITE_WITH + compressed
    return PLAIN + packed


def _with_big_ints(value: Any) -> bytes:
    """The MessagePack of ``value`` with each int beyond 64 bits (a model's argument of
    10**30) as an ext holding its digits."""
    tree = _big_ints(msgspec.to_builtins(value, builtin_types=(bytes, bytearray, memoryview)))
    try:
        return _encoder.encode(tree)
    except OverflowError:
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


def decode(blob: bytes, into: Any = Any) -> Any:
    """The value a blob of any version holds, as ``into`` (``Any``: the tree of builtins the
    plain MessagePack decodes to).

    Raises:
        msgspec.ValidationError: the value is not an ``into``.
        msgspec.DecodeError: the blob does not decode (a compressed one does not decompress, a
            compact one does not expand).
    """
    head = blob[:2]
    if head == PLAIN:
        payload: bytes | memoryview = memoryview(blob)[2:]
    elif head in _DICTS:
        payload = _decompressed(blob, head)
    else:
        # Written by an earlier version: compact, or plain with no marker.
        tree = codec_compact.decode(blob) if head == codec_compact.MARKER else _old_plain(blob)
        return tree if into is Any else msgspec.convert(tree, into)
    if into is Any:
        return _tree_decoder.decode(payload)
    try:
        return _typed_decoder(into).decode(payload)
    except msgspec.ValidationError:
        # An int beyond 64 bits is an ext where a typed field wants an int: the tree has it.
        return msgspec.convert(_tree_decoder.decode(payload), into)


def _old_plain(blob: bytes) -> Any:
    if blob[:1] == PLAIN[:1]:
        # A marker, but of no format this version knows (a later version's, or damage).
        raise msgspec.DecodeError(f"a value of unknown stored format 0x{blob[:2].hex()}")
    return _plain_decoder.decode(blob)


def _typed_decoder(into: Any) -> msgspec.msgpack.Decoder[Any]:
    found = _typed.get(into)
    if found is None:
        found = _typed[into] = msgspec.msgpack.Decoder(into, ext_hook=_ext)
    return found


def _decompressed(blob: bytes, head: bytes) -> bytes:
    frame = memoryview(blob)[2:]
    try:
        size = zstandard.get_frame_parameters(frame, format=_FORMAT).content_size
        if not 0 <= size <= MAX_SIZE:
            raise msgspec.DecodeError(f"a compressed value says it holds {size} bytes")
        return cast(bytes, _local.decompressor(head).decompress(frame, allow_extra_data=False))
    except zstandard.ZstdError as exc:
        raise msgspec.DecodeError(f"a compressed value does not decompress: {exc}") from exc
