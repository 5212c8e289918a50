"""Comparison benchmark: afp-runtime against LangGraph's SQLite saver and a raw-SQLite ceiling.

Every contender runs the same ReAct loop for N iterations (turns of ten: nine calls of one
trivial tool with a 300-character result, then a short answer; the model is a zero-latency
script deciding by call number) on a fresh SQLite file, each in a process of its own:

* ``afp-sliding``: one standing agent in the default durability (``sync``) under a sliding
  window keeping 20 turns, as a standing agent would run;
* ``afp-full-history``: the same agent with no window strategy (the whole history re-sent);
* ``langgraph``: a ``StateGraph`` over ``MessagesState`` (``add_messages``) with a model node
  (a plain async function returning the scripted ``AIMessage``; it encodes nothing, so it is
  cheaper than afp's scripted model, which encodes the wire request a receipt digests) and the
  prebuilt ``ToolNode``, routed by ``tools_condition``, checkpointed by ``AsyncSqliteSaver`` on a
  file, one thread, ``durability="sync"``;
* ``ceiling-full`` / ``ceiling-normal``: raw aiosqlite in WAL mode inserting the bytes afp
  stores for the same messages (``message_body``), one transaction per iteration, at
  ``synchronous=FULL`` (the ceiling of
  docs/architecture.md#decision-1-sync-durability-commits-at-effect-boundaries) and ``NORMAL``.

On Postgres (``--db URL``, a server; each run in a fresh database of its own, ``_pg.py``):

* ``afp-postgres`` / ``afp-postgres-full-history``: the two afp agents on a ``PostgresStore``;
* ``langgraph-postgres``: the same graph checkpointed by LangGraph's ``AsyncPostgresSaver``
  (psycopg, autocommit: one commit per checkpoint write, at the server's ``synchronous_commit``);
* ``ceiling-postgres``: raw asyncpg inserting the bytes afp stores, one transaction per
  iteration, at the server's ``synchronous_commit``.

Bytes on Postgres are the growth of the tables (``pg_total_relation_size`` summed, from after
the schema was set up to the end); the database's own growth (``pg_database_size``) is given
beside it. WAL is not counted, on either backend once checkpointed.

Per N it prints JSON per contender: iterations per second, median and p99 step latency (the
time between consecutive iteration ends; a turn's first iteration includes posting the person
message), bytes on disk after close, peak RSS of the child, and the ratios afp/LangGraph and
afp/ceiling, with ``its10kOver1k`` (and ``its100kOver1k`` when 100,000 is among the sizes) for
the sliding-window agent. Repetitions alternate the order of the contenders (A/B, then B/A)
and report the median of each figure.

    .venv/bin/python scripts/bench/compare.py [--iterations 100 1000 10000]
        [--langgraph-max 1000] [--full-history-max 1000] [--repeats 1] [--once-above N]
        [--db postgresql://SERVER] [--contenders NAME ...]

Without ``--contenders``: the SQLite five, or with ``--db`` the four Postgres ones and
``afp-sliding`` (afp on SQLite) beside them. ``--profile`` runs every child under ``cProfile``
and adds ``profile``: the share of the profiled time spent in each package's own code (the
profiler slows everything down, so those runs' other figures are not comparable).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import _pg
import anyio
from _common import (
    ITERATIONS_PER_TURN,
    KEEP_RECENT_TURNS,
    PAYLOAD_ENV,
    CommitTimer,
    IterationMarks,
    bench_agent,
    disk_bytes,
    latency_figures,
    peak_rss_mb,
    quiet_logs,
    ratio,
    result_text,
    rss_mb,
    run_child,
    step_latencies,
)

from afp_runtime._embed.running import backend_options, running_loop
from afp_runtime.loop import AgentDriver, SystemClock, TimeOrderedIds
from afp_runtime.messages import Message, ToolCall, message_body
from afp_runtime.store import Store, open_store
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.window import sliding_window

SQLITE_CONTENDERS = (
    "afp-sliding",
    "afp-full-history",
    "langgraph",
    "ceiling-full",
    "ceiling-normal",
)
POSTGRES_CONTENDERS = (
    "afp-postgres",
    "afp-postgres-full-history",
    "langgraph-postgres",
    "ceiling-postgres",
)
CONTENDERS = SQLITE_CONTENDERS + POSTGRES_CONTENDERS
SIZES = (100, 1_000, 10_000)


def sqlite_bytes(db: Path, n: int) -> dict[str, Any]:
    """Bytes on disk of a closed SQLite file (with its ``-wal`` and ``-shm``)."""
    size = disk_bytes(db)
    return {"bytesOnDisk": size, "bytesPerIteration": round(size / n, 1)}


def figures(n: int, start: float, marks: list[float], size: dict[str, Any]) -> dict[str, Any]:
    """The figures every contender reports from its iteration-end marks and its bytes."""
    elapsed = marks[-1] - start
    latencies = step_latencies(start, marks)
    tenth = max(1, len(latencies) // 10)
    first = sum(latencies[:tenth]) / tenth
    last = sum(latencies[-tenth:]) / tenth
    return {
        "iterations": len(marks),
        "seconds": round(elapsed, 3),
        "iterationsPerSecond": round(len(marks) / elapsed, 1),
        "iterationsPerSecondFirstTenth": round(1 / first, 1),
        "iterationsPerSecondLastTenth": round(1 / last, 1),
        **latency_figures(latencies),
        **size,
    }


# -- contenders (each runs in a child process) -------------------------------------------------


async def afp(n: int, folder: Path, window: bool, *, postgres: bool = False) -> dict[str, Any]:
    db = folder / "afp.db"
    clock = SystemClock()
    store: Store
    if postgres:
        url = _pg.child_database()
        store = await open_store(url)
        before = await _pg.database_bytes(url)
    else:
        store = await SqliteStore.open(db)
    # Closed however the run ends: a child left with an open store never exits (the SQLite
    # connection's thread is not a daemon), and the parent would wait for it forever.
    async with contextlib.aclosing(store):
        commits = CommitTimer(store)
        marks = IterationMarks()
        strategy = sliding_window(keep_recent_turns=KEEP_RECENT_TURNS) if window else None
        driver = AgentDriver(
            store,
            bench_agent(window=strategy),
            clock=clock,
            ids=TimeOrderedIds(clock.now_ms),
            hooks=marks,
        )
        baseline = rss_mb()
        # Opening (migrations) is not the loop's: counted from here on.
        opened = transaction_counts(store)
        server_cpu = await _pg.server_cpu_seconds(url) if postgres else None
        cpu = time.process_time()
        start = time.perf_counter()
        for turn in range(n // ITERATIONS_PER_TURN):
            await driver.post(f"turn {turn}")
            await driver.work()
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        if server_cpu is not None:
            server_cpu = await _pg.server_cpu_seconds(url) - server_cpu  # type: ignore[operator]
        counts = {
            **{k: v - opened[k] for k, v in transaction_counts(store).items()},
            "posts": n // ITERATIONS_PER_TURN,
            **commits.figures(wall, cpu, server_cpu),
            "cpuMsPerIteration": round(cpu * 1000 / n, 4),
        }
    if postgres:
        size = _pg.bytes_figures(before, await _pg.database_bytes(url), n)
    else:
        size = sqlite_bytes(db, n)
    return {
        **figures(n, start, marks.marks, size),
        **counts,
        "backend": "postgres" if postgres else "sqlite",
        "durability": "sync",
        "window": f"sliding-window keep {KEEP_RECENT_TURNS}" if window else None,
        "rssBaselineMb": baseline,
    }


def transaction_counts(store: Any) -> dict[str, int]:
    """The store's write transactions, and how many of them waited for the flush (``full``:
    they precede an effect leaving the process; the others commit at ``synchronous=NORMAL`` on
    SQLite, ``synchronous_commit=off`` on Postgres); and, where the store counts them, its
    round trips to the server (``round_trips``, Postgres, docs/storage.md#round-trips) and the
    WAL frames (pages) it wrote (``wal_frames``, SQLite, docs/storage.md#wal-frames-written)."""
    counts = {"transactions": store.transactions, "fullTransactions": store.full_transactions}
    for attribute, key in (
        ("round_trips", "roundTrips"),
        ("wal_frames", "walPages"),
        ("wal_bytes", "walBytes"),
    ):
        value = getattr(store, attribute, None)
        if isinstance(value, int):
            counts[key] = value
    return counts


def react_graph() -> Any:
    """The ReAct loop as a LangGraph ``StateGraph``: a scripted model node and ``ToolNode``."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    async def trivial(n: int) -> str:
        """Returns a fixed text."""
        return result_text(n)

    calls = 0

    async def model(state: MessagesState) -> dict[str, Any]:
        # The same script as afp's: nine tool calls, then an answer, by call number.
        nonlocal calls
        calls += 1
        if calls % ITERATIONS_PER_TURN:
            call = {"name": "trivial", "args": {"n": calls}, "id": f"c{calls}"}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content="done")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([trivial]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder


async def drive_graph(graph: Any, n: int) -> tuple[float, list[float]]:
    """Run ``n`` iterations (``n / 10`` turns) through the compiled graph, ``durability="sync"``;
    the start instant and the iteration-end marks."""
    from langchain_core.messages import HumanMessage

    marks: list[float] = []
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 100}
    start = time.perf_counter()
    for turn in range(n // ITERATIONS_PER_TURN):
        async for update in graph.astream(
            {"messages": [HumanMessage(content=f"turn {turn}")]},
            config,
            stream_mode="updates",
            durability="sync",
        ):
            done = update.get("model")
            if "tools" in update or (done and not done["messages"][-1].tool_calls):
                marks.append(time.perf_counter())
    return start, marks


async def langgraph(n: int, folder: Path) -> dict[str, Any]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    builder = react_graph()
    db = folder / "langgraph.db"
    async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
        graph = builder.compile(checkpointer=saver)
        baseline = rss_mb()
        start, marks = await drive_graph(graph, n)
        synchronous = (await (await saver.conn.execute("PRAGMA synchronous")).fetchone())[0]
        journal = (await (await saver.conn.execute("PRAGMA journal_mode")).fetchone())[0]
    return {
        **figures(n, start, marks, sqlite_bytes(db, n)),
        "durability": "sync",
        "saver": "AsyncSqliteSaver",
        "journalMode": journal,
        "synchronous": {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(synchronous),
        "rssBaselineMb": baseline,
    }


async def langgraph_postgres(n: int) -> dict[str, Any]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    url = _pg.child_database()
    builder = react_graph()
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        before = await _pg.database_bytes(url)
        graph = builder.compile(checkpointer=saver)
        baseline = rss_mb()
        server_cpu = await _pg.server_cpu_seconds(url)
        cpu = time.process_time()
        start, marks = await drive_graph(graph, n)
        cpu = time.process_time() - cpu
        wall = marks[-1] - start
        if server_cpu is not None:
            server_cpu = await _pg.server_cpu_seconds(url) - server_cpu  # type: ignore[operator]
        cursor = await saver.conn.execute("SHOW synchronous_commit")
        synchronous = (await cursor.fetchone() or {}).get("synchronous_commit")
    size = _pg.bytes_figures(before, await _pg.database_bytes(url), n)
    return {
        **figures(n, start, marks, size),
        "backend": "postgres",
        "durability": "sync",
        "saver": "AsyncPostgresSaver",
        "synchronousCommit": synchronous,
        "clientCpuSeconds": round(cpu, 3),
        "clientCpuShare": round(cpu / wall, 3),
        **(
            {
                "serverCpuSeconds": round(server_cpu, 3),
                "serverCpuShare": round(server_cpu / wall, 3),
            }
            if server_cpu is not None
            else {}
        ),
        "rssBaselineMb": baseline,
    }


def ceiling_rows(number: int, first_of_turn: bool) -> list[bytes]:
    """The bodies afp stores for iteration ``number``: the person message on a turn's first
    iteration, then the assistant call and its tool result, or the answer."""
    rows = []
    if first_of_turn:
        rows.append(message_body(Message(role="user", content=f"turn {number}")))
    if number % ITERATIONS_PER_TURN:
        call = ToolCall(id=f"c{number}", name="trivial", args={"n": number})
        rows.append(message_body(Message(role="assistant", content="", tool_calls=(call,))))
        tool = Message(
            role="tool", content=result_text(number), tool_call_id=call.id, tool_name="trivial"
        )
        rows.append(message_body(tool))
    else:
        rows.append(message_body(Message(role="assistant", content="done")))
    return rows


async def ceiling(n: int, folder: Path, synchronous: str) -> dict[str, Any]:
    import aiosqlite

    db = folder / "ceiling.db"
    marks: list[float] = []
    async with aiosqlite.connect(db, isolation_level=None) as conn:
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute(f"PRAGMA synchronous={synchronous}")
        await conn.execute("CREATE TABLE message (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        baseline = rss_mb()
        start = time.perf_counter()
        for number in range(1, n + 1):
            rows = ceiling_rows(number, number % ITERATIONS_PER_TURN == 1)
            await conn.execute("BEGIN")
            await conn.executemany("INSERT INTO message (body) VALUES (?)", [(r,) for r in rows])
            await conn.execute("COMMIT")
            marks.append(time.perf_counter())
        await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {
        **figures(n, start, marks, sqlite_bytes(db, n)),
        "synchronous": synchronous,
        "transactions": "one per iteration",
        "rssBaselineMb": baseline,
    }


async def ceiling_postgres(n: int) -> dict[str, Any]:
    url = _pg.child_database()
    marks: list[float] = []
    conn = await _pg.connection(url)
    try:
        await conn.execute("CREATE TABLE message (seq BIGSERIAL PRIMARY KEY, body BYTEA NOT NULL)")
        synchronous = await conn.fetchval("SHOW synchronous_commit")
        before = await _pg.database_bytes(url)
        baseline = rss_mb()
        start = time.perf_counter()
        for number in range(1, n + 1):
            rows = ceiling_rows(number, number % ITERATIONS_PER_TURN == 1)
            async with conn.transaction():
                await conn.executemany(
                    "INSERT INTO message (body) VALUES ($1)", [(r,) for r in rows]
                )
            marks.append(time.perf_counter())
    finally:
        await conn.close()
    size = _pg.bytes_figures(before, await _pg.database_bytes(url), n)
    return {
        **figures(n, start, marks, size),
        "backend": "postgres",
        "synchronousCommit": synchronous,
        "transactions": "one per iteration",
        "rssBaselineMb": baseline,
    }


async def child(name: str, n: int, folder: Path) -> dict[str, Any]:
    quiet_logs()
    if name == "afp-sliding":
        result = await afp(n, folder, window=True)
    elif name == "afp-full-history":
        result = await afp(n, folder, window=False)
    elif name == "langgraph":
        result = await langgraph(n, folder)
    elif name == "ceiling-full":
        result = await ceiling(n, folder, "FULL")
    elif name == "ceiling-normal":
        result = await ceiling(n, folder, "NORMAL")
    elif name == "afp-postgres":
        result = await afp(n, folder, window=True, postgres=True)
    elif name == "afp-postgres-full-history":
        result = await afp(n, folder, window=False, postgres=True)
    elif name == "langgraph-postgres":
        result = await langgraph_postgres(n)
    elif name == "ceiling-postgres":
        result = await ceiling_postgres(n)
    else:
        raise SystemExit(f"unknown contender {name!r}")
    return {"contender": name, **result, "loop": running_loop(), "peakRssMb": peak_rss_mb()}


# Where a profiled function's own time is counted, by the first fragment its file name holds.
PACKAGES = (
    ("afp_runtime/store/postgres", "afp store, Postgres backend"),
    ("afp_runtime/store/sqlite", "afp store, SQLite backend"),
    ("afp_runtime/store", "afp store, shared"),
    ("afp_runtime", "afp loop, window, messages, served, tools"),
    ("asyncpg", "asyncpg"),
    ("psycopg", "psycopg"),
    ("aiosqlite", "aiosqlite"),
    ("langgraph", "LangGraph, LangChain"),
    ("langchain", "LangGraph, LangChain"),
    ("pydantic", "LangGraph, LangChain"),
    ("/asyncio/", "event loop (asyncio, anyio, selectors)"),
    ("/anyio/", "event loop (asyncio, anyio, selectors)"),
    ("selectors.py", "event loop (asyncio, anyio, selectors)"),
    ("~", "C functions (socket I/O, msgspec, sqlite3, ...)"),
)


def profiled(name: str, n: int, folder: Path) -> dict[str, Any]:
    """``child`` under ``cProfile``; its figures and ``profile``, each package's share of the
    functions' own time (``tottime``; the time the event loop sat in ``epoll`` waiting for the
    server or the disk counted apart)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    result: dict[str, Any] = profiler.runcall(
        anyio.run, child, name, n, folder, backend_options=backend_options()
    )
    totals: dict[str, float] = {}
    stats: Any = pstats.Stats(profiler).stats
    for (filename, _, function), (_, _, tottime, _, _) in stats.items():
        if "select.epoll" in function:
            where = "waiting for I/O (epoll: the server, fsync)"
        else:
            where = next((label for part, label in PACKAGES if part in filename), "other Python")
        totals[where] = totals.get(where, 0.0) + tottime
    whole = sum(totals.values()) or 1.0
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    result["profile"] = {
        "profiledSeconds": round(whole, 2),
        "shares": {k: round(v / whole, 3) for k, v in ranked},
    }
    return result


# -- the parent: A/B order, medians, ratios ----------------------------------------------------


def runs_at(n: int, args: argparse.Namespace) -> list[str]:
    """The contenders that run at ``n`` (the quadratic ones are capped)."""
    names = []
    for name in args.contenders:
        if name in ("langgraph", "langgraph-postgres") and n > args.langgraph_max:
            continue
        if name in ("afp-full-history", "afp-postgres-full-history") and n > args.full_history_max:
            continue
        names.append(name)
    return names


def median_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per figure, the median over repetitions (non-numbers from the first run)."""
    merged: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            values = [r[key] for r in runs]
            middle = statistics.median(values)
            whole = all(isinstance(v, int) for v in values)
            merged[key] = round(middle) if whole else round(middle, 3)
        else:
            merged[key] = value
    merged["repetitions"] = len(runs)
    if len(runs) > 1:
        merged["iterationsPerSecondRuns"] = [r["iterationsPerSecond"] for r in runs]
    return merged


def compare_ratios(results: list[dict[str, Any]]) -> dict[str, Any]:
    """afp/LangGraph at the largest N LangGraph ran; afp/ceiling and the 10k/1k growth of the
    sliding-window agent; the Postgres ratios when Postgres contenders ran."""
    by_n = {r["iterations"]: r["contenders"] for r in results}

    def fig(n: int, name: str, key: str) -> Any:
        return by_n.get(n, {}).get(name, {}).get(key)

    if not any(name in SQLITE_CONTENDERS for c in by_n.values() for name in c):
        return postgres_ratios(by_n)

    lg_n = max((n for n, c in by_n.items() if "langgraph" in c), default=None)
    top = max(by_n)
    out: dict[str, Any] = {"langgraphIterations": lg_n, "ceilingIterations": top}
    if lg_n is not None:
        out["itsAfpOverLanggraph"] = ratio(
            fig(lg_n, "afp-sliding", "iterationsPerSecond"),
            fig(lg_n, "langgraph", "iterationsPerSecond"),
        )
        out["itsAfpFullHistoryOverLanggraph"] = ratio(
            fig(lg_n, "afp-full-history", "iterationsPerSecond"),
            fig(lg_n, "langgraph", "iterationsPerSecond"),
        )
        out["bytesLanggraphOverAfp"] = ratio(
            fig(lg_n, "langgraph", "bytesOnDisk"), fig(lg_n, "afp-sliding", "bytesOnDisk")
        )
        out["bytesLanggraphOverAfpFullHistory"] = ratio(
            fig(lg_n, "langgraph", "bytesOnDisk"), fig(lg_n, "afp-full-history", "bytesOnDisk")
        )
        out["p99AfpOverLanggraph"] = ratio(
            fig(lg_n, "afp-sliding", "stepLatencyP99Ms"),
            fig(lg_n, "langgraph", "stepLatencyP99Ms"),
        )
    out["itsAfpOverCeiling"] = ratio(
        fig(top, "afp-sliding", "iterationsPerSecond"),
        fig(top, "ceiling-full", "iterationsPerSecond"),
        3,
    )
    out["itsAfpOverCeilingNormal"] = ratio(
        fig(top, "afp-sliding", "iterationsPerSecond"),
        fig(top, "ceiling-normal", "iterationsPerSecond"),
        3,
    )
    out["its10kOver1k"] = ratio(
        fig(10_000, "afp-sliding", "iterationsPerSecond"),
        fig(1_000, "afp-sliding", "iterationsPerSecond"),
    )
    if 100_000 in by_n:
        # Flat to 100k (``--iterations 1000 100000 --contenders afp-sliding``, minutes): the work
        # of an iteration must not grow with the iterations behind it.
        out["its100kOver1k"] = ratio(
            fig(100_000, "afp-sliding", "iterationsPerSecond"),
            fig(1_000, "afp-sliding", "iterationsPerSecond"),
        )
    out["bytesGrowth10kOver1k"] = ratio(
        fig(10_000, "afp-sliding", "bytesOnDisk"), fig(1_000, "afp-sliding", "bytesOnDisk")
    )
    at = 1_000 if 1_000 in by_n else top
    iterations = fig(at, "afp-sliding", "iterations")
    # The store's write transactions over the iterations, the person's posts apart (each is
    # one FULL transaction of its own, the person's and not an iteration's), as the FULL count
    # is; with them too; and the loop's own commits (docs/architecture.md, decision 1).
    transactions = fig(at, "afp-sliding", "transactions")
    full, posts = fig(at, "afp-sliding", "fullTransactions"), fig(at, "afp-sliding", "posts")
    out["transactionsPerIteration"] = ratio(
        transactions - posts if transactions is not None and posts is not None else None,
        iterations,
        3,
    )
    out["transactionsWithPostsPerIteration"] = ratio(transactions, iterations, 3)
    out["loopCommitsPerIteration"] = ratio(fig(at, "afp-sliding", "commits"), iterations, 3)
    out["fullTransactionsPerIteration"] = ratio(
        full - posts if full is not None and posts is not None else None, iterations, 3
    )
    out["bytesWindowOverNoWindow"] = ratio(
        fig(at, "afp-sliding", "bytesOnDisk"), fig(at, "afp-full-history", "bytesOnDisk")
    )
    out["bytesAfpOverCeiling"] = ratio(
        fig(at, "afp-sliding", "bytesOnDisk"), fig(at, "ceiling-full", "bytesOnDisk")
    )
    # Process CPU time over the iterations, one agent, sliding window, SQLite `sync`.
    out["cpuMsPerIteration"] = fig(at, "afp-sliding", "cpuMsPerIteration")
    out["walPagesPerIteration"] = wal_pages_per_iteration(by_n, at)
    if any(name in POSTGRES_CONTENDERS for c in by_n.values() for name in c):
        out.update(postgres_ratios(by_n))
    return out


def wal_pages_per_iteration(by_n: dict[int, dict[str, Any]], at: int) -> float | None:
    """WAL frames (pages) per iteration of ``afp-sliding`` at ``at``, as its store counted them."""
    own = by_n.get(at, {}).get("afp-sliding", {})
    if own.get("walPages") is None:
        return None
    return ratio(own["walPages"], own["iterations"], 2)


def postgres_ratios(by_n: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """afp on Postgres against AsyncPostgresSaver (at the largest N it ran), against afp on
    SQLite and against the raw-asyncpg ceiling (at the largest N both ran)."""

    def fig(n: int | None, name: str, key: str) -> Any:
        return by_n.get(n, {}).get(name, {}).get(key) if n is not None else None

    def top(*names: str) -> int | None:
        return max((n for n, c in by_n.items() if all(x in c for x in names)), default=None)

    lg = top("afp-postgres", "langgraph-postgres")
    sq = top("afp-postgres", "afp-sliding")
    ce = top("afp-postgres", "ceiling-postgres")
    pg = top("afp-postgres")
    its = "iterationsPerSecond"
    return {
        "postgresLanggraphIterations": lg,
        "itsAfpPostgresOverLanggraphPostgres": ratio(
            fig(lg, "afp-postgres", its), fig(lg, "langgraph-postgres", its)
        ),
        "bytesLanggraphPostgresOverAfpPostgres": ratio(
            fig(lg, "langgraph-postgres", "bytesOnDisk"), fig(lg, "afp-postgres", "bytesOnDisk")
        ),
        "itsAfpPostgresFullHistoryOverLanggraphPostgres": ratio(
            fig(lg, "afp-postgres-full-history", its), fig(lg, "langgraph-postgres", its)
        ),
        "bytesLanggraphPostgresOverAfpPostgresFullHistory": ratio(
            fig(lg, "langgraph-postgres", "bytesOnDisk"),
            fig(lg, "afp-postgres-full-history", "bytesOnDisk"),
        ),
        "p99AfpPostgresOverLanggraphPostgres": ratio(
            fig(lg, "afp-postgres", "stepLatencyP99Ms"),
            fig(lg, "langgraph-postgres", "stepLatencyP99Ms"),
        ),
        "itsAfpPostgresOverAfpSqlite": ratio(
            fig(sq, "afp-postgres", its), fig(sq, "afp-sliding", its)
        ),
        "itsAfpPostgresOverCeilingPostgres": ratio(
            fig(ce, "afp-postgres", its), fig(ce, "ceiling-postgres", its), 3
        ),
        # The name issue 36's targets give it.
        "itsAfpPostgresOverCeiling": ratio(
            fig(ce, "afp-postgres", its), fig(ce, "ceiling-postgres", its), 3
        ),
        # The store's round trips (PostgresStore.round_trips, where it counts them) per
        # iteration, the posts' own included, at the largest N afp on Postgres ran.
        "pgRoundTripsPerIteration": ratio(
            fig(pg, "afp-postgres", "roundTrips"), fig(pg, "afp-postgres", "iterations"), 2
        ),
        "cpuMsPerIterationPostgres": fig(pg, "afp-postgres", "cpuMsPerIteration"),
    }


def versions() -> dict[str, str | None]:
    import sqlite3

    found: dict[str, str | None] = {"sqlite": sqlite3.sqlite_version}
    packages = (
        "afp-runtime",
        "aiosqlite",
        "asyncpg",
        "langgraph",
        "langgraph-checkpoint-sqlite",
        "langgraph-checkpoint-postgres",
        "psycopg",
    )
    for package in packages:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found


def parent(args: argparse.Namespace) -> dict[str, Any]:
    script = Path(__file__).resolve()
    results = []
    for n in args.iterations:
        names = runs_at(n, args)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        repeats = 1 if args.once_above is not None and n > args.once_above else args.repeats
        for rep in range(repeats):
            # A/B then B/A: a contender that runs first on a cold cache, or while the
            # machine is busy, does so in half the repetitions only.
            order = names if rep % 2 == 0 else list(reversed(names))
            for name in order:
                profile = ("--profile",) if args.profile else ()
                runs[name].append(one_run(script, name, n, args.db, profile))
                print(
                    f"compare: N={n} {name} rep {rep + 1}: "
                    f"{runs[name][-1]['iterationsPerSecond']} it/s",
                    file=sys.stderr,
                )
        contenders = {name: median_figures(r) for name, r in runs.items()}
        results.append({"iterations": n, "contenders": contenders})
    out: dict[str, Any] = {
        "benchmark": "compare",
        "contenders": list(args.contenders),
        "payload": args.payload,
        "repeats": args.repeats,
        "onceAbove": args.once_above,
        "langgraphMax": args.langgraph_max,
        "fullHistoryMax": args.full_history_max,
        "versions": versions(),
        "results": results,
        "ratios": compare_ratios(results),
    }
    if args.db is not None:
        out["postgres"] = anyio.run(_pg.server_settings, args.db)
    return out


def one_run(
    script: Path, name: str, n: int, server: str | None, profile: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One contender at ``n`` in a child process: in a fresh folder, and for a Postgres
    contender in a fresh database on ``server`` too (both removed afterwards)."""
    folder = Path(tempfile.mkdtemp(prefix=f"afp-compare-{name}-"))
    args = ["--child", name, "--n", str(n), "--dir", str(folder), *profile]
    try:
        if name not in POSTGRES_CONTENDERS:
            result: dict[str, Any] = run_child(script, args)
            return result
        assert server is not None
        with _pg.fresh_database(server) as url:
            result = run_child(script, args, env=_pg.child_env(url))
            return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--langgraph-max", type=int, default=1_000)
    parser.add_argument("--full-history-max", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--once-above", type=int, default=None, help="sizes above this run once, not --repeats"
    )
    parser.add_argument(
        "--db",
        help="a Postgres server URL: the Postgres contenders run on it, each in a fresh "
        "database (created and dropped)",
    )
    parser.add_argument("--contenders", nargs="+", choices=CONTENDERS, help="who runs")
    parser.add_argument("--profile", action="store_true", help="children under cProfile")
    parser.add_argument(
        "--payload",
        choices=["fixed", "random"],
        default="fixed",
        help="tool results: 300 times one letter, or 300 incompressible characters of each call",
    )
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.payload == "random":
        os.environ[PAYLOAD_ENV] = "random"  # the children inherit it
    args.db = _pg.checked_server(args.db)
    if args.contenders is None:
        postgres = ("afp-sliding", *POSTGRES_CONTENDERS)
        args.contenders = postgres if args.db else SQLITE_CONTENDERS
    if args.db is None and not args.child and set(args.contenders) & set(POSTGRES_CONTENDERS):
        parser.error("the Postgres contenders need --db postgresql://SERVER")
    if args.child and args.profile:
        result = profiled(args.child, args.n, args.dir)
    elif args.child:
        # The loop `afp serve` runs on: uvloop when installed, unless AFP_LOOP=asyncio.
        result = anyio.run(child, args.child, args.n, args.dir, backend_options=backend_options())
    else:
        result = parent(args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
