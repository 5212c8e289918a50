"""Stores written by earlier versions read and verify with today's code: before commit writes
were typed (94e2ff2, docs/storage.md#typed-bundle-writes) and before the writes codec (3cb80bf,
docs/storage.md#the-writes-codec), both with compact bundle rows; a damaged bundle (plain, as
the first versions stored them) is still named."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
import pytest

from afp_runtime.errors import StoreDamaged
from afp_runtime.findings import BasisRow, StandingRow
from afp_runtime.records import (
    FinalAnswerWrite,
    HistoryWrite,
    ListRef,
    PendingBatchWrite,
    ReceiptWrite,
    RunIdWrite,
    UnknownRow,
    ledger_row_to_wire,
    ledger_row_types,
)
from afp_runtime.scenario import run_scenario
from afp_runtime.store import codec, codec_compact, open_store
from tests.store._old_store import CASES, SCENARIOS, summary

DATA = Path(__file__).parent / "data"
UNTYPED = "main-94e2ff2"  # before commit writes were typed
COMPACT = "main-3cb80bf"  # before the writes codec
VERSIONS = (UNTYPED, COMPACT)
SHOWN: dict[str, dict[str, Any]] = {
    version: json.loads((DATA / version / "shown.json").read_text()) for version in VERSIONS
}
EVERY_STORE = [(version, case) for version in VERSIONS for case in sorted(CASES)]


async def _unpacked(case: str, into: Path, version: str = UNTYPED) -> Path:
    """A writable copy of the case's store as ``version`` wrote it."""
    path = into / f"{case}.sqlite"
    packed = await anyio.Path(DATA / version / f"{case}.sqlite.gz").read_bytes()
    await anyio.Path(path).write_bytes(gzip.decompress(packed))
    return path


@pytest.mark.parametrize(("version", "case"), EVERY_STORE)
async def test_a_store_of_an_earlier_version_shows_what_it_showed(
    version: str, case: str, tmp_path: Path
) -> None:
    """Every run, bundle, ledger row, question and served view of the old store reads back as
    the old code showed it, and every epoch still conforms."""
    store = await open_store(await _unpacked(case, tmp_path, version), now_ms=0)
    try:
        found = await summary(store)
        # Typed: each write is its key's class, with its value's type.
        for agent_id in found:
            for run in await store.runs(agent_id):
                writes = [w for b in await store.bundles(run.run_id) for w in b.writes]
                assert [w.value for w in writes if isinstance(w, RunIdWrite)] == [run.run_id]
                assert all(
                    isinstance(w.value, ListRef) for w in writes if isinstance(w, HistoryWrite)
                )
                assert all(
                    isinstance(w.value, str) for w in writes if isinstance(w, FinalAnswerWrite)
                )
    finally:
        await store.aclose()
    assert found == SHOWN[version][case]
    verdicts = [
        epoch["verdict"]
        for agent in found.values()
        for run in agent["served"].values()
        for epoch in run["epochs"].values()
    ]
    assert verdicts and set(verdicts) == {"verified"}


def _log_rows(path: Path) -> list[Any]:
    """Every bundle row (the stored writes as the tree they decode to) and key-index row of
    ``path``."""
    db = sqlite3.connect(path)
    try:
        return [
            [
                (*row[:-1], codec.decode(row[-1]))
                for row in db.execute(
                    "SELECT r.run_id, b.seq, b.stage, b.iteration, b.committed_at_ms, b.writes"
                    " FROM bundles b JOIN runs r ON r.run = b.run ORDER BY r.run_id, b.seq"
                )
            ],
            db.execute(
                "SELECT r.run_id, k.key, k.seq, k.verb FROM key_index k JOIN runs r"
                " ON r.run = k.run ORDER BY r.run_id, k.key, k.seq"
            ).fetchall(),
        ]
    finally:
        db.close()


def _heads(path: Path) -> set[bytes]:
    """The first two bytes of every stored bundle row of ``path``."""
    db = sqlite3.connect(path)
    try:
        return {bytes(blob[:2]) for (blob,) in db.execute("SELECT writes FROM bundles")}
    finally:
        db.close()


@pytest.mark.parametrize(("version", "case"), EVERY_STORE)
async def test_todays_writes_are_stored_as_the_earlier_ones_were(
    version: str, case: str, tmp_path: Path
) -> None:
    """The same scenario run by today's code commits the bundle rows and key index the earlier
    version committed, each row's writes the same tree (the typed writes' tag is the key;
    only the stored form moved: the old rows are plain or compact, today's in the codec's
    formats)."""
    name, turns = CASES[case]
    raw = json.loads(await anyio.Path(SCENARIOS / f"{name}.json").read_text())
    if turns is not None:
        raw["turns"] = raw["turns"][:turns]
    fresh = tmp_path / "fresh.sqlite"
    await run_scenario(json.dumps(raw), db_path=fresh)
    old = await _unpacked(case, tmp_path, version)
    now = await anyio.to_thread.run_sync(_log_rows, fresh)
    assert now[0] and now == await anyio.to_thread.run_sync(_log_rows, old)
    assert await anyio.to_thread.run_sync(_heads, fresh) <= {codec.PLAIN, codec.ZSTD_1}
    old_heads = await anyio.to_thread.run_sync(_heads, old)
    assert codec_compact.MARKER in old_heads
    assert old_heads.isdisjoint({codec.PLAIN, codec.ZSTD_1})


def test_the_old_stores_hold_what_the_typed_writes_cover() -> None:
    """The cases between them hold folds, findings, time rows, a pause and its answer, receipts
    and answers: the keys and ledger kinds the typed decoding is tested on."""
    agents = [
        agent for shown in SHOWN.values() for case in shown.values() for agent in case.values()
    ]
    keys = {key for agent in agents for key in agent["keys"]}
    kinds = {kind for agent in agents for kind in agent["ledgerKinds"]}
    assert {"foldedSpans", "findingsLedger", "pendingBatch", "receipt", "finalAnswer"} <= keys
    assert {"halted", "stoppedEarly", "wrapUpAsked", "compactions", "callCost"} <= keys
    assert {"basis", "standing", "call-window", "clock", "time-reading"} <= kinds


def _rewrite_bundle(path: Path, writes: Any) -> tuple[str, int]:
    """Store ``writes`` as the plain MessagePack of the first ``final`` bundle of ``path``."""
    db = sqlite3.connect(path)
    try:
        run, run_id, seq = db.execute(
            "SELECT b.run, r.run_id, b.seq FROM bundles b JOIN runs r ON r.run = b.run"
            " WHERE b.stage = 'final' ORDER BY b.run, b.seq LIMIT 1"
        ).fetchone()
        db.execute(
            "UPDATE bundles SET writes = ? WHERE run = ? AND seq = ?",
            (msgspec.msgpack.encode(writes), run, seq),
        )
        db.commit()
    finally:
        db.close()
    return str(run_id), int(seq)


@pytest.mark.parametrize(
    ("writes", "named"),
    [
        ([{"key": "finalAnswer", "verb": "set", "value": 5}], "Expected `str`, got `int`"),
        ([{"key": "scratch", "verb": "set", "value": 1}], "Invalid value 'scratch'"),
        ([{"key": "compactions", "verb": "set", "value": []}], "Invalid enum value 'set'"),
        ({"key": "finalAnswer"}, "Expected `array`, got `object`"),
    ],
    ids=["wrong-value-type", "unknown-key", "wrong-verb", "not-a-list"],
)
async def test_a_damaged_bundle_of_an_old_store_is_named(
    writes: Any, named: str, tmp_path: Path
) -> None:
    """A bundle whose writes are not typed writes is StoreDamaged naming the bundle, its run
    and what was wrong; the other runs still read."""
    path = await _unpacked("pause-answer", tmp_path)
    run_id, seq = await anyio.to_thread.run_sync(_rewrite_bundle, path, writes)
    store = await open_store(path, now_ms=0)
    try:
        with pytest.raises(StoreDamaged) as caught:
            await store.bundles(run_id)
        assert f"bundle {seq} of run {run_id!r}" in str(caught.value)
        assert named in str(caught.value)
        others = [r.run_id for r in await store.runs("scenario") if r.run_id != run_id]
        kept = [w for other in others for b in await store.bundles(other) for w in b.writes]
        assert any(isinstance(w, PendingBatchWrite) for w in kept)
        assert any(isinstance(w, ReceiptWrite) for w in kept)
    finally:
        await store.aclose()


def _ledger_of(path: Path) -> list[tuple[int, bytes]]:
    db = sqlite3.connect(path)
    try:
        return [(int(i), bytes(r)) for i, r in db.execute("SELECT idx, row FROM ledger_rows")]
    finally:
        db.close()


def _rewrite_ledger_row(path: Path, idx: int, row: Any) -> None:
    db = sqlite3.connect(path)
    try:
        db.execute(
            "UPDATE ledger_rows SET row = ? WHERE idx = ?", (msgspec.msgpack.encode(row), idx)
        )
        db.commit()
    finally:
        db.close()


@pytest.mark.parametrize("case", ["findings", "time-rows"])
async def test_the_ledger_of_an_old_store_reads_typed(case: str, tmp_path: Path) -> None:
    """Every ledger row the untyped code stored reads as its kind's class (none unknown) and
    renders back to the stored map (docs/storage.md#typed-ledger-rows)."""
    path = await _unpacked(case, tmp_path)
    stored = await anyio.to_thread.run_sync(_ledger_of, path)
    store = await open_store(path, now_ms=0)
    try:
        rows = await store.ledger("scenario")
    finally:
        await store.aclose()
    assert rows and len(rows) == len(stored)
    types = ledger_row_types()
    for row, (_, blob) in zip(rows, stored, strict=True):
        wire = msgspec.msgpack.decode(blob)
        assert type(row) is types[wire["kind"]]
        assert ledger_row_to_wire(row) == wire


async def test_an_unknown_kind_in_an_old_store_reads_as_an_unknown_row(tmp_path: Path) -> None:
    """A row of a kind no class is registered for reads as an UnknownRow carrying its map."""
    path = await _unpacked("findings", tmp_path)
    later = {"kind": "later-kind", "turn": 1, "note": {"a": [1]}}
    await anyio.to_thread.run_sync(_rewrite_ledger_row, path, 0, later)
    store = await open_store(path, now_ms=0)
    try:
        rows = await store.ledger("scenario")
    finally:
        await store.aclose()
    assert rows[0] == UnknownRow(kind="later-kind", fields={"turn": 1, "note": {"a": [1]}})
    assert ledger_row_to_wire(rows[0]) == later
    assert isinstance(rows[1], BasisRow | StandingRow)


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"kind": "basis", "toolCallId": "s1", "turn": 1, "iteration": 1}, "toolName"),
        ({"kind": "standing", "toolCallId": "s1", "standing": "maybe"}, "standing"),
        ({"turn": 1}, "kind"),
    ],
    ids=["missing-field", "bad-enum", "no-kind"],
)
async def test_a_damaged_ledger_row_is_named(row: Any, field: str, tmp_path: Path) -> None:
    """A stored row that does not decode into its kind's class is StoreDamaged naming the
    agent, the row's position and the field."""
    path = await _unpacked("findings", tmp_path)
    await anyio.to_thread.run_sync(_rewrite_ledger_row, path, 1, row)
    store = await open_store(path, now_ms=0)
    try:
        with pytest.raises(StoreDamaged) as caught:
            await store.ledger("scenario")
    finally:
        await store.aclose()
    assert "ledger row 1 of 'scenario'" in str(caught.value)
    assert field in str(caught.value)
