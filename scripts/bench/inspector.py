"""Inspector benchmark: server time of the call page, the timeline and the folds page of a
standing agent whose conversation holds about 1,000 and about 100,000 messages
(docs/inspector.md#speed).

For each size, a fresh SQLite file gets the conversation of ``scaling.py``'s resume part
(``history_checkpoint``: that many messages in 1,000 folded spans kept with the conversation,
a live window of the latest summary, 20 tool exchanges and an answer), then one turn of ten
iterations under a sliding window keeping 20 turns. A host over the file serves the app
in-process (httpx's ASGI transport: no socket, so the time is the server's), and each page is
asked for ``--repeats`` times after one warm-up: the median and p90 milliseconds, the bytes of
the page, and the 100k-over-1k ratio of each median. Target: the call page at 100k ≤ 300 ms.

    .venv/bin/python scripts/bench/inspector.py [--repeats 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from _common import ITERATIONS_PER_TURN, bench_agent, percentile, quiet_logs, ratio
from scaling import history_checkpoint

from afp_runtime.agents import import_checkpoint
from afp_runtime.api import create_app
from afp_runtime.host import Host
from afp_runtime.loop import AgentDriver, SystemClock, TimeOrderedIds
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.window import sliding_window

SIZES = {"1k": 1_000, "100k": 100_000}
FOLDS = 1_000


def _agent() -> Any:
    return bench_agent(window=sliding_window(keep_recent_turns=20))


async def _build(db: Path, messages: int) -> int:
    """The conversation, then one live turn; the agent's last call number."""
    clock = SystemClock()
    store = await SqliteStore.open(db)
    try:
        await import_checkpoint(
            store, "bench", history_checkpoint(messages, FOLDS), now_ms=clock.now_ms()
        )
        driver = AgentDriver(store, _agent(), clock=clock, ids=TimeOrderedIds(clock.now_ms))
        await driver.post("check the data files, please")
        await driver.work()
        state = await store.conversation_state("bench")
    finally:
        await store.aclose()
    assert state is not None
    return state.model_calls


async def _measure(db: Path, last_call: int, repeats: int) -> dict[str, Any]:
    clock = SystemClock()
    store = await SqliteStore.open(db)
    pages = {
        "call": f"/agents/bench/calls/{last_call}",
        "timeline": "/agents/bench",
        "folds": "/agents/bench/folds",
    }
    out: dict[str, Any] = {}
    try:
        async with Host(store, [_agent()], clock=clock, ids=TimeOrderedIds(clock.now_ms)) as host:
            transport = httpx.ASGITransport(app=create_app(host))
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
                for name, path in pages.items():
                    first = await c.get(path)
                    assert first.status_code == 200, (path, first.status_code, first.text[:300])
                    times = []
                    for _ in range(repeats):
                        start = time.perf_counter()
                        response = await c.get(path)
                        times.append((time.perf_counter() - start) * 1000)
                        assert response.status_code == 200
                    out[name] = {
                        "path": path,
                        "medianMs": round(statistics.median(times), 1),
                        "p90Ms": round(percentile(times, 90), 1),
                        "pageBytes": len(first.content),
                    }
    finally:
        await store.aclose()
    return out


async def main(repeats: int) -> dict[str, Any]:
    quiet_logs()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="afp-inspector-") as folder:
        for label, messages in SIZES.items():
            db = Path(folder) / f"{label}.db"
            last_call = await _build(db, messages)
            results[label] = {"messages": messages, "folds": FOLDS, "lastCall": last_call}
            results[label].update(await _measure(db, last_call, repeats))
    ratios = {
        f"{page}Page100kOver1k": ratio(
            results["100k"][page]["medianMs"], results["1k"][page]["medianMs"]
        )
        for page in ("call", "timeline", "folds")
    }
    call_ms = results["100k"]["call"]["medianMs"]
    return {
        "bench": "inspector",
        "iterationsPerTurn": ITERATIONS_PER_TURN,
        "repeats": repeats,
        "results": results,
        "ratios": {"callPage100kMedianMs": call_ms, **ratios},
        "targets": [
            {
                "ratio": "callPage100kMedianMs",
                "target": "<= 300",
                "value": call_ms,
                "met": call_ms <= 300,
                "about": "the call page of a 100k-message conversation, median server ms",
            }
        ],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    print(json.dumps(anyio.run(main, parser.parse_args().repeats), indent=2))
