"""The writes codec (docs/storage.md#the-writes-codec): every tree reads back exactly, each row
is stored plain or compressed with the shipped dictionary by which is smaller, every row an
earlier version wrote still reads, and a damaged row is named, on both backends."""

from __future__ import annotations

import hashlib
import importlib.resources
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_runtime.errors import InvalidValue, StoreDamaged
from afp_runtime.records import (
    AnyWrite,
    CommitBundle,
    CompactionsWrite,
    FinalAnswerWrite,
    FinalValueWrite,
    HistoryWrite,
    IterationWrite,
    ReceiptWrite,
    RunLog,
    Txn,
    WrapUpAskedWrite,
    writes_from_wire,
)
from afp_runtime.served.receipt import Receipt
from afp_runtime.store import Store, codec, codec_compact, open_store
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing.store_conformance import T0, bundle, fresh, new_agent, run_start
from afp_runtime.window.records import SlidingWindowRecord
from afp_runtime.window.refusals import Refusal
from afp_runtime.window.stage import record_to_wire
from tests.store import _compact_encoder as compact
from tests.store._codec_trees import big_ints, keys, receipts, records, texts, trees
from tests.store._postgres import FreshDatabase, admin
from tests.store.test_sqlite import raw

_plain = msgspec.msgpack.Encoder().encode
WRITES = tuple[AnyWrite, ...]
NEW_FORMATS = {codec.PLAIN, codec.ZSTD_1}


def same_as_plain(value: Any) -> bool:
    """``value``'s blob is in a format of today and reads back to a tree whose plain bytes are
    ``value``'s."""
    blob = codec.encode(value)
    return blob[:2] in NEW_FORMATS and _plain(codec.decode(blob)) == _plain(value)


# -- every tree ----------------------------------------------------------------------------------


@given(trees)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_every_tree_reads_back_as_its_plain_form(tree: Any) -> None:
    """Any tree of MessagePack values (number keys too) reads back exactly as stored plain."""
    assert same_as_plain(tree)


@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), texts, big_ints),
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(keys | st.integers(-9, 9), children, max_size=4),
        ),
        max_leaves=12,
    ).map(lambda tree: [tree, 2**70])
)
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_ints_beyond_64_bits_read_back_exactly(tree: Any) -> None:
    """A tree holding ints MessagePack cannot (a model's argument of 10**30), under number
    keys too, is stored and reads back as the same tree."""
    blob = codec.encode(tree)
    assert blob[:2] in NEW_FORMATS
    assert codec.decode(blob) == tree


def test_an_int_beyond_64_bits_as_a_map_key_is_refused_by_name() -> None:
    """A big int as a key cannot be stored at all: an InvalidValue says so, not an
    OverflowError."""
    with pytest.raises(InvalidValue, match="beyond 64 bits"):
        codec.encode([{"key": "scratch", "verb": "set", "value": {10**30: 1}}])


@pytest.mark.parametrize(
    "writes",
    [
        (FinalValueWrite(value={"n": 10**30, "m": [1, -(10**40)]}),),
        (IterationWrite(value=10**30),),
    ],
    ids=["any-value", "int-field"],
)
def test_big_ints_read_back_typed(writes: tuple[AnyWrite, ...]) -> None:
    """Typed writes holding ints beyond 64 bits read back as the same writes, where the value
    is any JSON (the ext decodes to the int) and where a field is an int (the typed decoder
    refuses the ext, and the tree is converted)."""
    assert codec.decode(codec.encode(writes), WRITES) == writes


@given(st.lists(records, min_size=1, max_size=3))
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_window_records_read_back_typed(found: list[Any]) -> None:
    """A window bundle's writes, records with refusals of every reason, read back as the typed
    writes the plain form converts to."""
    writes = (
        HistoryWrite(verb="set", value={"ranges": [[40, 41], [3, 40]]}),
        CompactionsWrite(verb="append", value=[record_to_wire(r) for r in found]),
    )
    assert same_as_plain(writes)
    expected = writes_from_wire(msgspec.msgpack.decode(_plain(writes)))
    assert codec.decode(codec.encode(writes), WRITES) == expected


@given(receipts)
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_receipts_read_back_typed(receipt: Receipt) -> None:
    """A receipt with any of its optional parts reads back as the same typed write."""
    writes = (ReceiptWrite(verb="set", value=receipt),)
    assert same_as_plain(writes)
    expected = writes_from_wire(msgspec.msgpack.decode(_plain(writes)))
    assert codec.decode(codec.encode(writes), WRITES) == expected


# -- the format chosen per row -------------------------------------------------------------------


def _window(kept: int) -> tuple[CompactionsWrite]:
    record = SlidingWindowRecord(
        iteration=3,
        keep_recent_turns=kept,
        removed_stage_ids=("seed#0",),
        removed_message_count=2,
        window_chars_before=9000,
        window_chars_after=8000,
        turns_before=kept + 1,
        turns_after=kept,
        refusals=tuple(
            Refusal(reason="inside-keep-window", turn_index=i, message_index=2 * i + i % 3)
            for i in range(1, kept + 1)
        ),
    )
    return (CompactionsWrite(verb="append", value=[record_to_wire(record)]),)


def test_a_window_record_is_stored_compressed_in_a_few_bytes_a_turn() -> None:
    """A sliding-window record refusing 20 kept turns (the benchmark's window) is stored
    compressed, in under a quarter of its plain bytes."""
    writes = _window(20)
    blob = codec.encode(writes)
    assert blob[:2] == codec.ZSTD_1
    assert len(blob) < len(_plain(writes)) / 4
    assert same_as_plain(writes)


def test_a_row_compression_does_not_shrink_is_stored_plain() -> None:
    """Rows under ``COMPRESS_FROM`` bytes, and rows zstd would not make smaller (random
    bytes), are stored as their MessagePack behind the plain marker."""
    small = [{"key": "x"}]
    noise = [{"key": "scratch", "value": random.Random(0).randbytes(100)}]
    for value in (small, noise, []):
        assert codec.encode(value) == codec.PLAIN + _plain(value)
    assert len(_plain(small)) < codec.COMPRESS_FROM <= len(_plain(noise))


def test_no_earlier_row_starts_with_a_marker_of_today() -> None:
    """Plain rows never start with 0xC1 (MessagePack never uses it) and compact ones start with
    ``0xC1 0x01``: today's markers are neither."""
    assert codec_compact.MARKER not in NEW_FORMATS | set(codec.DICTIONARIES)
    assert all(marker[:1] == b"\xc1" for marker in NEW_FORMATS)
    assert codec.WRITE_WITH in codec.DICTIONARIES


@given(trees)
@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
def test_a_plain_row_never_starts_with_a_marker(tree: Any) -> None:
    """The plain form of any tree starts with another byte."""
    assert _plain(tree)[:1] != b"\xc1"


# Stored rows name the dictionary by their format byte: it may never change.
_DICTIONARY_SHA256 = "6cdbcbdef84e422e8b96180d55a7657491c509bf14362bfe8316b1bfaae79854"
# A row of dictionary 1 as this version wrote it.
_GOLDEN = bytes.fromhex(
    "c1032072750200d40392d92e7468652070617263656c2061727269766573206f6e2054756573646179"
    "2c2063617272696572207361797320736f77726170557041736b6564c204fc021fc0580363c84081166e8b06"
)


def test_the_shipped_dictionary_is_the_one_rows_were_written_with() -> None:
    """The dictionary file is byte for byte the one of format ``0xC1 0x03``, and a row this
    version wrote with it still reads back (a retrained dictionary is a new format)."""
    shipped = importlib.resources.files("afp_runtime.store").joinpath(
        "dictionaries", codec.DICTIONARIES[codec.ZSTD_1]
    )
    assert hashlib.sha256(shipped.read_bytes()).hexdigest() == _DICTIONARY_SHA256
    writes = (
        FinalAnswerWrite(value="the parcel arrives on Tuesday, carrier says so"),
        WrapUpAskedWrite(value=False),
    )
    assert codec.decode(_GOLDEN, WRITES) == writes
    assert codec.encode(writes) == _GOLDEN


async def test_threads_encode_and_decode_at_once() -> None:
    """Each thread has its own zstd contexts: rows encoded and decoded from several threads at
    once all read back."""
    values = [_window(n) for n in range(2, 40)]
    found: list[bool] = []

    def round_trips() -> bool:
        return all(codec.decode(codec.encode(v), WRITES) == v for v in values * 5)

    async def one() -> None:
        found.append(await anyio.to_thread.run_sync(round_trips))

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(one)
    assert found == [True] * 4


# -- damage --------------------------------------------------------------------------------------

_FRAME = codec.encode(_window(5))


@pytest.mark.parametrize(
    ("blob", "named"),
    [
        (_FRAME[:-3], "does not decompress"),
        (_FRAME + b"\x00", "does not decompress"),
        # A single-segment frame header saying it holds 2**40 bytes, then an empty block.
        (codec.ZSTD_1 + b"\xe0" + (2**40).to_bytes(8, "little") + b"\x01\x00\x00", "says it"),
        (codec.ZSTD_1, "does not decompress"),
        (b"\xc1\x09\x90", "unknown stored format 0xc109"),
        (codec.PLAIN + b"\x92\x01", "truncated"),
        (codec_compact.MARKER + b"\xd4\x01\x7f", "does not expand"),
    ],
    ids=["truncated", "trailing", "huge", "empty", "later-format", "plain-truncated", "compact"],
)
def test_a_damaged_row_is_a_decode_error_naming_what(blob: bytes, named: str) -> None:
    """A row that does not decode is a DecodeError saying why, never a zstd error, a
    MemoryError or a KeyError."""
    with pytest.raises(msgspec.DecodeError, match=named):
        codec.decode(blob, WRITES)


# -- through the stores --------------------------------------------------------------------------

_RECEIPT = ReceiptWrite(value={"hash": "ab" * 32, "runId": "run-x"})


async def _one_run(store: Store) -> tuple[str, list[CommitBundle]]:
    agent_id = await new_agent(store)
    run_id = fresh("run")
    bundles = [
        bundle(run_id, 0, "seed", _RECEIPT),
        bundle(run_id, 1, "window", *_window(3)),
        bundle(run_id, 2, "window"),  # no writes: too small to compress
    ]
    await store.commit(
        Txn(agent_id=agent_id, run_start=run_start(agent_id, run_id), bundles=bundles)
    )
    return run_id, bundles


async def _reads(store: Store, run_id: str) -> tuple[Any, ...]:
    """The bundles of a run as the port and its run log give them back."""
    stored = await store.bundles(run_id)

    def read(log: RunLog) -> tuple[Any, ...]:
        return tuple(b.writes for b in log.bundles()), log.value_at("compactions", 1)

    return [b.writes for b in stored], await store.read_run(run_id, read)


# Each bundle rewritten as a row of another version: no marker, compact, today's plain.
_EARLIER = (_plain, compact.encode, lambda w: codec.PLAIN + _plain(w))


@pytest.fixture(name="sqlite_store")
async def fixture_sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    """A writer store on a new SQLite file."""
    store = await SqliteStore.open(tmp_path / "afp.sqlite3", now_ms=T0)
    yield store
    await store.aclose()


async def test_sqlite_rows_of_every_version_read_alike(
    sqlite_store: SqliteStore, tmp_path: Path
) -> None:
    """Rows are written in today's formats (the window compressed); rewritten as an earlier
    version stored them, row by row, they read back identically."""
    run_id, bundles = await _one_run(sqlite_store)
    path = tmp_path / "afp.sqlite3"
    rows = await raw(path, "SELECT writes FROM bundles ORDER BY seq")
    assert [bytes(r[0][:2]) for r in rows] == [codec.ZSTD_1, codec.ZSTD_1, codec.PLAIN]
    now = await _reads(sqlite_store, run_id)
    assert now[0] == [list(b.writes) for b in bundles]
    for form, b in zip(_EARLIER, bundles, strict=True):
        await raw(
            path,
            "UPDATE bundles SET writes=? WHERE seq=? AND run=(SELECT run FROM runs WHERE run_id=?)",
            (form(b.writes), b.seq, run_id),
        )
    stored = {bytes(r[0][:2]) for r in await raw(path, "SELECT writes FROM bundles")}
    assert stored.isdisjoint({codec.ZSTD_1}) and codec_compact.MARKER in stored
    assert await _reads(sqlite_store, run_id) == now


async def test_a_damaged_row_is_named_by_the_store(
    sqlite_store: SqliteStore, tmp_path: Path
) -> None:
    """A compressed row cut short reads as StoreDamaged naming its bundle and run."""
    run_id, _ = await _one_run(sqlite_store)
    path = tmp_path / "afp.sqlite3"
    ((blob,),) = await raw(path, "SELECT writes FROM bundles WHERE seq=1")
    await raw(path, "UPDATE bundles SET writes=? WHERE seq=1", (bytes(blob)[:-4],))
    with pytest.raises(StoreDamaged, match=f"bundle 1 of run '{run_id}' does not decode"):
        await sqlite_store.bundles(run_id)


async def test_a_row_of_wrong_writes_is_named_as_before(
    sqlite_store: SqliteStore, tmp_path: Path
) -> None:
    """A row of today's format that decodes but holds no typed writes is named with the
    message the plain rows give (``not a list of commit writes``)."""
    run_id, _ = await _one_run(sqlite_store)
    path = tmp_path / "afp.sqlite3"
    wrong = codec.encode([{"key": "finalAnswer", "verb": "set", "value": 5}])
    await raw(path, "UPDATE bundles SET writes=? WHERE seq=2", (wrong,))
    with pytest.raises(StoreDamaged, match="not a list of commit writes: Expected `str`"):
        await sqlite_store.bundles(run_id)


async def test_postgres_rows_of_every_version_read_alike() -> None:
    """On Postgres too, rows are written in today's formats and rows of earlier versions read
    back identically."""
    async with FreshDatabase() as database:
        store = await open_store(database.url, now_ms=T0)
        try:
            run_id, bundles = await _one_run(store)
            now = await _reads(store, run_id)
            assert now[0] == [list(b.writes) for b in bundles]
            conn = await admin(database.url)
            try:
                heads = await conn.fetch("SELECT substr(writes, 1, 2) AS h FROM bundles")
                assert {bytes(r["h"]) for r in heads} == NEW_FORMATS
                for form, b in zip(_EARLIER, bundles, strict=True):
                    await conn.execute(
                        "UPDATE bundles SET writes=$1 WHERE seq=$2"
                        " AND run=(SELECT run FROM runs WHERE run_id=$3)",
                        form(b.writes),
                        b.seq,
                        run_id,
                    )
            finally:
                await conn.close()
            assert await _reads(store, run_id) == now
        finally:
            await store.aclose()
