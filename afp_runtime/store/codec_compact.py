"""The compact form of bundle writes of version 1 (docs/storage.md#the-writes-codec), read
only: rows written by earlier versions of the runtime hold it, and they keep reading exactly as
they did. New rows are written by ``store/codec.py``.

A compact blob starts with ``MARKER`` and is MessagePack of the writes' value tree with:

* map keys and strings of the runtime's fixed vocabulary (``WORDS``) as one-byte codes;
* 64-character lowercase hex strings (digests) as their 32 bytes;
* ints beyond 64 bits as their decimal digits;
* ``<prefix><uuid>`` strings (run ids) as the prefix and the uuid's 16 bytes;
* a list of two or more maps with the same keys in the same order as one table, a column whose
  values are all one value once, a column of ints rising by steps under 256 as its first value
  and the steps.

It expands to exactly the tree ``msgspec`` decodes from the plain MessagePack of the same value.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

MARKER = b"\xc1\x01"
"""Starts a compact blob: 0xC1 is never used by MessagePack, then the form's version."""

# The vocabulary, by code, as version 1 wrote it: fixed for ever (stored rows name codes).
WORDS: tuple[str, ...] = (
    # a write, its verbs and the keys stages write
    "key", "verb", "value", "set", "append", "delete",
    "runId", "agentId", "turn", "runKind", "recoveredFrom", "userMessage", "history",
    "iteration", "maxIterations", "model", "provider", "definition", "runUsage", "foldedSpans",
    "findingsLedger", "wrapUpAsked", "stoppedEarly", "reply", "callFailure", "systemPieces",
    "servedTools", "requestOnly", "finalAnswer", "ignoredToolCalls", "toolResults",
    "compactions", "receipt", "ranges", "spans",
    # receipts (docs/served.md#receipt-fields)
    "version", "basis", "epoch", "agentCall", "callRuntimeStageId", "system", "hash", "chars",
    "pieces", "slot", "source", "messages", "count", "digest", "newEntries", "index", "role",
    "reason", "tools", "names", "schemaHashes", "forced", "withheld", "params",
    "omittedForAttention", "hashes", "wire", "bytes", "encoder", "settings", "deterministic",
    # window records (docs/window.md#record-schemas)
    "strategy", "keepRecentTurns", "removedStageIds", "removedMessageCount",
    "windowCharsBefore", "windowCharsAfter", "turnsBefore", "turnsAfter", "refusals",
    "turnIndex", "messageIndex", "droppedObservations", "observations", "ledgerFacts",
    "droppedStandings", "pinned", "yielded", "limit", "standDown", "toolName", "toolCallId",
    "standing", "measuredTokens", "thresholdTokens", "overBudget", "summaryChars",
    "summarizerTokens", "summarizerSkipped", "sliding-window", "token-budget",
    "summarize-oldest", "current-request", "system-envelope", "paused-tool",
    "pending-check-in", "unresolved-tool-call", "last-tool-result", "ledger-fact",
    "inside-keep-window", "only-existing-summary", "summarizer-failed",
    "replacement-not-smaller",
    # replies, tool results, usage, roles
    "content", "toolCalls", "id", "name", "args", "usage", "input", "output", "status",
    "resultChars", "durationMs", "ok", "user", "assistant", "tool",
)  # fmt: skip

_NAMES: dict[int, str] = dict(enumerate(WORDS))

# ext types
_WORD, _DIGEST, _UUID, _TABLE, _SAME, _STEPS, _STRIDE, _NIBBLES, _BIG_INT = range(1, 10)
# What expansion leaves as it is (an ext only ever holds an int beyond 64 bits).
_KEPT_TEXT = frozenset({int, float, bool, type(None), bytes, msgspec.msgpack.Ext, str})


def decode(blob: bytes) -> Any:
    """The tree a compact blob (one starting with ``MARKER``) holds, exactly as the plain form
    of the same value decodes.

    Raises:
        msgspec.DecodeError: it does not expand.
    """
    try:
        return _expand(_decoder.decode(memoryview(blob)[len(MARKER) :]))
    except (IndexError, KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
        raise msgspec.DecodeError(f"a compact value does not expand: {exc}") from exc


def _uuid(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _ext(code: int, data: memoryview) -> Any:
    if code == _WORD:
        return _NAMES[data[0]]
    if code == _DIGEST:
        return data.hex()
    if code == _TABLE:
        head, *columns = _decoder.decode(data)
        return [dict(zip(head, row, strict=True)) for row in zip(*columns, strict=True)]
    if code == _SAME:
        size, value = _decoder.decode(data)
        return [value] * size
    if code == _STEPS:
        first, steps = _decoder.decode(data)
        return list(itertools.accumulate(steps, initial=first))
    if code == _STRIDE:
        size, first, step = _decoder.decode(data)
        return list(range(first, first + size * step, step))
    if code == _NIBBLES:
        size, first, packed = _decoder.decode(data)
        steps = [s for b in packed for s in (b >> 4, b & 15)][: size - 1]
        return list(itertools.accumulate(steps, initial=first))
    if code == _UUID:
        return bytes(data[:-16]).decode() + _uuid(bytes(data[-16:]))
    if code == _BIG_INT:
        return int(bytes(data).decode("ascii"))
    raise ValueError(f"unknown ext type {code}")


_decoder = msgspec.msgpack.Decoder(ext_hook=_ext)


def _expand(value: Any) -> Any:
    """``value`` with every map key that is a code spelled as its word."""
    kind = type(value)
    if kind is dict:
        return {
            _NAMES[k] if type(k) is int else k: v if type(v) in _KEPT_TEXT else _expand(v)
            for k, v in value.items()
        }
    if kind is list:
        return [v if type(v) in _KEPT_TEXT else _expand(v) for v in value]
    return value
