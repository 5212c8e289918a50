"""Recall benchmark: search latency over an agent's recall index, and what indexing adds to a fold.

Latency: one agent's index holds N messages that left its window (10,000 and 1,000,000; only
10,000 with ``--quick``). The entries are made by bulk inserts straight into the index's tables
(``recall_entries`` and, on SQLite, the FTS5 ``recall_text``), not by running folds: building a
million by real folds would take hours. Their text is realistic: person's asks, tool calls and
results, assistant replies, over a vocabulary of ~2,000 words drawn Zipf-like, with order ids
(``ord-<n>``), amounts and customer names. 200 queries, drawn the same way (an exact order id, an
id with a word, one or two common words, a name, a word no entry holds), each timed through the
store port (``store.recall``, limit 10: the FTS match, ranking, the rows read back and decoded),
after one warm-up pass; p50 and p99 in milliseconds.

Write cost: a fold of 20 messages committed through ``store.commit`` (the window visit's
transaction: its bundle, the checkpoint, the span) with the index and without it (the recall
step switched off), 40 folds each, alternating; the median process CPU time per fold commit
(SQLite does its work on the connection's thread, which ``time.process_time`` counts) and the
median wall time (on Postgres the server's work shows only there).

Prints JSON; ``--out FILE`` also writes it.

    .venv/bin/python scripts/bench/recall.py [--quick] [--db POSTGRES_SERVER_URL] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _pg
import anyio
import structlog

from afp_runtime.messages import Message, fingerprint
from afp_runtime.records import (
    CommitBundle,
    ConversationState,
    FoldedSpansWrite,
    HistoryWrite,
    Item,
    ListRef,
    RunStart,
    StoredFoldedSpan,
    Txn,
)
from afp_runtime.store import Store, open_store, recall_rows

AGENT = "desk"
RUN = "run-bench"
SIZES = (10_000, 1_000_000)
QUERIES = 200
FOLDS = 40
FOLD_SIZE = 20
BATCH = 20_000
NAMES = ("Ada", "Bashir", "Chen", "Dolores", "Emeka", "Freya", "Goran", "Hana", "Ines", "Jonas")


def vocabulary(rng: random.Random) -> list[str]:
    """~2,000 made-up lower-case words."""
    syllables = ["ka", "lo", "mi", "ner", "sto", "pa", "ri", "ven", "tu", "sel", "or", "an", "de"]
    words = {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(2600)}
    return sorted(words)[:2000]


class Text:
    """Realistic messages and queries over one vocabulary, Zipf-like (rank r drawn ∝ 1/r)."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        weights = [1 / (rank + 1) for rank in range(len(self.words))]
        self.cumulative = list(_accumulate(weights))

    def word(self) -> str:
        return self.rng.choices(self.words, cum_weights=self.cumulative)[0]

    def phrase(self, n: int) -> str:
        return " ".join(self.word() for _ in range(n))

    def message(self, k: int) -> tuple[str, str]:
        """The role and content of entry ``k``: order ``k % 50000`` and a customer."""
        order = f"ord-{k % 50_000}"
        name = NAMES[k % len(NAMES)]
        kind = k % 4
        if kind == 0:
            return "user", f"Please look at order {order} for {name}: {self.phrase(12)}?"
        if kind == 1:
            return "assistant", f"Checking {order}. {self.phrase(8)}"
        if kind == 2:
            amount = f"{(k * 37) % 1000}.{k % 100:02d}"
            return "tool", f"order {order} customer {name} amount {amount} {self.phrase(30)}"
        return "assistant", f"{name}'s order {order} is {self.phrase(15)}."

    def query(self, i: int, size: int) -> str:
        kind = i % 6
        order = f"ord-{self.rng.randrange(min(size, 50_000))}"
        if kind == 0:
            return order
        if kind == 1:
            return f"{order} {self.word()}"
        if kind == 2:
            return self.word()
        if kind == 3:
            return f"{self.word()} {self.word()}"
        if kind == 4:
            return f"{self.rng.choice(NAMES)} refund"
        return "zanzibar"


def _accumulate(values: list[float]) -> Iterator[float]:
    total = 0.0
    for value in values:
        total += value
        yield total


def entries(text: Text, start: int, end: int, agent: int) -> list[tuple[Any, ...]]:
    """``recall_entries`` rows ``start..end-1`` (positions far above any real item)."""
    rows = []
    for k in range(start, end):
        role, content = text.message(k)
        source = ("fold", "f" * 64) if k % 3 else ("drop", None)
        run, stage, said = f"run-{k // 200}", f"window#{k % 90}", 1_700_000_000_000 + k * 60_000
        rows.append((agent, 10_000_000 + k, *source, run, stage, role, content, None, None, said))
    return rows


COLUMNS = f"agent, {recall_rows.ENTRY_COLUMNS}"


def fill_sqlite(path: Path, size: int, text: Text) -> None:
    """Bulk inserts straight into the index (see the module's docstring)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        agent = conn.execute("SELECT agent FROM agents WHERE agent_id=?", (AGENT,)).fetchone()[0]
        for start in range(0, size, BATCH):
            rows = entries(text, start, min(size, start + BATCH), agent)
            conn.execute("BEGIN")
            conn.executemany(f"INSERT INTO recall_entries ({COLUMNS}) VALUES ({_q(11)})", rows)
            conn.execute(
                "INSERT INTO recall_text (rowid, body) SELECT -entry, content FROM recall_entries"
                " WHERE entry > -(SELECT COALESCE(MIN(rowid), 0) FROM recall_text)"
            )
            conn.execute("COMMIT")
        conn.execute("INSERT INTO recall_text (recall_text) VALUES ('optimize')")
    finally:
        conn.close()


def _q(n: int) -> str:
    return ", ".join("?" * n)


async def fill_postgres(url: str, size: int, text: Text) -> None:
    conn = await _pg.connection(url)
    try:
        agent = await conn.fetchval("SELECT agent FROM agents WHERE agent_id = $1", AGENT)
        marks = ", ".join(f"${n}" for n in range(1, 12))
        for start in range(0, size, BATCH):
            rows = entries(text, start, min(size, start + BATCH), agent)
            await conn.executemany(f"INSERT INTO recall_entries ({COLUMNS}) VALUES ({marks})", rows)
        await conn.execute("ANALYZE recall_entries")
    finally:
        await conn.close()


async def latency(store: Store, size: int, text: Text) -> dict[str, Any]:
    queries = [text.query(i, size) for i in range(QUERIES)]
    for query in queries[:20]:  # warm-up
        await store.recall(AGENT, query)
    times, hits = [], []
    for query in queries:
        start = time.perf_counter()
        found = await store.recall(AGENT, query)
        times.append((time.perf_counter() - start) * 1000)
        hits.append(len(found))
    times.sort()
    return {
        "indexed": size,
        "queries": len(queries),
        "p50Ms": round(statistics.median(times), 2),
        "p99Ms": round(times[int(len(times) * 0.99) - 1], 2),
        "maxMs": round(times[-1], 2),
        "meanHits": round(statistics.fmean(hits), 1),
    }


def _message(k: int, text: Text) -> Message:
    role, content = text.message(k)
    return Message(role="user" if role == "user" else "assistant", content=content)


class Folding:
    """One run that appends ``FOLD_SIZE`` messages and folds them, again and again."""

    def __init__(self, store: Store, text: Text) -> None:
        self.store, self.text = store, text
        self.seq = 0
        self.pos = 0
        self.folds = 0

    def bundle(self, stage: str, writes: list[Any]) -> CommitBundle:
        self.seq += 1
        return CommitBundle(
            run_id=RUN,
            seq=self.seq,
            stage=stage,
            runtime_stage_id=f"{stage}#{self.seq}",
            iteration=self.seq,
            writes=tuple(writes),
            committed_at_ms=self.seq,
        )

    async def start(self) -> None:
        start = RunStart(
            run_id=RUN, agent_id=AGENT, turn=1, kind="initial", started_at_ms=0, message_id="m-1"
        )
        await self.store.post(AGENT, "go", message_id="m-1", now_ms=0)
        await self.store.commit(
            Txn(
                agent_id=AGENT,
                run_start=start,
                bundles=[self.bundle("seed", [HistoryWrite(verb="set", value=ListRef())])],
                conversation=ConversationState(agent_id=AGENT, turn=1),
            )
        )

    async def append(self) -> None:
        """``FOLD_SIZE`` new messages in the window."""
        first = self.pos
        items = []
        for k in range(first, first + FOLD_SIZE):
            message = _message(k, self.text)
            items.append(Item(pos=k, fingerprint=fingerprint(message), message=message))
        self.pos += FOLD_SIZE
        window = ListRef(ranges=((first, self.pos),))
        await self.store.commit(
            Txn(
                agent_id=AGENT,
                items=items,
                bundles=[self.bundle("tool-calls", [HistoryWrite(verb="append", value=window)])],
                conversation=self.state(window),
            )
        )

    def state(self, history: ListRef) -> ConversationState:
        return ConversationState(
            agent_id=AGENT, turn=1, history=history, next_pos=self.pos, folded_count=self.folds
        )

    async def fold(self) -> tuple[float, float]:
        """Fold the window's messages; the commit's CPU and wall seconds."""
        removed = ListRef(ranges=((self.pos - FOLD_SIZE, self.pos),))
        span = StoredFoldedSpan(
            summary_fingerprint=f"{self.folds:064x}",
            run_id=RUN,
            iteration=self.seq + 1,
            folded_at_ms=self.seq,
            model="extractive/1",
            message_count=FOLD_SIZE,
            removed_stage_ids=(),
            retained="conversation",
            messages=removed,
        )
        writes = [
            HistoryWrite(verb="set", value=ListRef()),
            FoldedSpansWrite(verb="append", value={"spans": [self.folds, self.folds + 1]}),
        ]
        self.folds += 1
        txn = Txn(
            agent_id=AGENT,
            bundles=[self.bundle("window", writes)],
            conversation=self.state(ListRef()),
            folded=[span],
        )
        cpu, wall = time.process_time(), time.perf_counter()
        await self.store.commit(txn)
        return time.process_time() - cpu, time.perf_counter() - wall


async def write_cost(store: Store, text: Text) -> dict[str, Any]:
    folding = Folding(store, text)
    await folding.start()
    touches = recall_rows.touches
    measured: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    try:
        for i in range(FOLDS * 2):
            indexed = i % 2 == 0
            recall_rows.touches = touches if indexed else (lambda txn: False)  # type: ignore[assignment]
            await folding.append()
            measured[indexed].append(await folding.fold())
    finally:
        recall_rows.touches = touches  # type: ignore[assignment]

    def figures(pairs: list[tuple[float, float]]) -> dict[str, float]:
        return {
            "cpuMs": round(statistics.median(c for c, _ in pairs) * 1000, 3),
            "wallMs": round(statistics.median(w for _, w in pairs) * 1000, 3),
        }

    with_index, without = figures(measured[True]), figures(measured[False])
    return {
        "foldMessages": FOLD_SIZE,
        "folds": FOLDS,
        "withIndex": with_index,
        "withoutIndex": without,
        "addedCpuMs": round(with_index["cpuMs"] - without["cpuMs"], 3),
        "addedWallMs": round(with_index["wallMs"] - without["wallMs"], 3),
    }


async def on_sqlite(sizes: tuple[int, ...]) -> dict[str, Any]:
    results: dict[str, Any] = {"latency": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cost.db"
        store = await open_store(path, now_ms=0)
        try:
            await store.ensure_agent(AGENT, now_ms=0)
            results["writeCost"] = await write_cost(store, Text(3))
        finally:
            await store.aclose()
        for size in sizes:
            path = Path(tmp) / f"recall-{size}.db"
            store = await open_store(path, now_ms=0)
            await store.ensure_agent(AGENT, now_ms=0)
            await store.aclose()
            start = time.perf_counter()
            await anyio.to_thread.run_sync(fill_sqlite, path, size, Text())
            built = time.perf_counter() - start
            store = await open_store(path, now_ms=0)
            try:
                figures = await latency(store, size, Text(11))
            finally:
                await store.aclose()
            results["latency"].append({**figures, "buildSeconds": round(built, 1)})
    return results


async def on_postgres(server: str, sizes: tuple[int, ...]) -> dict[str, Any]:
    results: dict[str, Any] = {"latency": []}
    url = await _pg.create_database(server)
    try:
        store = await open_store(url, now_ms=0)
        try:
            await store.ensure_agent(AGENT, now_ms=0)
            results["writeCost"] = await write_cost(store, Text(3))
        finally:
            await store.aclose()
    finally:
        await _pg.drop_database(server, url)
    for size in sizes:
        url = await _pg.create_database(server)
        try:
            store = await open_store(url, now_ms=0)
            await store.ensure_agent(AGENT, now_ms=0)
            await store.aclose()
            start = time.perf_counter()
            await fill_postgres(url, size, Text())
            built = time.perf_counter() - start
            store = await open_store(url, now_ms=0)
            try:
                figures = await latency(store, size, Text(11))
            finally:
                await store.aclose()
            results["latency"].append({**figures, "buildSeconds": round(built, 1)})
        finally:
            await _pg.drop_database(server, url)
    return results


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10,000 indexed messages only")
    parser.add_argument("--sizes", type=int, nargs="+", help="indexed messages (overrides)")
    parser.add_argument("--db", help="a Postgres server URL; each size built in a fresh database")
    parser.add_argument("--out", help="also write the JSON to this file")
    args = parser.parse_args()
    sizes = tuple(args.sizes) if args.sizes else SIZES[:1] if args.quick else SIZES
    server = _pg.checked_server(args.db)
    found = await (on_postgres(server, sizes) if server else on_sqlite(sizes))
    report = {
        "benchmark": "recall",
        "backend": "postgres" if server else "sqlite",
        "mode": "quick" if args.quick else "full",
        "limit": 10,
        **found,
    }
    shown = json.dumps(report, indent=2)
    print(shown)
    if args.out:
        await anyio.Path(args.out).write_text(shown + "\n")


if __name__ == "__main__":
    anyio.run(main)
