"""The read-only decoder of version 1's compact bundle rows (docs/storage.md#the-writes-codec):
every tree the compact encoder of that version wrote expands to exactly what its plain form
decodes to, read through today's codec."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_runtime.records import CompactionsWrite, HistoryWrite, ReceiptWrite
from afp_runtime.served.receipt import Receipt
from afp_runtime.store import codec, codec_compact
from afp_runtime.window.stage import record_to_wire
from tests.store import _compact_encoder as compact
from tests.store._codec_trees import big_ints, keys, like_maps, receipts, records, texts, trees

_plain = msgspec.msgpack.Encoder().encode


def same_as_plain(value: Any) -> bool:
    """The compact blob of ``value`` is one, and expands to a tree whose plain bytes are
    ``value``'s."""
    blob = compact.encode(value)
    return blob[:2] == codec_compact.MARKER and _plain(codec.decode(blob)) == _plain(value)


@given(trees)
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_every_tree_expands_to_its_plain_form(tree: Any) -> None:
    """Any tree of MessagePack values that version stored (compact, or plain with no marker
    when it had no compact form) reads back as stored plain."""
    assert _plain(codec.decode(compact.encode(tree))) == _plain(tree)


def test_a_column_whose_step_messagepack_cannot_hold_expands() -> None:
    """Ints at both ends of MessagePack's range in one column (kept as they are) expand."""
    assert same_as_plain([{"n": -(2**63), "k": "a"}, {"n": 2**63, "k": "b"}])
    assert same_as_plain([{"n": 2**64 - 1}, {"n": -(2**63)}])


@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), texts, big_ints),
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(keys, children, max_size=4),
            like_maps(children),
        ),
        max_leaves=12,
    ).map(lambda tree: [tree, 2**70])
)
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_ints_beyond_64_bits_read_back_exactly(tree: Any) -> None:
    """A compact tree holding ints MessagePack cannot (as their digits) reads back exactly."""
    assert codec.decode(compact.encode(tree)) == tree


@given(st.lists(records, min_size=1, max_size=3))
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_window_records_expand_to_their_plain_form(found: list[Any]) -> None:
    """A window bundle's writes, records with refusals of every reason, read back exactly."""
    writes = (
        HistoryWrite(verb="set", value={"ranges": [[40, 41], [3, 40]]}),
        CompactionsWrite(verb="append", value=[record_to_wire(r) for r in found]),
    )
    assert same_as_plain(writes)


@given(receipts)
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_receipts_expand_to_their_plain_form(receipt: Receipt) -> None:
    """A receipt with any of its optional parts reads back exactly, digests as hex again."""
    assert same_as_plain((ReceiptWrite(verb="set", value=receipt),))


@pytest.mark.parametrize(
    "blob",
    [codec_compact.MARKER + b"\xd4\x01\x7f", codec_compact.MARKER + b"\xd4\x42\x00"],
    ids=["unknown-word", "unknown-ext"],
)
def test_a_compact_blob_that_does_not_expand_is_a_decode_error(blob: bytes) -> None:
    """A damaged compact blob is a DecodeError saying it does not expand, never a KeyError."""
    with pytest.raises(msgspec.DecodeError, match="does not expand"):
        codec.decode(blob)
