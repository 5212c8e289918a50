"""Served-view benchmark: the cost of ``served_at`` at epoch 10, 1,000 and 10,000 of one run.

Builds one run of N iterations (a standing agent under a sliding window, keep 2, one trivial
tool with a ~300-char result), then rebuilds the served view at each epoch from the SQLite
``RunLog`` and prints JSON: median milliseconds per rebuild, RunLog reads per rebuild, and the
ratio of the last epoch's cost to epoch 10's
(docs/architecture.md#decision-3-served-views-read-an-index-not-a-replay: it must not grow).

With ``--db URL`` (a Postgres server) the run is built in a fresh database on it (dropped
afterwards) and each view is rebuilt through the store's ``read_run``: the Postgres ``RunLog``,
one query per read, each sent back from the worker thread to the event loop.

    .venv/bin/python scripts/bench/served.py [--iterations 10000] [--db postgresql://SERVER]
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
from afp_runtime.records import RunLog
from afp_runtime.served import check, receipt_at, served_at
from afp_runtime.store import Store, open_store
from afp_runtime.store.sqlite import SqliteRunLog, SqliteStore
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import sliding_window

RESULT = "r" * 300


async def trivial(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return RESULT


def make_script(iterations: int) -> Any:
    def script(request: ModelRequest, number: int) -> ModelReply:
        if number < iterations:
            call = ToolCall(id=f"c{number}", name="trivial", args={"n": number})
            return ModelReply(tool_calls=(call,), usage=Usage(input=10, output=5))
        return ModelReply(content="done", usage=Usage(input=10, output=2))

    return script


async def build(db: Path | str, iterations: int) -> str:
    clock = SystemClock()
    store: Store = await (open_store(db) if isinstance(db, str) else SqliteStore.open(db))
    definition = Agent(
        "bench",
        ScriptedModel(make_script(iterations), keep=1),
        tools=[Tool("trivial", "Returns a fixed text.", {"type": "object"}, trivial)],
        max_iterations=iterations + 1,
        window=sliding_window(keep_recent_turns=2),
    )
    driver = AgentDriver(store, definition, clock=clock, ids=TimeOrderedIds(clock.now_ms))
    await driver.post("go")
    [outcome] = await driver.work()
    await store.aclose()
    return outcome.run_id


def measure_log(log: RunLog, epochs: list[int], repeats: int) -> list[dict[str, Any]]:
    """Rebuild the view at each epoch ``repeats`` times, the epochs interleaved (forward, then
    backward), so a change in the machine's load falls on every epoch alike."""
    times: dict[int, list[float]] = {epoch: [] for epoch in epochs}
    reads: dict[int, int] = {}
    for rep in range(repeats):
        for epoch in epochs if rep % 2 == 0 else list(reversed(epochs)):
            before = log.reads  # type: ignore[attr-defined]
            start = time.perf_counter()
            view = served_at(log, epoch)
            times[epoch].append(time.perf_counter() - start)
            reads[epoch] = log.reads - before  # type: ignore[attr-defined]
    encoder = ScriptedModel([])
    results = []
    for epoch in epochs:
        view = served_at(log, epoch)
        assert view is not None
        verdict = check(view, receipt_at(log, epoch), encoder=encoder, log=log).verdict
        results.append(
            {
                "epoch": epoch,
                "medianMs": round(statistics.median(times[epoch]) * 1000, 3),
                "runLogReads": reads[epoch],
                "windowMessages": len(view.messages.as_sent),
                "verdict": verdict,
            }
        )
    return results


def measure(db: Path, run_id: str, epochs: list[int], repeats: int) -> list[dict[str, Any]]:
    with SqliteRunLog(db, run_id) as log:
        return measure_log(log, epochs, repeats)


async def measure_postgres(url: str, run_id: str, epochs: list[int]) -> list[dict[str, Any]]:
    store = await open_store(url, read_only=True)
    try:
        found: list[dict[str, Any]] = await store.read_run(
            run_id, lambda log: measure_log(log, epochs, 25)
        )
        return found
    finally:
        await store.aclose()


async def on_postgres(server: str, iterations: int) -> tuple[float, list[dict[str, Any]]]:
    url = await _pg.create_database(server)
    try:
        start = time.perf_counter()
        run_id = await build(url, iterations)
        built = time.perf_counter() - start
        points = [e for e in (10, 1_000, 10_000) if e <= iterations]
        return built, await measure_postgres(url, run_id, points)
    finally:
        await _pg.drop_database(server, url)


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--db", help="a Postgres server URL; the run built in a fresh database")
    args = parser.parse_args()
    server = _pg.checked_server(args.db)
    if server is not None:
        built, results = await on_postgres(server, args.iterations)
    else:
        built, results = await on_sqlite(args.iterations)
    last = results[-1]["medianMs"] / results[0]["medianMs"] if results[0]["medianMs"] else None
    print(
        json.dumps(
            {
                "benchmark": "served",
                "backend": "postgres" if server else "sqlite",
                "iterations": args.iterations,
                "buildSeconds": round(built, 1),
                "results": results,
                "lastOverEpoch10": round(last, 2) if last else None,
            },
            indent=2,
        )
    )


async def on_sqlite(iterations: int) -> tuple[float, list[dict[str, Any]]]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "served.db"
        start = time.perf_counter()
        run_id = await build(db, iterations)
        built = time.perf_counter() - start
        points = [e for e in (10, 1_000, 10_000) if e <= iterations]
        results = await anyio.to_thread.run_sync(measure, db, run_id, points, 25)
    return built, results


if __name__ == "__main__":
    anyio.run(main)
