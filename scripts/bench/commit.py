"""Commit benchmark: one standing agent, a zero-latency scripted model, one trivial tool.

Runs N iterations (turns of ten iterations: nine tool calls, then an answer) on a fresh SQLite
file in the default ``sync`` durability and prints JSON: iterations per second, median and p99
commit latency (one ``store.commit`` call), and bytes on disk per iteration.

    .venv/bin/python scripts/bench/commit.py [--iterations 1000 10000] [--durability sync]
        [--db postgresql://SERVER]

With ``--db`` each size runs on a fresh database on that Postgres server (dropped afterwards);
bytes are then the growth of its tables (``_pg.py``).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import _pg
import anyio
import structlog

from afp_runtime.agents import Agent
from afp_runtime.loop import AgentDriver, SystemClock, TimeOrderedIds
from afp_runtime.messages import ModelReply, ModelRequest, ToolCall, Usage
from afp_runtime.models import ScriptedModel
from afp_runtime.records import Txn
from afp_runtime.store import Store, open_store
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import sliding_window

ITERATIONS_PER_TURN = 10
RESULT = "x" * 300


async def trivial(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return RESULT


def script(request: ModelRequest, number: int) -> ModelReply:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    done = sum(1 for m in messages[last_user:] if m.role == "tool")
    if done < ITERATIONS_PER_TURN - 1:
        call = ToolCall(id=f"c{number}", name="trivial", args={"n": number})
        return ModelReply(tool_calls=(call,), usage=Usage(input=10, output=5))
    return ModelReply(content="done", usage=Usage(input=10, output=2))


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def timed(store: Store) -> list[float]:
    """Time every ``commit`` of ``store`` (any backend); the list the latencies go to."""
    latencies: list[float] = []
    inner = store.commit

    async def commit(txn: Txn) -> None:
        start = time.perf_counter()
        await inner(txn)
        latencies.append(time.perf_counter() - start)

    store.commit = commit  # type: ignore[method-assign]
    return latencies


async def measure(
    iterations: int,
    durability: str,
    folder: Path,
    window: int | None = None,
    server: str | None = None,
) -> dict[str, Any]:
    db = folder / f"bench-{iterations}.db"
    clock = SystemClock()
    store: Store
    url = await _pg.create_database(server) if server else None
    if url is not None:
        store = await open_store(url)
        before = await _pg.database_bytes(url)
    else:
        store = await SqliteStore.open(db)
    latencies = timed(store)
    tool = Tool("trivial", "Returns a fixed text.", {"type": "object"}, trivial)
    definition = Agent(
        "bench",
        ScriptedModel(script, keep=1),
        tools=[tool],
        max_iterations=ITERATIONS_PER_TURN + 1,
        durability=durability,  # type: ignore[arg-type]
        window=sliding_window(keep_recent_turns=window) if window else None,
    )
    driver = AgentDriver(store, definition, clock=clock, ids=TimeOrderedIds(clock.now_ms))
    turns = max(1, iterations // ITERATIONS_PER_TURN)
    stretch: list[float] = []
    start = time.perf_counter()
    for turn in range(turns):
        await driver.post(f"turn {turn}")
        await driver.work()
        stretch.append(time.perf_counter())
    elapsed = time.perf_counter() - start
    await store.aclose()
    done = turns * ITERATIONS_PER_TURN
    latencies = sorted(latencies)
    if url is not None and server is not None:
        size = _pg.bytes_figures(before, await _pg.database_bytes(url), done)
        await _pg.drop_database(server, url)
    else:
        size = {"bytesOnDisk": disk_bytes(db), "bytesPerIteration": round(disk_bytes(db) / done, 1)}
    tenth = max(1, turns // 10)
    first = (stretch[tenth - 1] - start) / (tenth * ITERATIONS_PER_TURN)
    last = (
        (stretch[-1] - stretch[-tenth - 1]) / (tenth * ITERATIONS_PER_TURN)
        if turns > tenth
        else first
    )
    return {
        "iterations": done,
        "durability": durability,
        "window": f"slidingWindow({window})" if window else None,
        "iterationsPerSecond": round(done / elapsed, 1),
        "iterationsPerSecondFirstTenth": round(1 / first, 1),
        "iterationsPerSecondLastTenth": round(1 / last, 1),
        "commits": len(latencies),
        "commitLatencyMedianMs": round(statistics.median(latencies) * 1000, 3),
        "commitLatencyP99Ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 3),
        "commitTimeShare": round(sum(latencies) / elapsed, 3),
        "backend": "postgres" if url else "sqlite",
        **size,
    }


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--durability", default="sync", choices=["sync", "iteration", "turn"])
    parser.add_argument(
        "--window",
        type=int,
        default=None,
        help="keepRecentTurns of a sliding window (default none)",
    )
    parser.add_argument("--db", help="a Postgres server URL; each size in a fresh database")
    args = parser.parse_args()
    server = _pg.checked_server(args.db)
    with tempfile.TemporaryDirectory() as tmp:
        results = [
            await measure(n, args.durability, Path(tmp), args.window, server)
            for n in args.iterations
        ]
    print(json.dumps({"benchmark": "commit", "results": results}, indent=2))


if __name__ == "__main__":
    anyio.run(main)
