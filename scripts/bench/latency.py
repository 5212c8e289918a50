"""Real latency: what the runtime adds when the model and the tools take real time, what idle
standing agents cost, and how soon a host with many agents answers health.

* ``latency``: one ``Host`` on a SQLite file (durability ``sync``) runs 1,000 standing agents
  whose model answers after 1 s on the real clock (``anyio.sleep``) and whose one tool takes
  50 ms; every agent gets ``--turns`` person messages in a row (the next posted when its turn
  closed), each a turn of ``--per-turn`` iterations (tool calls, then an answer). The first
  messages go out spread evenly over one iteration's simulated latency (1.05 s), so the agents'
  stages arrive spread over time as independent agents' would; with ``--lockstep`` all at
  once, and since every model call takes exactly 1 s the agents then stay in step, every stage
  of theirs arriving in one burst (a worst case no real traffic keeps up). For every
  iteration, its wall time runs from the end of the agent's previous iteration (or the return
  of the post that began the turn) to its own end (``LoopHooks.after_stage`` on a closing
  stage, the agent named by the worker's log context); less the simulated latency in it (1 s
  per model call, 50 ms per tool call) it is the runtime's overhead. Under ``sync`` a tool
  iteration's bundle commits at the next effect boundary, so that commit counts in the next
  iteration: the sum is the same. The ratio overhead / simulated latency is reported at the
  median and p99 (``realLatencyOverheadP50``, ``realLatencyOverheadP99``), with the iterations
  each agent finished (min and median: every agent must progress), and the store reads
  (``readRoundTripsPerIteration``, each a round trip to the connection's thread, with the
  commonest by statement) and write transactions per iteration. ``max_active_turns`` is the
  number of agents: waiting on the model holds a slot, so with the default 8 a thousand agents
  would queue behind eight model calls.
* ``idle``: one host with 10,000 standing agents on one SQLite file, started and settled
  (serving, every worker through its first pass, no message): the process's RSS
  (``idleAgentsRssMb``), beside the same process with a host of no agent, and the share of
  one core the idle host keeps busy over the next 5 s (``idleCpuShare``).
* ``health``: a real ``afp serve`` process with 1,000 agents in its agents file (scripted
  model, no tool); from spawning it to the first 200 answer of ``GET /v1/health`` (polled every
  25 ms): on a fresh file, on a file that already holds the agents (after a clean stop), and
  after a ``kill -9`` of a serving host (``storeCheck`` then runs behind the serving host).
  The median over ``--repeats`` starts of each.

Every part runs in a child process of its own (RSS is its own) and prints JSON.

    .venv/bin/python scripts/bench/latency.py [--quick] [--only latency idle health]
        [--agents 1000] [--idle-agents 10000] [--repeats 3] [--lockstep]
"""

from __future__ import annotations

import argparse
import collections
import compileall
import gc
import json
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
import structlog
from _common import (
    CLOSING_STAGES,
    peak_rss_mb,
    percentile,
    quiet_logs,
    result_text,
    rss_mb,
    run_child,
)

from afp_runtime.agents import Agent
from afp_runtime.host import Host, HostWatch
from afp_runtime.loop import LoopHooks, SystemClock, TimeOrderedIds
from afp_runtime.messages import ModelReply, ModelRequest, ToolCall, Usage
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.tools import Tool, ToolContext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MODEL_S = 1.0
TOOL_S = 0.05
TARGET_OVERHEAD = 0.10
TARGET_IDLE_MB = 200
TARGET_HEALTH_S = 3.0


# -- latency ---------------------------------------------------------------------------------


class Paced:
    """One agent's model and tool, waiting on the real clock, and its iteration marks."""

    def __init__(self, agent_id: str, per_turn: int) -> None:
        self.agent_id = agent_id
        self.per_turn = per_turn
        self.models = 0  # model calls since the last mark
        self.tools = 0  # tool calls since the last mark
        self.last = 0.0  # the last mark, or the return of the post that began the turn
        self.overheads: list[float] = []
        self.turn_done = anyio.Event()

    async def script(self, request: ModelRequest, number: int) -> ModelReply:
        await anyio.sleep(MODEL_S)
        self.models += 1
        if number % self.per_turn:
            call = ToolCall(id=f"c{number}", name="paced", args={"n": number})
            return ModelReply(tool_calls=(call,), usage=Usage(input=10, output=5))
        return ModelReply(content="done", usage=Usage(input=10, output=2))

    async def tool(self, args: Mapping[str, Any], ctx: ToolContext) -> str:
        await anyio.sleep(TOOL_S)
        self.tools += 1
        return result_text(args.get("n"))

    def agent(self) -> Agent:
        return Agent(
            self.agent_id,
            ScriptedModel(self.script, keep=1),
            tools=[Tool("paced", "Takes 50 ms.", {"type": "object"}, self.tool)],
            max_iterations=self.per_turn + 1,
            durability="sync",
        )

    def mark(self, stage: str) -> None:
        now = time.perf_counter()
        simulated = self.models * MODEL_S + self.tools * TOOL_S
        if simulated:
            self.overheads.append((now - self.last - simulated) / simulated)
        self.last, self.models, self.tools = now, 0, 0
        if stage == "final":
            self.turn_done.set()


class AgentMarks(LoopHooks):
    """Hands each closing stage to its agent's ``Paced`` (the worker binds ``agent_id`` in its
    log context, host.py ``_worker``)."""

    def __init__(self, agents: Mapping[str, Paced]) -> None:
        self.agents = agents

    def after_stage(self, stage: str, iteration: int) -> None:
        if stage in CLOSING_STAGES:
            agent_id = structlog.contextvars.get_contextvars()["agent_id"]
            self.agents[agent_id].mark(stage)


class ReadCount:
    """Counts the reads one SQLite store object sends its connection (each a round trip to
    the connection's thread), wrapping its one read primitive, ``_fetch``, on the object."""

    def __init__(self, store: SqliteStore) -> None:
        self.count = 0
        self.by_sql: collections.Counter[str] = collections.Counter()
        inner = store._fetch

        async def fetch(sql: str, params: Iterable[Any] = ()) -> list[Any]:
            self.count += 1
            self.by_sql[" ".join(sql.split())[:60]] += 1
            return await inner(sql, params)

        store._fetch = fetch  # type: ignore[method-assign]


async def latency_run(
    folder: Path, agents: int, per_turn: int, turns: int, spread: bool = True
) -> dict[str, Any]:
    clock = SystemClock()
    paced = {a: Paced(a, per_turn) for a in (f"agent-{i:04d}" for i in range(agents))}
    store = await SqliteStore.open(folder / "latency.db")
    reads = ReadCount(store)
    transactions = store.transactions
    cpu = time.process_time()
    try:
        async with Host(
            store,
            [p.agent() for p in paced.values()],
            clock=clock,
            ids=TimeOrderedIds(clock.now_ms),
            hooks=AgentMarks(paced),
            max_active_turns=agents,
        ) as host:

            async def converse(p: Paced, delay: float) -> None:
                await anyio.sleep(delay)
                for turn in range(turns):
                    p.turn_done = anyio.Event()
                    await host.post(p.agent_id, f"check the data files, please ({turn + 1})")
                    p.last = time.perf_counter()
                    await p.turn_done.wait()

            # Spread: the first messages go out evenly over one iteration's simulated latency, so
            # the agents' iterations end spread over time; else all at once, and since every
            # model call takes exactly 1 s they stay in step, each stage arriving in a burst.
            step = (MODEL_S + TOOL_S) / agents if spread else 0.0
            start = time.perf_counter()
            with anyio.fail_after(600):
                async with anyio.create_task_group() as group:
                    for k, p in enumerate(paced.values()):
                        group.start_soon(converse, p, k * step)
            seconds = time.perf_counter() - start
    finally:
        await store.aclose()
    cpu = time.process_time() - cpu
    transactions = store.transactions - transactions
    overheads = [o for p in paced.values() for o in p.overheads]
    done = sorted(len(p.overheads) for p in paced.values())
    iterations = len(overheads)
    return {
        "agents": agents,
        "iterationsPerTurn": per_turn,
        "turnsPerAgent": turns,
        "modelLatencyS": MODEL_S,
        "toolLatencyS": TOOL_S,
        "maxActiveTurns": agents,
        "arrivals": "spread" if spread else "lockstep",
        "iterations": iterations,
        "iterationsPerAgentMin": done[0],
        "iterationsPerAgentMedian": statistics.median(done),
        "seconds": round(seconds, 2),
        "aggregateIterationsPerSecond": round(iterations / seconds, 1),
        # With no overhead at all: every agent's iterations back to back.
        "idealIterationsPerSecond": round(
            iterations / (turns * ((per_turn - 1) * (MODEL_S + TOOL_S) + MODEL_S)), 1
        ),
        "cpuSeconds": round(cpu, 2),
        "cpuMsPerIteration": round(cpu / iterations * 1000, 3),
        # Start-up and stop included: every agent's first pass reads its inbox once.
        "readRoundTripsPerIteration": round(reads.count / iterations, 3),
        "readsPerIterationBySql": {
            sql: round(n / iterations, 3) for sql, n in reads.by_sql.most_common(8)
        },
        "transactionsPerIteration": round(transactions / iterations, 3),
        "realLatencyOverheadP50": round(percentile(overheads, 50), 4),
        "realLatencyOverheadP99": round(percentile(overheads, 99), 4),
        "realLatencyOverheadMax": round(max(overheads), 4),
    }


# -- idle ---------------------------------------------------------------------------------------


IDLE_WINDOW_S = 5.0


def _idle_agent(agent_id: str) -> Agent:
    def script(request: ModelRequest, number: int) -> ModelReply:
        return ModelReply(content="done", usage=Usage(input=10, output=2))

    return Agent(agent_id, ScriptedModel(script, keep=1), durability="sync")


class FirstPasses(HostWatch):
    """Set ``all_passed`` once ``agents`` workers each finished a pass."""

    def __init__(self, agents: int) -> None:
        self.expected = agents
        self.agents: set[str] = set()
        self.all_passed = anyio.Event()
        if not agents:
            self.all_passed.set()

    def pass_finished(self, agent_id: str) -> None:
        self.agents.add(agent_id)
        if len(self.agents) >= self.expected:
            self.all_passed.set()


async def idle_run(folder: Path, agents: int) -> dict[str, Any]:
    clock = SystemClock()
    before = rss_mb()
    definitions = [_idle_agent(f"agent-{i:05d}") for i in range(agents)]
    defined = rss_mb()
    store = await SqliteStore.open(folder / "idle.db")
    try:
        start = time.perf_counter()
        passed = FirstPasses(agents)
        async with Host(
            store, definitions, clock=clock, ids=TimeOrderedIds(clock.now_ms), watch=passed
        ):
            started = time.perf_counter()
            with anyio.fail_after(600):
                await passed.all_passed.wait()
            settled = time.perf_counter()
            gc.collect()
            # A few poll intervals more: the steady state, and what it costs the core.
            cpu, wall = time.process_time(), time.perf_counter()
            await anyio.sleep(IDLE_WINDOW_S)
            idle_cpu = (time.process_time() - cpu) / (time.perf_counter() - wall)
            serving = rss_mb()
    finally:
        await store.aclose()
    return {
        "agents": agents,
        "rssBeforeMb": before,
        "rssDefinedMb": defined,
        "rssServingMb": serving,
        "hostStartSeconds": round(started - start, 2),
        "settleSeconds": round(settled - start, 2),
        # The share of one core the idle host keeps busy (1.0: all of it).
        "idleCpuShare": round(idle_cpu, 3),
    }


# -- health -------------------------------------------------------------------------------------


def _agents_file(folder: Path, agents: int) -> Path:
    path = folder / "agents.toml"
    lines = []
    for i in range(agents):
        lines += [
            "[[agents]]",
            f'id = "agent-{i:04d}"',
            'durability = "sync"',
            "[agents.model]",
            'provider = "scripted"',
            'model = "bench-scripted"',
            'script = "afp_runtime.demo:demo_script"',
            "",
        ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _health(port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health", timeout=2) as answer:
            if answer.status == 200:
                body: dict[str, Any] = json.loads(answer.read())
                return body
    except (OSError, urllib.error.URLError):
        pass
    return None


class Serve:
    """One ``afp serve`` process; ``up`` polls health from its spawn."""

    def __init__(self, agents: Path, db: Path, log: Path) -> None:
        self.port = _free_port()
        env = dict(os.environ)
        env.pop("AFP_API_TOKEN", None)
        self.spawned = time.perf_counter()
        with log.open("a", encoding="utf-8") as out:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "afp_runtime.cli", "serve", "--agents", str(agents)),
                    *("--db", str(db), "--port", str(self.port)),
                ],
                stdout=subprocess.DEVNULL,
                stderr=out,
                env=env,
                cwd=ROOT,
            )

    def up(self, within_s: float = 120) -> tuple[float, dict[str, Any]]:
        """Seconds from the spawn to the first 200 of health, and that answer."""
        deadline = self.spawned + within_s
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"afp serve exited {self.process.returncode}")
            body = _health(self.port)
            if body is not None:
                return time.perf_counter() - self.spawned, body
            time.sleep(0.025)
        raise RuntimeError("afp serve did not answer health in time")

    def stop(self, kill: bool = False) -> None:
        self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        if self.process.wait(60) not in (0, -signal.SIGKILL):
            raise RuntimeError(f"afp serve exited {self.process.returncode}")


def _start(agents: Path, db: Path, log: Path, *, kill: bool = False) -> dict[str, Any]:
    serve = Serve(agents, db, log)
    try:
        seconds, body = serve.up()
        # Every agent exists once health answers (the host ensures them before serving).
        serve.stop(kill=kill)
    finally:
        if serve.process.poll() is None:
            serve.process.kill()
            serve.process.wait()
    return {"seconds": seconds, "status": body["status"], "storeCheck": body["storeCheck"]}


def health_run(folder: Path, agents: int, repeats: int) -> dict[str, Any]:
    # An installed package has its bytecode compiled (pip does it); a source tree may not, and
    # PYTHONDONTWRITEBYTECODE would then recompile every module at every start (as startup.py).
    compileall.compile_dir(str(ROOT / "afp_runtime"), quiet=1)
    config = _agents_file(folder, agents)
    log = folder / "serve.log"
    runs: dict[str, list[dict[str, Any]]] = {"fresh": [], "existing": [], "afterKill": []}
    for rep in range(repeats):
        db = folder / f"health-{rep}.db"
        runs["fresh"].append(_start(config, db, log))
        runs["existing"].append(_start(config, db, log, kill=True))
        runs["afterKill"].append(_start(config, db, log))

    def median(kind: str) -> float:
        return round(statistics.median(r["seconds"] for r in runs[kind]), 3)

    return {
        "agents": agents,
        "repetitions": repeats,
        "healthWithin1000AgentsSeconds": max(median(k) for k in runs),
        **{f"{kind}Seconds": median(kind) for kind in runs},
        **{
            f"{kind}Runs": [{**r, "seconds": round(r["seconds"], 3)} for r in runs[kind]]
            for kind in runs
        },
    }


# -- children and the parent --------------------------------------------------------------------


async def child(args: argparse.Namespace) -> dict[str, Any]:
    quiet_logs(logging.ERROR)
    if args.child == "latency":
        result = await latency_run(
            args.dir, args.agents, args.per_turn, args.turns, spread=not args.lockstep
        )
    elif args.child == "idle":
        result = await idle_run(args.dir, args.agents)
    else:
        raise SystemExit(f"unknown part {args.child!r}")
    return {**result, "peakRssMb": peak_rss_mb()}


def _log(text: str) -> None:
    print(f"latency: {text}", file=sys.stderr)


def _in_folder(*args: str) -> Any:
    folder = Path(tempfile.mkdtemp(prefix="afp-latency-"))
    try:
        return run_child(HERE / "latency.py", [*args, "--dir", str(folder)])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _met(value: float | None, target: float) -> dict[str, Any]:
    return {
        "target": f"<= {target:g}",
        "value": value,
        "met": value is not None and value <= target,
    }


def parent(args: argparse.Namespace) -> dict[str, Any]:
    quick = args.quick
    parts = set(args.only or ("latency", "idle", "health"))
    out: dict[str, Any] = {
        "benchmark": "latency",
        "mode": "quick" if quick else "full",
        "loadAverage": [round(x, 2) for x in os.getloadavg()],
    }
    targets: dict[str, Any] = {}
    if "latency" in parts:
        per_turn, turns = (4, 1) if quick else (5, 2)
        latency = _in_folder(
            "--child", "latency", "--agents", str(args.agents),
            "--per-turn", str(per_turn), "--turns", str(turns),
            *(["--lockstep"] if args.lockstep else []),
        )  # fmt: skip
        out["latency"] = latency
        for key in ("realLatencyOverheadP50", "realLatencyOverheadP99"):
            targets[key] = _met(latency[key], TARGET_OVERHEAD)
        _log(
            f"{args.agents} agents: overhead p50 {latency['realLatencyOverheadP50']}, "
            f"p99 {latency['realLatencyOverheadP99']}, "
            f"min {latency['iterationsPerAgentMin']} iterations per agent, "
            f"{latency['readRoundTripsPerIteration']} reads per iteration"
        )
    if "idle" in parts:
        idle = _in_folder("--child", "idle", "--agents", str(args.idle_agents))
        empty = _in_folder("--child", "idle", "--agents", "0")
        out["idle"] = {**idle, "noAgents": empty}
        targets["idleAgentsRssMb"] = _met(idle["rssServingMb"], TARGET_IDLE_MB)
        _log(
            f"{args.idle_agents} idle agents: {idle['rssServingMb']} MiB "
            f"(no agents: {empty['rssServingMb']} MiB)"
        )
    if "health" in parts:
        folder = Path(tempfile.mkdtemp(prefix="afp-latency-health-"))
        try:
            health = health_run(folder, args.agents, 1 if quick else args.repeats)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        out["health"] = health
        targets["healthWithin1000AgentsSeconds"] = _met(
            health["healthWithin1000AgentsSeconds"], TARGET_HEALTH_S
        )
        _log(
            f"health with {args.agents} agents: fresh {health['freshSeconds']} s, "
            f"existing {health['existingSeconds']} s, after kill {health['afterKillSeconds']} s"
        )
    out["ratios"] = {key: t["value"] for key, t in targets.items()}
    out["targets"] = [{"ratio": key, **t} for key, t in targets.items()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one turn of 4, one health start")
    parser.add_argument("--only", nargs="+", choices=["latency", "idle", "health"])
    parser.add_argument("--agents", type=int, default=1_000, help="agents of latency and health")
    parser.add_argument("--idle-agents", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3, help="health starts of each kind")
    parser.add_argument(
        "--lockstep", action="store_true", help="latency: every agent's first message at once"
    )
    parser.add_argument("--child", choices=["latency", "idle"], help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--per-turn", type=int, default=5, help=argparse.SUPPRESS)
    parser.add_argument("--turns", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    result = anyio.run(child, args) if args.child else parent(args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
