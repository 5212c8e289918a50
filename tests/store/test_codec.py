"""The compact form of bundle writes (docs/storage.md#compact-bundle-writes): every tree expands
to exactly what its plain form decodes to, plain rows of older databases read as before on both
backends, and the forms that carry the bytes (receipts, window records) shrink."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_runtime.errors import InvalidValue, StoreDamaged
from afp_runtime.messages import ModelParams, Usage
from afp_runtime.records import (
    CommitBundle,
    CompactionsWrite,
    HistoryWrite,
    ReceiptWrite,
    RunLog,
    Txn,
)
from afp_runtime.served.receipt import (
    Basis,
    MessagesDigest,
    NewEntry,
    OmittedForAttention,
    PieceDigest,
    Receipt,
    RequestOnlyDigest,
    SystemDigest,
    ToolsDigest,
    WireDigest,
)
from afp_runtime.store import Store, codec, open_store
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing.store_conformance import T0, bundle, fresh, new_agent, run_start
from afp_runtime.window.observations import PinnedTurn, WindowObservations
from afp_runtime.window.records import (
    CustomRecord,
    DroppedStanding,
    SlidingWindowRecord,
    SummarizeOldestRecord,
    TokenBudgetRecord,
)
from afp_runtime.window.refusals import REFUSAL_REASONS, Refusal
from afp_runtime.window.stage import record_to_wire
from tests.store._postgres import FreshDatabase, admin
from tests.store.test_sqlite import raw

_plain = msgspec.msgpack.Encoder().encode


def same_as_plain(value: Any) -> bool:
    """The compact blob of ``value`` expands to a tree whose plain bytes are ``value``'s."""
    return _plain(codec.decode(codec.encode(value))) == _plain(value)


# -- random trees --------------------------------------------------------------------------------

digests = st.binary(min_size=32, max_size=32).map(bytes.hex)
texts = st.one_of(
    st.text(max_size=8),
    st.sampled_from(codec.WORDS),
    digests,
    digests.map(str.upper),  # not spelled back by ``hex()``: stays text
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    st.tuples(st.sampled_from(["run-", "", "msg-", "ünï-"]), st.uuids()).map(
        lambda p: p[0] + str(p[1])
    ),
    st.uuids().map(lambda u: "run-" + str(u).upper()),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(),
    texts,
    st.binary(max_size=8),
)
keys = st.one_of(st.sampled_from(codec.WORDS), st.text(max_size=6))
columns = st.one_of(
    st.integers(min_value=-3, max_value=300),
    st.booleans(),
    st.sampled_from(["inside-keep-window", "x"]),
    st.just(0.0) | st.just(-0.0),
)


def like_maps(children: st.SearchStrategy[Any]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Lists of two or more maps with the same keys in the same order (the tables)."""
    return st.lists(keys, min_size=1, max_size=3, unique=True).flatmap(
        lambda names: st.lists(
            st.fixed_dictionaries({name: columns | children for name in names}),
            min_size=2,
            max_size=6,
        )
    )


trees = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
        st.dictionaries(st.integers(-9, 9), children, min_size=1, max_size=2),
        like_maps(children),
    ),
    max_leaves=30,
)


@given(trees)
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_every_tree_expands_to_its_plain_form(tree: Any) -> None:
    """Any tree of MessagePack values reads back from its stored blob exactly as stored plain."""
    assert same_as_plain(tree)


def test_a_column_whose_step_messagepack_cannot_hold_is_kept_plain() -> None:
    """Ints at both ends of MessagePack's range in one column: their step (2**64) is beyond
    it, so the column is kept as it is and the rows still read back (found by the property
    above: the commit raised OverflowError)."""
    assert same_as_plain([{"n": -(2**63), "k": "a"}, {"n": 2**63, "k": "b"}])
    assert same_as_plain([{"n": 2**64 - 1}, {"n": -(2**63)}])


big_ints = st.one_of(st.integers(min_value=2**64), st.integers(max_value=-(2**63) - 1))


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
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_ints_beyond_64_bits_read_back_exactly(tree: Any) -> None:
    """A tree holding ints MessagePack cannot (a model's argument of 10**30) is stored and
    reads back as the same tree; before, the commit raised OverflowError."""
    assert codec.decode(codec.encode(tree)) == tree


def test_an_int_beyond_64_bits_under_a_number_key_is_refused_by_name() -> None:
    """A big int in a tree with no compact form cannot be stored at all: an InvalidValue says
    so, not a bare OverflowError."""
    with pytest.raises(InvalidValue, match="beyond 64 bits"):
        codec.encode([{"key": "scratch", "verb": "set", "value": {1: 10**30}}])


# -- the record kinds ----------------------------------------------------------------------------

refusals = st.lists(
    st.builds(
        Refusal,
        reason=st.sampled_from(sorted(REFUSAL_REASONS)),
        turn_index=st.integers(0, 500),
        message_index=st.integers(0, 5000),
    ),
    max_size=30,
).map(tuple)
pins = st.builds(
    WindowObservations,
    pinned=st.lists(
        st.builds(
            PinnedTurn,
            tool_name=st.text(max_size=5),
            turn_index=st.integers(0, 50),
            chars=st.integers(0, 10**6),
        ),
        max_size=4,
    ).map(tuple),
    yielded=st.integers(0, 5),
    limit=st.integers(0, 5),
)
optional = {
    "dropped_observations": st.lists(st.text(max_size=5), max_size=3).map(tuple),
    "observations": pins,
    "ledger_facts": pins,
    "dropped_standings": st.lists(
        st.builds(
            DroppedStanding,
            tool_call_id=st.text(max_size=5),
            tool_name=st.text(max_size=5),
            standing=st.sampled_from(["fact", "open", "noise", "ruled-out"]),
        ),
        max_size=3,
    ).map(tuple),
}
small = st.integers(0, 10**6)
common = {
    "iteration": small,
    "removed_stage_ids": st.lists(st.sampled_from(["seed#0", "tool-calls#3"]), max_size=3).map(
        tuple
    ),
    "removed_message_count": small,
    "window_chars_before": small,
    "window_chars_after": small,
    "refusals": refusals,
}
records = st.one_of(
    st.builds(
        SlidingWindowRecord,
        keep_recent_turns=small,
        turns_before=small,
        turns_after=small,
        **common,
        **optional,
    ),
    st.builds(
        TokenBudgetRecord,
        measured_tokens=small,
        threshold_tokens=st.floats(0, 10**6),
        over_budget=st.booleans(),
        keep_recent_turns=small,
        **common,
        **optional,
    ),
    st.builds(
        SummarizeOldestRecord,
        measured_tokens=small,
        threshold_tokens=st.floats(0, 10**6),
        over_budget=st.booleans(),
        summary_chars=small,
        summarizer_tokens=st.builds(Usage, input=small, output=small),
        summarizer_skipped=st.booleans(),
        **common,
        **optional,
    ),
    st.builds(
        CustomRecord,
        strategy=st.text(min_size=1, max_size=8),
        extra=st.dictionaries(st.text(max_size=5), scalars, max_size=3),
        **common,
        **optional,
    ),
)


@given(st.lists(records, min_size=1, max_size=3))
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_window_records_expand_to_their_plain_form(found: list[Any]) -> None:
    """A window bundle's writes, records with refusals of every reason, read back exactly."""
    writes = (
        HistoryWrite(verb="set", value={"ranges": [[40, 41], [3, 40]]}),
        CompactionsWrite(verb="append", value=[record_to_wire(r) for r in found]),
    )
    assert same_as_plain(writes)


receipts = st.builds(
    Receipt,
    version=st.just(1),
    basis=st.builds(
        Basis,
        epoch=small,
        run_id=st.uuids().map(lambda u: f"run-{u}"),
        model=st.text(max_size=5),
        provider=st.text(max_size=5),
    ),
    agent_call=small,
    call_runtime_stage_id=st.just("call-model#4"),
    system=st.builds(
        SystemDigest,
        hash=digests,
        chars=small,
        pieces=st.lists(
            st.builds(
                PieceDigest, hash=digests, slot=st.text(max_size=5), source=st.text(max_size=5)
            ),
            max_size=3,
        ).map(tuple),
    ),
    messages=st.builds(
        MessagesDigest,
        count=small,
        digest=digests,
        new_entries=st.lists(
            st.builds(
                NewEntry,
                index=small,
                role=st.sampled_from(["user", "assistant", "tool"]),
                hash=digests,
                key=st.none() | st.text(max_size=5),
            ),
            max_size=5,
        ).map(tuple),
        request_only=st.lists(
            st.builds(
                RequestOnlyDigest, role=st.just("user"), hash=digests, reason=st.text(max_size=5)
            ),
            max_size=2,
        ).map(tuple),
    ),
    tools=st.builds(
        ToolsDigest,
        names=st.lists(st.text(max_size=5), max_size=3).map(tuple),
        schema_hashes=st.dictionaries(st.text(max_size=5), digests, max_size=3),
        forced=st.none() | st.text(max_size=5),
        withheld=st.none() | st.just("wrap-up"),
    ),
    params=st.builds(
        ModelParams, temperature=st.none() | st.floats(0, 2), max_tokens=st.none() | small
    ),
    omitted_for_attention=st.none()
    | st.builds(OmittedForAttention, count=small, hashes=st.lists(digests, max_size=4).map(tuple)),
    wire=st.none()
    | st.builds(
        WireDigest,
        hash=digests,
        bytes=small,
        encoder=st.text(max_size=5),
        settings=digests,
        deterministic=st.booleans(),
    ),
)


@given(receipts)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_receipts_expand_to_their_plain_form(receipt: Receipt) -> None:
    """A receipt with any of its optional parts reads back exactly, digests as hex again."""
    assert same_as_plain((ReceiptWrite(verb="set", value=receipt),))


def test_receipts_keep_digests_as_bytes() -> None:
    """A receipt's stored blob holds each digest's 32 bytes and never its hex text."""
    digest = bytes(range(32))
    found = Receipt(
        version=1,
        basis=Basis(epoch=1, run_id="run-1", model="m", provider="p"),
        agent_call=1,
        call_runtime_stage_id="call-model#2",
        system=SystemDigest(hash=digest.hex(), chars=0),
        messages=MessagesDigest(count=0, digest=digest.hex()),
        tools=ToolsDigest(names=(), schema_hashes={}, forced=None, withheld=None),
        params=ModelParams(),
    )
    blob = codec.encode((ReceiptWrite(verb="set", value=found),))
    assert blob.startswith(codec.MARKER)
    assert blob.count(digest) == 2
    assert digest.hex().encode() not in blob


def test_kept_turns_cost_a_few_bytes_each() -> None:
    """A sliding-window record refusing 100 kept turns stores in under a tenth of its plain bytes
    and under 300 bytes, however many turns it keeps."""
    record = SlidingWindowRecord(
        iteration=3,
        keep_recent_turns=100,
        removed_stage_ids=("seed#0",),
        removed_message_count=2,
        window_chars_before=9000,
        window_chars_after=8000,
        turns_before=101,
        turns_after=100,
        refusals=tuple(
            Refusal(reason="inside-keep-window", turn_index=i, message_index=2 * i + i % 3)
            for i in range(1, 101)
        ),
    )
    writes = (CompactionsWrite(verb="append", value=[record_to_wire(record)]),)
    blob = codec.encode(writes)
    assert len(blob) < min(300, len(_plain(writes)) / 10)
    assert same_as_plain(writes)


def test_a_tree_with_a_number_key_is_stored_plain() -> None:
    """A map with a non-text key has no compact form: the blob is the plain bytes."""
    writes = [{"key": "scratch", "verb": "set", "value": {1: "one"}}]
    assert codec.encode(writes) == _plain(writes)


# -- through the stores --------------------------------------------------------------------------

_WINDOW = CompactionsWrite(
    verb="append",
    value=[
        record_to_wire(
            SlidingWindowRecord(
                iteration=1,
                keep_recent_turns=2,
                removed_stage_ids=(),
                removed_message_count=0,
                window_chars_before=10,
                window_chars_after=10,
                turns_before=2,
                turns_after=2,
                refusals=(
                    Refusal(reason="current-request", turn_index=0, message_index=0),
                    Refusal(reason="inside-keep-window", turn_index=1, message_index=2),
                ),
            )
        )
    ],
)
_RECEIPT = ReceiptWrite(value={"hash": "ab" * 32, "runId": "run-x"})


async def _one_run(store: Store) -> tuple[str, str, list[CommitBundle]]:
    agent_id = await new_agent(store)
    run_id = fresh("run")
    bundles = [bundle(run_id, 0, "seed", _RECEIPT), bundle(run_id, 1, "window", _WINDOW)]
    await store.commit(
        Txn(agent_id=agent_id, run_start=run_start(agent_id, run_id), bundles=bundles)
    )
    return agent_id, run_id, bundles


@pytest.fixture(name="sqlite_store")
async def fixture_sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    """A writer store on a new SQLite file."""
    store = await SqliteStore.open(tmp_path / "afp.sqlite3", now_ms=T0)
    yield store
    await store.aclose()


async def _reads(store: Store, run_id: str) -> tuple[Any, ...]:
    """The bundles of a run as the port and its run log give them back."""
    stored = await store.bundles(run_id)

    def read(log: RunLog) -> tuple[Any, ...]:
        return tuple(b.writes for b in log.bundles()), log.value_at("compactions", 1)

    return [b.writes for b in stored], await store.read_run(run_id, read)


async def test_plain_sqlite_rows_read_as_before(sqlite_store: SqliteStore, tmp_path: Path) -> None:
    """A bundle row rewritten in the plain form older databases hold reads back identically."""
    _, run_id, bundles = await _one_run(sqlite_store)
    path = tmp_path / "afp.sqlite3"
    assert [bytes(r[0][:2]) for r in await raw(path, "SELECT writes FROM bundles")] == [
        codec.MARKER
    ] * 2
    compact = await _reads(sqlite_store, run_id)
    for b in bundles:
        await raw(
            path,
            "UPDATE bundles SET writes=? WHERE seq=? AND run=(SELECT run FROM runs WHERE run_id=?)",
            (_plain(b.writes), b.seq, run_id),
        )
    assert await _reads(sqlite_store, run_id) == compact
    assert compact[0] == [list(b.writes) for b in bundles]


async def test_a_damaged_compact_row_is_named(sqlite_store: SqliteStore, tmp_path: Path) -> None:
    """A compact blob that does not expand reads as StoreDamaged naming its bundle."""
    _, run_id, _ = await _one_run(sqlite_store)
    await raw(
        tmp_path / "afp.sqlite3",
        "UPDATE bundles SET writes=? WHERE seq=1",
        (codec.MARKER + b"\xd4\x01\x7f",),
    )
    with pytest.raises(StoreDamaged, match="bundle 1 of run"):
        await sqlite_store.bundles(run_id)


async def test_plain_postgres_rows_read_as_before() -> None:
    """On Postgres too, a bundle row in the plain form reads back as its compact twin does."""
    async with FreshDatabase() as database:
        store = await open_store(database.url, now_ms=T0)
        try:
            _, run_id, bundles = await _one_run(store)
            compact = await _reads(store, run_id)
            conn = await admin(database.url)
            try:
                for b in bundles:
                    await conn.execute(
                        "UPDATE bundles SET writes=$1 WHERE seq=$2"
                        " AND run=(SELECT run FROM runs WHERE run_id=$3)",
                        _plain(b.writes),
                        b.seq,
                        run_id,
                    )
            finally:
                await conn.close()
            assert await _reads(store, run_id) == compact
            assert compact[0] == [list(b.writes) for b in bundles]
        finally:
            await store.aclose()
