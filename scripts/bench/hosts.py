"""Many hosts on one store: 1,000 standing agents spread over 1, 2 and 4 hosts, on one Postgres
database or (``--sqlite``) on one SQLite file.

Each host is a process of its own running a real ``Host`` on a ``PostgresStore``, all of them
on one fresh database with the same 1,000 agent definitions (one agents file) and distinct
host ids, so the agents spread over them as docs/host.md#agents-spread-over-the-hosts says:
each host settles on its share, ``ceil(1000 / hosts)``. The hosts start, and once every one
holds its share the parent tells them to go: each posts one person message to every agent it
holds (a turn of ``--per-turn`` iterations) and times until its last iteration closed.
Aggregate iterations per second run from the first host's first post to the last host's last
iteration (``time.perf_counter``, one clock for every process on the machine).

Where the time goes: each host reports its process's CPU seconds over the run (``clientCpu``)
and the time its commits took; the server's processes' CPU over the same stretch is measured
by the parent (``serverCpuSeconds``). Their sum against ``cpus x runSeconds`` says whether the
machine's cores were the bound.

Every idle worker of a host also looks for work every ``pollIntervalS`` (1 s by default,
docs/host.md#a-message-reaches-its-host), and before a pass one not held by its host reads the
agent's claim: with 1,000 agents per host that is background work beside the turns, and it
grows with the hosts. ``--poll-interval`` sets it (a post reaches its host by NOTIFY anyway).

    .venv/bin/python scripts/bench/hosts.py --db postgresql://SERVER [--hosts 1 2 4]
        [--agents 1000] [--per-turn 4] [--repeats 1] [--poll-interval 1]
    .venv/bin/python scripts/bench/hosts.py --sqlite [--hosts 1 2] ...

On SQLite the server's CPU and backends are not measured (there is no server). The ratio
``processesAggregateOverOne`` is the aggregate rate of 2 hosts over 1 (issue 36: two host
processes on one store must never do worse than one).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import _pg
import anyio
import anyio.to_thread
from _common import CommitTimer, CountedMarks, bench_agent, peak_rss_mb, quiet_logs, ratio

from afp_runtime.host import Host
from afp_runtime.loop import SystemClock, TimeOrderedIds
from afp_runtime.store import open_store

HERE = Path(__file__).resolve().parent


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def _hear() -> str:
    line: str = await anyio.to_thread.run_sync(sys.stdin.readline)
    return line.strip()


async def host_child(args: argparse.Namespace) -> None:
    """One host: start, settle on its share, then (told ``go``) post and time the turns."""
    quiet_logs(logging.ERROR)
    url = _pg.child_database()
    clock = SystemClock()
    agent_ids = [f"agent-{i:04d}" for i in range(args.agents)]
    definitions = [bench_agent(a, per_turn=args.per_turn) for a in agent_ids]
    share = -(-args.agents // args.of)
    marks = CountedMarks(share * args.per_turn)
    began = time.perf_counter()
    store = await open_store(url)
    commits = CommitTimer(store)
    try:
        async with Host(
            store,
            definitions,
            clock=clock,
            ids=TimeOrderedIds(clock.now_ms),
            hooks=marks,
            host_id=f"bench-host-{args.index}",
            lease_ttl_s=args.lease_ttl,
            poll_interval_s=args.poll_interval,
        ) as host:
            with anyio.fail_after(300):
                while True:
                    held = [a for a in agent_ids if host.status_override(a) is None]
                    if len(held) == share:
                        break
                    await anyio.sleep(0.1)
            settled = time.perf_counter()
            _say("ready")
            if await _hear() != "go":
                return
            cpu = time.process_time()
            start = time.perf_counter()
            for agent_id in held:
                await host.post(agent_id, "check the data files, please")
            posted = time.perf_counter()
            with anyio.fail_after(3_600):
                await marks.all_done.wait()
            finish = marks.marks[-1]
            cpu = time.process_time() - cpu
            run = finish - start
            _say(
                json.dumps(
                    {
                        "hostId": host.host_id,
                        "agentsHeld": len(held),
                        "iterations": len(marks.marks),
                        "maxActiveTurns": host.max_active_turns,
                        "settleSeconds": round(settled - began, 2),
                        "start": start,
                        "finish": finish,
                        "postSeconds": round(posted - start, 3),
                        "runSeconds": round(run, 3),
                        "iterationsPerSecond": round(len(marks.marks) / run, 1),
                        "commits": commits.count,
                        "commitSeconds": round(commits.seconds, 3),
                        "clientCpuSeconds": round(cpu, 3),
                        "clientCpuShare": round(cpu / run, 3),
                        "transactions": store.transactions,  # type: ignore[attr-defined]
                        "fullTransactions": store.full_transactions,  # type: ignore[attr-defined]
                        "peakRssMb": peak_rss_mb(),
                    }
                )
            )
            await _hear()  # "exit": the parent has read the server's CPU
    finally:
        await store.aclose()


def _readline(stream: IO[str] | None) -> str:
    assert stream is not None
    return stream.readline()


@contextlib.contextmanager
def fresh_store(server: str | None) -> Iterator[str]:
    """A fresh Postgres database on ``server``, else a fresh SQLite file, for the block."""
    if server is not None:
        with _pg.fresh_database(server) as url:
            yield url
        return
    with tempfile.TemporaryDirectory(prefix="afp-hosts-") as folder:
        yield str(Path(folder) / "afp.db")


def one_run(server: str | None, hosts: int, args: argparse.Namespace) -> dict[str, Any]:
    """``hosts`` host processes on one fresh database (or SQLite file); the aggregate figures."""
    postgres = server is not None
    with fresh_store(server) as url:

        async def migrate() -> None:
            store = await open_store(url)  # created once, before the hosts race to open it
            await store.aclose()

        anyio.run(migrate)
        command = [
            sys.executable,
            str(HERE / "hosts.py"),
            "--child",
            "--of",
            str(hosts),
            "--agents",
            str(args.agents),
            "--per-turn",
            str(args.per_turn),
            "--lease-ttl",
            str(args.lease_ttl),
            "--poll-interval",
            str(args.poll_interval),
        ]
        children = [
            subprocess.Popen(
                [*command, "--index", str(i)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=_pg.child_env(url),
            )
            for i in range(hosts)
        ]
        try:
            for child in children:
                if _readline(child.stdout).strip() != "ready":
                    raise SystemExit(f"hosts: a host did not settle (exit {child.wait()})")
            server_cpu = anyio.run(_pg.server_cpu_seconds, url) if postgres else None
            machine = _pg.machine_cpu()
            with _pg.WaitSampler(url) if postgres else contextlib.nullcontext() as waits:
                for child in children:
                    assert child.stdin is not None
                    child.stdin.write("go\n")
                    child.stdin.flush()
                results = [json.loads(_readline(child.stdout)) for child in children]
            machine_busy = _pg.machine_busy_share(machine, _pg.machine_cpu())
            after = anyio.run(_pg.server_cpu_seconds, url) if postgres else None
            for child in children:
                assert child.stdin is not None
                child.stdin.write("exit\n")
                child.stdin.flush()
            for child in children:
                if child.wait(timeout=120) != 0:
                    raise SystemExit(f"hosts: a host failed (exit {child.returncode})")
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait()
    start = min(r["start"] for r in results)
    finish = max(r["finish"] for r in results)
    seconds = finish - start
    iterations = sum(r["iterations"] for r in results)
    client_cpu = sum(r["clientCpuSeconds"] for r in results)
    server = None if server_cpu is None or after is None else after - server_cpu
    busy = client_cpu + (server or 0.0)
    cpus = os.cpu_count() or 1
    for r in results:
        del r["start"], r["finish"]
    return {
        "hosts": hosts,
        "agents": args.agents,
        "iterationsPerAgent": args.per_turn,
        "iterations": iterations,
        "runSeconds": round(seconds, 3),
        "aggregateIterationsPerSecond": round(iterations / seconds, 1),
        "clientCpuSeconds": round(client_cpu, 2),
        "serverCpuSeconds": round(server, 2) if server is not None else None,
        # Of the machine's CPU time over the run (cpus x seconds): 1.0 is every core busy;
        # the benchmark's own processes (hosts and server), then the whole machine.
        "cpuBusyShare": round(busy / (cpus * seconds), 3)
        if postgres == (server is not None)
        else None,
        "machineCpuBusyShare": machine_busy,
        "commitSeconds": round(sum(r["commitSeconds"] for r in results), 2),
        "serverBackends": waits.figures() if waits is not None else None,
        "perHost": results,
    }


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median aggregate rate, with every repetition's rate beside it."""
    rates = [r["aggregateIterationsPerSecond"] for r in runs]
    middle = sorted(runs, key=lambda r: r["aggregateIterationsPerSecond"])[(len(runs) - 1) // 2]
    return {
        **middle,
        "aggregateIterationsPerSecond": round(statistics.median(rates), 1),
        "repetitions": len(runs),
        "aggregateIterationsPerSecondRuns": rates,
    }


def parent(args: argparse.Namespace) -> dict[str, Any]:
    server = args.db
    runs: dict[int, list[dict[str, Any]]] = {k: [] for k in args.hosts}
    for rep in range(args.repeats):
        order = args.hosts if rep % 2 == 0 else list(reversed(args.hosts))
        for k in order:
            runs[k].append(one_run(server, k, args))
            print(
                f"hosts: {k} host(s) rep {rep + 1}: "
                f"{runs[k][-1]['aggregateIterationsPerSecond']} it/s",
                file=sys.stderr,
            )
    results = [median_run(runs[k]) for k in args.hosts]
    by_hosts = {r["hosts"]: r["aggregateIterationsPerSecond"] for r in results}
    most = max(args.hosts)
    return {
        "benchmark": "hosts",
        "cpus": os.cpu_count(),
        "leaseTtlS": args.lease_ttl,
        "pollIntervalS": args.poll_interval,
        "backend": "postgres" if server is not None else "sqlite",
        "postgres": anyio.run(_pg.server_settings, server) if server is not None else None,
        "results": results,
        "ratios": {
            "processesAggregateOverOne": ratio(by_hosts.get(2), by_hosts.get(1)),
            f"its{most}HostsOver1": ratio(by_hosts.get(most), by_hosts.get(1)),
            **{
                f"its{k}HostsOver1": ratio(by_hosts.get(k), by_hosts.get(1))
                for k in args.hosts
                if k not in (1, most)
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help="a Postgres server URL; each run in a fresh database on it")
    parser.add_argument("--sqlite", action="store_true", help="on a fresh SQLite file instead")
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--agents", type=int, default=1_000)
    parser.add_argument("--per-turn", type=int, default=4, help="iterations in each agent's turn")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--lease-ttl", type=float, default=6.0, help="seconds (periods of 1/3)")
    parser.add_argument("--poll-interval", type=float, default=1.0, help="seconds (the Host's)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--of", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        anyio.run(host_child, args)
        return
    args.db = _pg.checked_server(args.db)
    if (args.db is None) != args.sqlite:
        parser.error("give --db postgresql://SERVER or --sqlite, one of them")
    print(json.dumps(parent(args), indent=2))


if __name__ == "__main__":
    main()
