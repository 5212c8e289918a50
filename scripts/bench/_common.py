"""Shared pieces of the comparison and scaling benchmarks (``compare.py``, ``scaling.py``).

The workload is the one ``commit.py`` and ``served.py`` use: one standing agent, a zero-latency
scripted model, one trivial tool whose result is 300 characters, turns of ten iterations (nine
tool calls, then a short answer). The script decides by call number alone, so it costs O(1) per
call whatever the history, under afp and under every contender alike.

Each measurement runs in a child process of its own (``run_child``): peak RSS is the child's
``ru_maxrss``, so one contender's allocations never show in another's figure.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import resource
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import structlog

from afp_runtime.agents import Agent
from afp_runtime.loop import LoopHooks
from afp_runtime.messages import ModelReply, ModelRequest, ToolCall, Usage
from afp_runtime.models import ScriptedModel
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import WindowStrategy

ITERATIONS_PER_TURN = 10
RESULT = "x" * 300
KEEP_RECENT_TURNS = 20
# Stages that close an iteration (docs/loop.md#what-each-stage-commits); under ``sync`` their bundle
# is committed when the hook runs, so the mark is taken after the iteration is durable.
CLOSING_STAGES = frozenset({"tool-calls", "wrap-up", "final"})


def quiet_logs(level: int = logging.WARNING) -> None:
    """Warnings and errors only: the loop's per-iteration info lines would cost time."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level))


# ``AFP_BENCH_PAYLOAD=random``: each tool result is 300 hex characters of its own, derived from
# the call's ``n``, which no compressor shrinks (Postgres compresses values over ~2 KB, so the
# fixed result, 300 times one letter, would flatter whoever writes large values).
PAYLOAD_ENV = "AFP_BENCH_PAYLOAD"


def result_text(n: object) -> str:
    """The tool result of call ``n``: ``RESULT``, or 300 incompressible characters."""
    if os.environ.get(PAYLOAD_ENV) != "random":
        return RESULT
    seed = str(n).encode()
    chunks = []
    while sum(map(len, chunks)) < 300:
        seed = hashlib.sha256(seed).digest()
        chunks.append(seed.hex())
    return "".join(chunks)[:300]


async def trivial(args: Mapping[str, Any], ctx: ToolContext) -> str:
    """The benchmark tool: a 300-character result (``result_text``)."""
    return result_text(args.get("n"))


def trivial_tool() -> Tool:
    """The one tool every benchmark agent has."""
    return Tool("trivial", "Returns a fixed text.", {"type": "object"}, trivial)


def turn_script(per_turn: int = ITERATIONS_PER_TURN) -> Any:
    """A script deciding by call number: ``per_turn - 1`` tool calls, then an answer."""

    def script(request: ModelRequest, number: int) -> ModelReply:
        if number % per_turn:
            call = ToolCall(id=f"c{number}", name="trivial", args={"n": number})
            return ModelReply(tool_calls=(call,), usage=Usage(input=10, output=5))
        return ModelReply(content="done", usage=Usage(input=10, output=2))

    return script


def bench_agent(
    agent_id: str = "bench",
    *,
    window: WindowStrategy | None = None,
    per_turn: int = ITERATIONS_PER_TURN,
    durability: str = "sync",
    script: Any = None,
) -> Agent:
    """An agent with the scripted model (keeping one request) and the trivial tool."""
    return Agent(
        agent_id,
        ScriptedModel(script or turn_script(per_turn), keep=1),
        tools=[trivial_tool()],
        max_iterations=per_turn + 1,
        durability=durability,  # type: ignore[arg-type]
        window=window,
    )


class IterationMarks(LoopHooks):
    """Loop hooks that note the instant each iteration closed (``time.perf_counter``)."""

    def __init__(self) -> None:
        self.marks: list[float] = []

    def after_stage(self, stage: str, iteration: int) -> None:
        if stage in CLOSING_STAGES:
            self.marks.append(time.perf_counter())


class CommitTimer:
    """Wraps one store's ``commit`` to add up the time spent in it (every loop commit)."""

    def __init__(self, store: Any) -> None:
        self.seconds = 0.0
        self.count = 0
        inner = store.commit

        async def timed(txn: Any) -> None:
            began = time.perf_counter()
            try:
                await inner(txn)
            finally:
                self.seconds += time.perf_counter() - began
                self.count += 1

        store.commit = timed

    def figures(self, wall: float, cpu: float, server_cpu: float | None) -> dict[str, Any]:
        """Where the run's wall time went: in commits, in this process's CPU, in the server's."""
        out: dict[str, Any] = {
            "commits": self.count,
            "commitSeconds": round(self.seconds, 3),
            "commitTimeShare": round(self.seconds / wall, 3),
            "clientCpuSeconds": round(cpu, 3),
            "clientCpuShare": round(cpu / wall, 3),
        }
        if server_cpu is not None:
            out["serverCpuSeconds"] = round(server_cpu, 3)
            out["serverCpuShare"] = round(server_cpu / wall, 3)
        return out


class CountedMarks(IterationMarks):
    """Iteration marks that set ``all_done`` once ``expected`` iterations have closed."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.expected = expected
        self.all_done = anyio.Event()

    def after_stage(self, stage: str, iteration: int) -> None:
        super().after_stage(stage, iteration)
        if len(self.marks) >= self.expected:
            self.all_done.set()


def step_latencies(start: float, marks: Sequence[float]) -> list[float]:
    """Seconds between consecutive iteration ends (the first measured from ``start``)."""
    edges = [start, *marks]
    return [b - a for a, b in itertools.pairwise(edges)]


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0 < q <= 100) of ``values``."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def latency_figures(latencies: Sequence[float]) -> dict[str, float]:
    """Median and p99 of step latencies, in milliseconds."""
    return {
        "stepLatencyMedianMs": round(percentile(latencies, 50) * 1000, 3),
        "stepLatencyP99Ms": round(percentile(latencies, 99) * 1000, 3),
    }


def disk_bytes(path: Path) -> int:
    """Bytes of a SQLite database with its ``-wal`` and ``-shm`` files."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return round(peak / (2**20 if sys.platform == "darwin" else 1024), 1)


def rss_mb() -> float:
    """This process's resident set size now, in MiB."""
    import psutil  # the ``bench`` extra

    return round(psutil.Process().memory_info().rss / 2**20, 1)


def run_child(
    script: Path,
    args: Sequence[str],
    *,
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
) -> Any:
    """Run ``script`` under this interpreter in a fresh process (in ``env`` when given) and
    decode the JSON it prints.

    Raises:
        RuntimeError: the child failed; its stderr tail is in the message.
    """
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-20:])
        raise RuntimeError(f"{script.name} {' '.join(args)} failed ({done.returncode}):\n{tail}")
    return json.loads(done.stdout)


def ratio(a: float | None, b: float | None, digits: int = 2) -> float | None:
    """``a / b`` rounded, or None when either is missing or ``b`` is zero."""
    if a is None or b is None or b == 0:
        return None
    return round(a / b, digits)
