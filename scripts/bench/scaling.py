"""Scaling benchmarks: what must not grow with history, time or the number of agents.

* ``served``: ``served_at`` at epoch 10 against epoch 10,000 of one run (``served.py``, run as
  a child; docs/architecture.md#decision-3-served-views-read-an-index-not-a-replay).
* ``resume``: an agent whose conversation holds 1,000 or 100,000 messages of history and 1,000
  folds dies in the middle of a turn; a fresh process opens the file and recovers. Timed from
  before ``SqliteStore.open`` to the recovery run's first model call ("first iteration ready"),
  with the bare ``AgentDriver`` (docs/architecture.md#decision-4-strict-validation-at-the-borders:
  resume cost must not grow with history) and through a ``Host`` start-up (which also runs ``PRAGMA
  quick_check`` after an unclean stop, docs/host.md docs/host.md#start-up, a pass over the whole
  file, timed on its own as well).

  The history is built by an import (``import_checkpoint``), as ``afp import`` would, since
  running 50,000 iterations would take minutes: the live window holds the latest summary and
  the 20 most recent tool exchanges (42 messages); the other messages sit in 1,000 folded
  spans retained with the conversation (``retained="conversation"``), as an agent under
  ``summarize_oldest`` keeps them. Both sizes have the same window and the same folds; only the
  folded messages differ. Each repetition works on a fresh copy of the crashed file.
* ``rss``: one standing agent (sliding window keep 20) runs N iterations (100,000 in full mode)
  in a process of its own; RSS, throughput and bytes on disk are sampled twenty times.
* ``agents``: one ``Host`` runs 1,000 standing agents on one file; each gets one person message,
  all posted at once (a turn of ten iterations in full mode, two in quick mode); aggregate
  iterations per second
  from the first post to the last iteration, with host start-up and posting timed apart. One
  agent alone runs as many iterations the same way (a thousand turns, each posted once the last
  was answered, under a sliding window keeping one turn so that its requests stay as short as
  the many agents' single turns); ``agentsAggregateOverOne`` is the 1,000 agents' aggregate
  over its rate (docs/storage.md#group-commit).

Every part runs in a child process (peak RSS is that child's alone) and prints JSON.

With ``--db URL`` (a Postgres server) ``served``, ``rss`` and ``agents`` run on fresh databases
on it (dropped afterwards; bytes are the tables' growth, ``_pg.py``); ``resume`` copies a crashed
SQLite file and times ``PRAGMA quick_check``, so it runs on SQLite only and is skipped.

    .venv/bin/python scripts/bench/scaling.py [--quick] [--only resume rss agents served]
        [--db postgresql://SERVER]
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _pg
import anyio
import msgspec
from _common import (
    ITERATIONS_PER_TURN,
    KEEP_RECENT_TURNS,
    RESULT,
    CountedMarks,
    bench_agent,
    disk_bytes,
    peak_rss_mb,
    quiet_logs,
    ratio,
    rss_mb,
    run_child,
)

from afp_runtime.agents import PortableCheckpoint, import_checkpoint
from afp_runtime.host import Host
from afp_runtime.loop import AgentDriver, SystemClock, TimeOrderedIds
from afp_runtime.messages import Message, ModelReply, ModelRequest, ToolCall, Usage, fingerprint
from afp_runtime.store import Store, open_store
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.window import FoldedSpan, sliding_window

HERE = Path(__file__).resolve().parent
BASE_MS = 1_775_000_000_000
LIVE_EXCHANGES = KEEP_RECENT_TURNS


class Died(BaseException):
    """Stands for the process dying inside a model send."""


def _window() -> Any:
    return sliding_window(keep_recent_turns=KEEP_RECENT_TURNS)


# -- resume --------------------------------------------------------------------------------------


def _exchanges(prefix: str) -> Iterator[Message]:
    """Assistant tool calls and their 300-character results, alternating, without end."""
    for k in itertools.count(1):
        call = ToolCall(id=f"{prefix}{k}", name="trivial", args={"n": k})
        yield Message(role="assistant", content="", tool_calls=(call,))
        yield Message(role="tool", content=RESULT, tool_call_id=call.id, tool_name="trivial")


def history_checkpoint(folded_messages: int, folds: int) -> PortableCheckpoint:
    """A conversation of ``folds`` folded spans holding ``folded_messages`` messages in all,
    and a live window of the latest summary, 20 exchanges and an answer."""
    stream = _exchanges("h")
    spans = []
    summary = Message(role="user", content="")
    for index in range(folds):
        size = folded_messages // folds + (1 if index < folded_messages % folds else 0)
        messages = tuple(itertools.islice(stream, max(1, size)))
        summary = Message(role="user", content=f"Summary {index}: earlier checks were all fine.")
        spans.append(
            FoldedSpan(
                summary_fingerprint=fingerprint(summary),
                run_id=f"run-past-{index}",
                iteration=1 + index % ITERATIONS_PER_TURN,
                folded_at_ms=BASE_MS + index * 1_000,
                model="bench-summarizer",
                message_count=len(messages),
                removed_stage_ids=(f"st-past-{index}",),
                retained="conversation",
                messages=messages,
            )
        )
    live = (
        summary,
        *itertools.islice(_exchanges("w"), 2 * LIVE_EXCHANGES),
        Message(role="assistant", content="done"),
    )
    return PortableCheckpoint(
        version=1,
        agent_id="bench",
        turn=folds,
        history=live,
        folded=tuple(spans),
        model_calls=folds * ITERATIONS_PER_TURN,
        checkpointed_at_ms=BASE_MS,
    )


def _died(exc: BaseException) -> bool:
    """True when ``exc`` is ``Died``, or a group holding one."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_died(e) for e in exc.exceptions)
    return isinstance(exc, Died)


def _dies_at(call: int) -> Any:
    def script(request: ModelRequest, number: int) -> ModelReply:
        if number >= call:
            raise Died
        tool_call = ToolCall(id=f"c{number}", name="trivial", args={"n": number})
        return ModelReply(tool_calls=(tool_call,), usage=Usage(input=10, output=5))

    return script


async def resume_build(folder: Path, history: int, folds: int) -> dict[str, Any]:
    """Import the conversation, then die in the middle of a turn (two iterations done)."""
    db = folder / "resume.db"
    clock = SystemClock()
    checkpoint = history_checkpoint(history, folds)
    store = await SqliteStore.open(db)
    start = time.perf_counter()
    await import_checkpoint(store, "bench", checkpoint, now_ms=clock.now_ms())
    imported = time.perf_counter() - start
    definition = bench_agent(window=_window(), script=_dies_at(3))
    driver = AgentDriver(store, definition, clock=clock, ids=TimeOrderedIds(clock.now_ms))
    await driver.post("one more check, please")
    try:
        await driver.work()
    except BaseException as exc:
        if not _died(exc):
            raise
    state = await store.conversation_state("bench")
    await store.aclose()
    spans = checkpoint.folded if checkpoint.folded is not msgspec.UNSET else ()
    folded = sum(span.message_count for span in spans)
    assert state is not None and state.open_turn is not None, "the turn did not stay open"
    return {
        "historyMessages": len(checkpoint.history) + folded,
        "liveWindowMessages": len(checkpoint.history),
        "folds": folds,
        "importSeconds": round(imported, 2),
        "openTurnStatus": state.open_turn.status,
        "bytesOnDisk": disk_bytes(db),
    }


class FirstCall:
    """A script that notes the instant of its first call and answers at once."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.called = anyio.Event()

    def __call__(self, request: ModelRequest, number: int) -> ModelReply:
        if self.at is None:
            self.at = time.perf_counter()
            self.called.set()
        return ModelReply(content="done", usage=Usage(input=10, output=2))


def _remove(folder: Path, names: tuple[str, ...]) -> None:
    """Delete the named databases with their ``-wal`` and ``-shm`` files."""
    for name in names:
        for path in folder.glob(name + "*"):
            path.unlink()


def _copy(db: Path, to: Path) -> Path:
    shutil.copyfile(db, to)
    return to


async def _driver_resume(db: Path) -> dict[str, float]:
    clock = SystemClock()
    first = FirstCall()
    start = time.perf_counter()
    store = await SqliteStore.open(db)
    opened = time.perf_counter()
    driver = AgentDriver(
        store,
        bench_agent(window=_window(), script=first),
        clock=clock,
        ids=TimeOrderedIds(clock.now_ms),
    )
    outcomes = await driver.work()
    finished = time.perf_counter()
    await store.aclose()
    assert first.at is not None and outcomes, "the recovery run did not call the model"
    return {
        "resumeMs": (first.at - start) * 1000,
        "openMs": (opened - start) * 1000,
        "recoveredTurnMs": (finished - start) * 1000,
    }


async def _host_resume(db: Path) -> float:
    clock = SystemClock()
    first = FirstCall()
    start = time.perf_counter()
    store = await SqliteStore.open(db)
    try:
        definition = bench_agent(window=_window(), script=first)
        async with Host(store, [definition], clock=clock, ids=TimeOrderedIds(clock.now_ms)):
            with anyio.fail_after(600):
                await first.called.wait()
    finally:
        await store.aclose()
    assert first.at is not None
    return (first.at - start) * 1000


async def _quick_check(db: Path) -> float:
    store = await SqliteStore.open(db)
    try:
        start = time.perf_counter()
        problems = await store.quick_check()
        elapsed = time.perf_counter() - start
    finally:
        await store.aclose()
    assert problems == ["ok"], problems
    return elapsed * 1000


async def resume_measure(folder: Path, repeats: int) -> dict[str, Any]:
    """Median over ``repeats`` fresh copies of the crashed file."""
    db = folder / "resume.db"
    driver_runs: list[dict[str, float]] = []
    host_runs: list[float] = []
    checks: list[float] = []
    for rep in range(repeats):
        driver_runs.append(await _driver_resume(_copy(db, folder / f"driver-{rep}.db")))
        host_runs.append(await _host_resume(_copy(db, folder / f"host-{rep}.db")))
        checks.append(await _quick_check(_copy(db, folder / f"check-{rep}.db")))
        _remove(folder, (f"driver-{rep}.db", f"host-{rep}.db", f"check-{rep}.db"))

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 2)

    return {
        "repetitions": repeats,
        "resumeMs": median([r["resumeMs"] for r in driver_runs]),
        "resumeMsRuns": [round(r["resumeMs"], 2) for r in driver_runs],
        "openMs": median([r["openMs"] for r in driver_runs]),
        "recoveredTurnMs": median([r["recoveredTurnMs"] for r in driver_runs]),
        "hostResumeMs": median(host_runs),
        "quickCheckMs": median(checks),
    }


# -- RSS over a long run ------------------------------------------------------------------------


class StoreBytes:
    """The bytes a benchmark's store takes: the SQLite file, or the Postgres tables' growth."""

    def __init__(self, db: Path, url: str | None) -> None:
        self.db = db
        self.url = url
        self.before: dict[str, int] = {}

    async def open(self) -> Store:
        if self.url is None:
            return await SqliteStore.open(self.db)
        store = await open_store(self.url)
        self.before = await _pg.database_bytes(self.url)
        return store

    async def now(self) -> int:
        if self.url is None:
            return disk_bytes(self.db)
        return (await _pg.database_bytes(self.url))["tables"] - self.before["tables"]


def _child_url(postgres: bool) -> str | None:
    return _pg.child_database() if postgres else None


async def rss_run(
    folder: Path, iterations: int, samples: int, postgres: bool = False
) -> dict[str, Any]:
    db = folder / "rss.db"
    clock = SystemClock()
    sizes = StoreBytes(db, _child_url(postgres))
    store = await sizes.open()
    driver = AgentDriver(
        store, bench_agent(window=_window()), clock=clock, ids=TimeOrderedIds(clock.now_ms)
    )
    turns = iterations // ITERATIONS_PER_TURN
    every = max(1, turns // samples)
    baseline = rss_mb()
    points = []
    start = last = time.perf_counter()
    for turn in range(1, turns + 1):
        await driver.post(f"turn {turn}")
        await driver.work()
        if turn % every == 0 or turn == turns:
            now = time.perf_counter()
            done_since = (turn - (points[-1]["turns"] if points else 0)) * ITERATIONS_PER_TURN
            points.append(
                {
                    "turns": turn,
                    "iterations": turn * ITERATIONS_PER_TURN,
                    "seconds": round(now - start, 2),
                    "rssMb": rss_mb(),
                    "iterationsPerSecond": round(done_since / (now - last), 1),
                    "bytesOnDisk": await sizes.now(),
                }
            )
            last = now
    elapsed = time.perf_counter() - start
    await store.aclose()
    size = await sizes.now()
    for point in points:
        del point["turns"]
    return {
        "iterations": turns * ITERATIONS_PER_TURN,
        "window": f"sliding-window keep {KEEP_RECENT_TURNS}",
        "seconds": round(elapsed, 1),
        "iterationsPerSecond": round(turns * ITERATIONS_PER_TURN / elapsed, 1),
        "rssBaselineMb": baseline,
        "rssFirstSampleMb": points[0]["rssMb"],
        "rssEndMb": points[-1]["rssMb"],
        # From the first sample (a twentieth of the run, caches warm) to the end.
        "rssGrowthMb": round(points[-1]["rssMb"] - points[0]["rssMb"], 1),
        "rssGrowthFromStartMb": round(points[-1]["rssMb"] - baseline, 1),
        "backend": "postgres" if postgres else "sqlite",
        "bytesOnDisk": size,
        "samples": points,
    }


# -- many agents in one host ---------------------------------------------------------------------


TASK = "check the data files, please"


async def agents_run(
    folder: Path, agents: int, per_turn: int, turns: int = 1, postgres: bool = False
) -> dict[str, Any]:
    """``turns`` messages to each agent, the next one posted once every agent answered the
    last (one agent alone is measured with as many turns as the host has agents, so both runs
    close the same number of iterations)."""
    db = folder / "agents.db"
    clock = SystemClock()
    marks = CountedMarks(agents * per_turn)
    # Many turns of one agent would re-send an ever longer history, which the many agents (one
    # turn each) never do: a window keeping one turn holds its request as short as theirs.
    window = sliding_window(keep_recent_turns=1) if turns > 1 else None
    definitions = [
        bench_agent(f"agent-{i:04d}", per_turn=per_turn, window=window) for i in range(agents)
    ]
    baseline = rss_mb()
    sizes = StoreBytes(db, _child_url(postgres))
    store = await sizes.open()
    try:
        start = time.perf_counter()
        async with Host(
            store, definitions, clock=clock, ids=TimeOrderedIds(clock.now_ms), hooks=marks
        ) as host:
            started = time.perf_counter()
            posting = 0.0
            for turn in range(1, turns + 1):
                marks.expected, marks.all_done = turn * agents * per_turn, anyio.Event()
                before = time.perf_counter()
                # Every person posts at once, as a thousand independent senders would (their
                # posts then commit in groups too); one agent alone posts one at a time.
                async with anyio.create_task_group() as senders:
                    for definition in definitions:
                        senders.start_soon(host.post, definition.agent_id, TASK)
                posting += time.perf_counter() - before
                with anyio.fail_after(3_600):
                    await marks.all_done.wait()
            finished = marks.marks[-1]
            max_active = host.max_active_turns
            poll = host.poll_interval_s
    finally:
        await store.aclose()
    size = await sizes.now()
    run_seconds = finished - started
    return {
        "agents": agents,
        "turnsPerAgent": turns,
        "iterationsPerAgent": per_turn * turns,
        "window": "sliding-window keep 1" if window is not None else None,
        "iterations": len(marks.marks),
        "maxActiveTurns": max_active,
        "pollIntervalS": poll,
        "hostStartSeconds": round(started - start, 2),
        "postSeconds": round(posting, 2),
        "runSeconds": round(run_seconds, 2),
        "aggregateIterationsPerSecond": round(len(marks.marks) / run_seconds, 1),
        "rssBaselineMb": baseline,
        "backend": "postgres" if postgres else "sqlite",
        "bytesOnDisk": size,
    }


# -- children and the parent ------------------------------------------------------------------


async def child(args: argparse.Namespace) -> dict[str, Any]:
    # Hosts left at once (no grace) warn that they cancelled work: expected here.
    quiet_logs(logging.ERROR if args.child in ("resume-measure", "agents") else logging.WARNING)
    if args.child == "resume-build":
        result = await resume_build(args.dir, args.history, args.folds)
    elif args.child == "resume-measure":
        result = await resume_measure(args.dir, args.repeats)
    elif args.child == "rss":
        result = await rss_run(args.dir, args.iterations, args.samples, args.postgres)
    elif args.child == "agents":
        result = await agents_run(args.dir, args.agents, args.per_turn, args.turns, args.postgres)
    else:
        raise SystemExit(f"unknown part {args.child!r}")
    return {**result, "peakRssMb": peak_rss_mb()}


def _in_folder(prefix: str, *steps: list[str], server: str | None = None) -> list[dict[str, Any]]:
    """Run the children in order in one fresh folder (and, given a Postgres ``server``, one
    fresh database on it)."""
    folder = Path(tempfile.mkdtemp(prefix=f"afp-scaling-{prefix}-"))
    try:
        if server is None:
            return [run_child(HERE / "scaling.py", [*step, "--dir", str(folder)]) for step in steps]
        with _pg.fresh_database(server) as url:
            return [
                run_child(
                    HERE / "scaling.py",
                    [*step, "--dir", str(folder), "--postgres"],
                    env=_pg.child_env(url),
                )
                for step in steps
            ]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _log(text: str) -> None:
    print(f"scaling: {text}", file=sys.stderr)


def parent(args: argparse.Namespace) -> dict[str, Any]:
    quick = args.quick
    parts = set(args.only or ("served", "resume", "rss", "agents"))
    server = args.db
    out: dict[str, Any] = {
        "benchmark": "scaling",
        "mode": "quick" if quick else "full",
        "backend": "postgres" if server else "sqlite",
    }
    ratios: dict[str, Any] = {}
    if server is not None and "resume" in parts:
        parts.discard("resume")
        _log("resume runs on SQLite only (file copies, quick_check): skipped with --db")
    if "served" in parts:
        served = run_child(
            HERE / "served.py", ["--iterations", "10000", *(["--db", server] if server else [])]
        )
        by_epoch = {r["epoch"]: r for r in served["results"]}
        out["served"] = served
        ratios["servedAt10000Over10"] = ratio(
            by_epoch.get(10_000, {}).get("medianMs"), by_epoch.get(10, {}).get("medianMs")
        )
        _log(f"served_at 10,000 over 10: {ratios['servedAt10000Over10']}")
    if "resume" in parts:
        resume: dict[str, Any] = {}
        for history in (1_000, 100_000):
            built, measured = _in_folder(
                "resume",
                ["--child", "resume-build", "--history", str(history), "--folds", "1000"],
                ["--child", "resume-measure", "--repeats", "3" if quick else "5"],
            )
            resume[f"{history}"] = {**built, **measured}
            _log(f"resume with {history} folded messages: {measured['resumeMs']} ms")
        out["resume"] = resume
        small, large = resume["1000"], resume["100000"]
        ratios["resume100kOver1k"] = ratio(large["resumeMs"], small["resumeMs"])
        ratios["hostResume100kOver1k"] = ratio(large["hostResumeMs"], small["hostResumeMs"])
        ratios["quickCheck100kOver1k"] = ratio(large["quickCheckMs"], small["quickCheckMs"])
    if "rss" in parts:
        n = 10_000 if quick else 100_000
        [rss] = _in_folder(
            "rss", ["--child", "rss", "--iterations", str(n), "--samples", "20"], server=server
        )
        out["rss"] = rss
        _log(f"RSS over {n} iterations grew {rss['rssGrowthMb']} MiB")
    if "agents" in parts:
        per_turn = 2 if quick else ITERATIONS_PER_TURN
        [agents] = _in_folder(
            "agents",
            ["--child", "agents", "--agents", "1000", "--per-turn", str(per_turn)],
            server=server,
        )
        [one] = _in_folder(
            "one-agent",
            ["--child", "agents", "--agents", "1", "--per-turn", str(per_turn), "--turns", "1000"],
            server=server,
        )
        out["agents"] = agents
        out["oneAgent"] = one
        ratios["agentsAggregateOverOne"] = ratio(
            agents["aggregateIterationsPerSecond"], one["aggregateIterationsPerSecond"]
        )
        _log(
            f"1,000 agents: {agents['aggregateIterationsPerSecond']} it/s; one agent alone: "
            f"{one['aggregateIterationsPerSecond']} it/s"
        )
    out["ratios"] = ratios
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller runs (RSS over 10k)")
    parser.add_argument("--only", nargs="+", choices=["served", "resume", "rss", "agents"])
    parser.add_argument("--db", help="a Postgres server URL; each part in a fresh database")
    parser.add_argument("--postgres", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--child",
        choices=["resume-build", "resume-measure", "rss", "agents"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--history", type=int, default=1_000, help=argparse.SUPPRESS)
    parser.add_argument("--folds", type=int, default=1_000, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=3, help=argparse.SUPPRESS)
    parser.add_argument("--iterations", type=int, default=100_000, help=argparse.SUPPRESS)
    parser.add_argument("--samples", type=int, default=20, help=argparse.SUPPRESS)
    parser.add_argument("--agents", type=int, default=1_000, help=argparse.SUPPRESS)
    parser.add_argument("--per-turn", type=int, default=ITERATIONS_PER_TURN, help=argparse.SUPPRESS)
    parser.add_argument("--turns", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.db = _pg.checked_server(args.db)
    result = anyio.run(child, args) if args.child else parent(args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
