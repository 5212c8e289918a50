"""Faults on real ``afp serve`` processes sharing one Postgres database: hosts SIGKILLed at random
while messages arrive, the Postgres server stopped and started under them, and a host frozen past
its lease and thawed (docs/host.md#hosts-and-a-failing-store, docs/host.md#fencing-commits,
docs/storage.md#pool-timeouts-and-lost-connections).

The restart test runs a Postgres server of its own (``PostgresServer``: initdb into a private
directory, a Unix socket there), so stopping it disturbs no other test; the frozen-host test uses
a fresh database on the suite's server. The hosts are forked from a process that imported
afp_runtime once (``processes.Forked``): thirty-odd restarts would otherwise pay about a second
of imports each.
"""

from __future__ import annotations

import json
import math
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.host.crash_tools import agents_toml
from tests.host.processes import (
    PostgresServer,
    Served,
    afp,
    rows,
    serve_env,
    stop_forkserver,
    until,
)
from tests.store._postgres import FreshDatabase

AGENTS = [f"f{n:02}" for n in range(1, 21)]
HOST_IDS = ("h1", "h2", "h3")
MESSAGES = 500
MIN_KILLS = 30
# The server is stopped and started once, after this many kills.
RESTART_AFTER_KILLS = 12


def _log_events(path: Path, *, start: int = 0) -> list[dict[str, Any]]:
    """The structlog JSON events of a host's log from byte ``start`` (other lines skipped)."""
    with path.open("rb") as log:
        log.seek(start)
        text = log.read().decode("utf-8", errors="replace")
    events = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                continue  # a line cut off by a SIGKILL
    return events


def _claims(url: str) -> dict[str, tuple[str | None, int | None]]:
    found = rows(url, "SELECT agent_id, claim_host, claim_epoch FROM agents")
    return {agent: (host, epoch) for agent, host, epoch in found}


class Fleet:
    """Three hosts kept up: a killed host is started again at once under its id. A killer thread
    owns the processes; the posting threads ask ``pick`` for a host that answers health."""

    def __init__(self, agents: Path, url: str, env: dict[str, str], tmp: Path) -> None:
        self.agents, self.url, self.env, self.tmp = agents, url, env, tmp
        self.lock = threading.Lock()
        self.current = {h: self._start(h) for h in HOST_IDS}
        self.every: list[Served] = list(self.current.values())
        self.up: set[str] = set()
        self.kills = 0
        self.starts: list[float] = []  # seconds from start to health, per start
        self.down = threading.Event()  # the Postgres server is stopping, stopped or starting
        self.listening_again = False  # every host listened again after the restart
        self.error: BaseException | None = None

    def _start(self, host_id: str) -> Served:
        log = self.tmp / f"{host_id}.log"
        return Served(self.agents, self.url, host_id, self.env, log, verbose=True, forked=True)

    def refresh(self) -> None:
        """Mark the hosts whose health answers as up."""
        for host_id, served in list(self.current.items()):
            if host_id not in self.up and served.ready():
                with self.lock:
                    self.up.add(host_id)
                    self.starts.append(time.monotonic() - served.started)

    def wait_all_up(self, within_s: float) -> None:
        """Wait until all three hosts answer health."""
        until(lambda: (self.refresh(), len(self.up) == 3)[1], within_s, lambda: self.up)

    def pick(self, rng: random.Random) -> Served | None:
        """A host that answered health (None while none does)."""
        with self.lock:
            up = sorted(self.up)
            return self.current[rng.choice(up)] if up else None

    def kill_one(self, rng: random.Random) -> None:
        """SIGKILL a random host that is up and start it again under its id."""
        with self.lock:
            host_id = rng.choice(sorted(self.up))
            self.up.discard(host_id)
            victim = self.current[host_id]
        victim.process.send_signal(signal.SIGKILL)
        assert victim.process.wait(10) == -signal.SIGKILL
        self.kills += 1
        replacement = self._start(host_id)
        with self.lock:
            self.current[host_id] = replacement
            self.every.append(replacement)

    def end(self) -> None:
        """Kill whatever still runs."""
        for served in self.every:
            served.end()


def _probe_while_down(fleet: Fleet) -> list[tuple[int, dict[str, Any]]]:
    """A post to every host while the server is stopped: (status, body) each."""
    answers = []
    for host_id in HOST_IDS:
        body = {"text": "Order 1?", "idempotencyKey": f"down-{host_id}"}
        reply = fleet.current[host_id].client.post(f"/v1/agents/{AGENTS[0]}/inbox", json=body)
        answers.append((reply.status_code, reply.json()))
    return answers


def _restart_postgres(fleet: Fleet, pg: PostgresServer, probes: list[tuple[int, Any]]) -> None:
    """With every host up: stop the server, post to each host, start it again, and wait until
    each host listens for posts again."""
    fleet.wait_all_up(60)
    offsets = {h: s.log.stat().st_size for h, s in fleet.current.items()}
    fleet.down.set()  # from the moment it begins to stop until it accepts connections again
    pg.stop("fast")
    probes.extend(_probe_while_down(fleet))
    pg.start()
    fleet.down.clear()

    def listening() -> bool:
        return all(
            any(
                e["event"] == "listening for posts again"
                for e in _log_events(served.log, start=offsets[host_id])
            )
            for host_id, served in fleet.current.items()
        )

    until(listening, 60, lambda: "a host did not listen again after the restart")
    fleet.listening_again = True


def _killer(
    fleet: Fleet, pg: PostgresServer, rng: random.Random, probes: list[tuple[int, Any]]
) -> None:
    """Kill a random live host every 0.2-0.8 s (two at least answering) until MIN_KILLS; after
    RESTART_AFTER_KILLS, stop and start the Postgres server once."""
    try:
        deadline = time.monotonic() + 150
        while fleet.kills < MIN_KILLS:
            assert time.monotonic() < deadline, f"only {fleet.kills} kills"
            pause_until = time.monotonic() + rng.uniform(0.2, 0.8)
            while time.monotonic() < pause_until or len(fleet.up) < 2:
                fleet.refresh()
                time.sleep(0.05)
                assert time.monotonic() < deadline, f"hosts up: {fleet.up}"
            if fleet.kills == RESTART_AFTER_KILLS and not fleet.listening_again:
                _restart_postgres(fleet, pg, probes)
            fleet.kill_one(rng)
        fleet.wait_all_up(60)
    except BaseException as exc:
        fleet.error = exc
        raise


def _post_all(fleet: Fleet, over_s: float) -> tuple[dict[str, str], Counter[str]]:
    """Post the MESSAGES spread over ``over_s`` from four client threads, each through a random
    host that is up, until each is acknowledged (a transport error or a 503 is sent again with
    the same key): the message id by key, and how often each kind of answer came."""
    acked: dict[str, str] = {}
    seen: Counter[str] = Counter()
    lock = threading.Lock()
    started = time.monotonic()

    def post(i: int) -> None:
        rng = random.Random(i)
        key, agent = f"m-{i}", AGENTS[i % len(AGENTS)]
        body = {"text": f"Where is order {1000 + i}?", "idempotencyKey": key}
        time.sleep(max(0.0, started + i * over_s / MESSAGES - time.monotonic()))
        deadline = time.monotonic() + 60
        while True:
            assert fleet.error is None and time.monotonic() < deadline, (key, fleet.error)
            served = fleet.pick(rng)
            if served is None:
                time.sleep(0.02)
                continue
            down = fleet.down.is_set()
            try:
                reply = served.client.post(f"/v1/agents/{agent}/inbox", json=body)
            except httpx.TransportError:
                answer = "transport-error"  # killed mid-request: it may have landed
            else:
                answer = str(reply.status_code)
            if answer == "503" and not (down or fleet.down.is_set()):
                answer = "503-while-up"  # the server ran all along: nothing should fail
            with lock:
                seen[answer] += 1
            if answer.startswith("503"):
                assert reply.json()["error"]["code"] == "store-unavailable", reply.text
                time.sleep(0.05)
            elif answer != "transport-error":
                assert reply.status_code in (200, 202), reply.text
                with lock:
                    acked[key] = reply.json()["messageId"]
                return

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(post, range(MESSAGES)))
    return acked, seen


@pytest.fixture(name="forks", autouse=True)
def fixture_forks() -> Iterator[None]:
    """The fork server the hosts are forked from ends with the test."""
    yield
    stop_forkserver()


@pytest.fixture(name="pg")
def fixture_pg() -> Iterator[PostgresServer]:
    """A Postgres server of this test's own, started; stopped and removed after it."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.close()


# 33 host starts and about 600 runs: 40-60 s on a 2-core machine shared with other test runs,
# 58 s with two CPU-bound processes beside it, 102 s with other suites running too.
@pytest.mark.timeout(300)
def test_three_hosts_answer_every_message_once_through_kills_and_a_postgres_restart(
    pg: PostgresServer, tmp_path: Path
) -> None:
    """500 messages to 20 agents over three hosts, 30 random SIGKILLs (each host started again)
    and one stop and start of Postgres: posts while it is down are 503 store-unavailable, every
    host listens again, every acknowledged message is answered exactly once, no non-idempotent
    call runs twice, every agent is held again within its share, and `afp doctor` finds the
    database clean."""
    started = time.monotonic()
    agents = tmp_path / "agents.toml"
    text = agents_toml(
        AGENTS,
        special=AGENTS[::2],
        special_tool="crash_tools:RECORDED_STATUS",
        other_tool="crash_tools:SLEEPY_STATUS",
    )
    # A poll every 5 s: messages reach their hosts by NOTIFY, and those posted while a host did
    # not listen by the wake-up of every agent once it listens again.
    host = "\n[host]\nleaseTtlS = 3.0\npollIntervalS = 5.0\nshutdownGraceS = 10\n"
    agents.write_text(text + host, encoding="utf-8")
    invocations = tmp_path / "invocations.txt"
    env = serve_env(invocations)
    fleet = Fleet(agents, pg.url, env, tmp_path)
    probes: list[tuple[int, Any]] = []
    killer = threading.Thread(target=_killer, args=(fleet, pg, random.Random(7), probes))
    phases: dict[str, float] = {}
    try:
        fleet.wait_all_up(60)
        phases["up"] = time.monotonic() - started
        killer.start()
        acked, seen = _post_all(fleet, over_s=20.0)
        phases["posted"] = time.monotonic() - started
        killer.join(150)
        assert not killer.is_alive() and fleet.error is None, fleet.error
        phases["killed"] = time.monotonic() - started
        until(
            lambda: (
                rows(pg.url, "SELECT count(*) FROM inbox WHERE status <> 'answered'")[0][0] == 0
            ),
            90,
            lambda: rows(pg.url, "SELECT message_id, status FROM inbox WHERE status <> 'answered'"),
            every_s=0.2,
        )
        phases["answered"] = time.monotonic() - started
        share = math.ceil(len(AGENTS) / len(HOST_IDS))

        def spread() -> bool:
            holders = Counter(h for h, _ in _claims(pg.url).values())
            return set(holders) == set(HOST_IDS) and max(holders.values()) <= share

        until(spread, 30, lambda: _claims(pg.url), every_s=0.2)
        for served in fleet.current.values():
            served.process.send_signal(signal.SIGTERM)
        for served in fleet.current.values():
            assert served.process.wait(30) == 0, served.log.read_text(encoding="utf-8")[-4000:]
    finally:
        fleet.end()
        killer.join(30)
    assert afp(["doctor", "--db", pg.url], env)["healthy"]  # exit 0 too

    assert fleet.kills >= MIN_KILLS and fleet.listening_again
    assert seen["503-while-up"] == 0, seen  # the hosts reconnected at once
    assert [status for status, _ in probes] == [503, 503, 503], probes
    assert {body["error"]["code"] for _, body in probes} == {"store-unavailable"}
    inbox = rows(pg.url, "SELECT idempotency_key, message_id, status FROM inbox")
    assert {k: m for k, m, _ in inbox} == acked  # nothing lost, no probe stored
    assert {s for _, _, s in inbox} == {"answered"}
    answered = Counter(
        m for (m,) in rows(pg.url, "SELECT message_id FROM runs WHERE status = 'answered'")
    )
    assert sorted(answered) == sorted(acked.values()) and set(answered.values()) == {1}
    # Every run a kill cut off was taken up by a recovery run of its turn.
    assert rows(pg.url, "SELECT count(*) FROM runs WHERE status = 'running'") == [(0,)]
    lines = invocations.read_text(encoding="utf-8").splitlines()
    assert lines and max(Counter(lines).values()) == 1, Counter(lines).most_common(3)
    recovered, recovered_agents = rows(
        pg.url, "SELECT count(*), count(DISTINCT agent) FROM runs WHERE kind = 'recovery'"
    )[0]
    waits = sorted(
        w
        for (w,) in rows(
            pg.url,
            "SELECT r.ended_at_ms - i.accepted_at_ms FROM runs r"
            " JOIN inbox i ON i.message_id = r.message_id WHERE r.status = 'answered'",
        )
    )
    print(
        f"kills={fleet.kills} messages={len(inbox)} recoveries={recovered} "
        f"recovered-agents={recovered_agents} answers={dict(seen)} invocations={len(lines)} "
        f"wait-ms-p50={waits[len(waits) // 2]} p95={waits[len(waits) * 95 // 100]} "
        f"max={waits[-1]} start-s-median={sorted(fleet.starts)[len(fleet.starts) // 2]:.1f} "
        f"phases={ {k: round(v, 1) for k, v in phases.items()} } "
        f"postgres-cpu-s={pg.cpu_s():.1f} test-cpu-s={time.process_time():.1f} "
        f"seconds={time.monotonic() - started:.1f}"
    )


def _lease_epoch(url: str, host_id: str) -> int:
    found = rows(url, f"SELECT lease_epoch FROM host_leases WHERE host_id = '{host_id}'")
    return int(found[0][0])


@pytest.mark.timeout(180)
def test_a_host_frozen_past_its_lease_is_fenced_off_and_gives_its_agents_up(
    database: FreshDatabase, tmp_path: Path
) -> None:
    """A host SIGSTOPped in the middle of a non-idempotent tool call, past its lease, loses its
    agents to the others; after SIGCONT its next commit is fenced off whole and logged, it keeps
    running, holds agents again through its share under a new epoch, and nothing is answered
    twice or run twice."""
    url = database.url
    agents_file = tmp_path / "agents.toml"
    ids = [f"z{n}" for n in range(1, 7)]
    text = agents_toml(ids, special=ids, special_tool="crash_tools:SLOW_STATUS")
    host = "\n[host]\nleaseTtlS = 2.0\npollIntervalS = 1.0\nshutdownGraceS = 10\n"
    agents_file.write_text(text + host, encoding="utf-8")
    invocations = tmp_path / "invocations.txt"
    env = serve_env(invocations, tool_sleep_s=1.5)
    hosts = {
        h: Served(agents_file, url, h, env, tmp_path / f"{h}.log", verbose=True, forked=True)
        for h in HOST_IDS
    }
    try:
        for served in hosts.values():
            served.wait_ready()
            assert served.client.get("/v1/health").json()["hostId"] == served.host_id
        until(
            lambda: Counter(h for h, _ in _claims(url).values()) == dict.fromkeys(HOST_IDS, 2),
            30,
            lambda: _claims(url),
            every_s=0.2,
        )
        frozen = hosts["h1"]
        epoch = _lease_epoch(url, "h1")
        victim = sorted(a for a, (h, _) in _claims(url).items() if h == "h1")[0]
        reply = hosts["h2"].client.post(f"/v1/agents/{victim}/inbox", json={"text": "Order 7?"})
        assert reply.status_code == 202, reply.text
        message = reply.json()["messageId"]

        def tool_started() -> bool:
            return invocations.exists() and f"start {victim} " in invocations.read_text()

        until(tool_started, 30, lambda: "the tool never started on h1")
        frozen.process.send_signal(signal.SIGSTOP)
        thawed_at = frozen.log.stat().st_size
        # The others take the lease over once it expired and claim its agents.
        until(
            lambda: (
                _lease_epoch(url, "h1") > epoch and all(h != "h1" for h, _ in _claims(url).values())
            ),
            30,
            lambda: (_claims(url), _lease_epoch(url, "h1")),
            every_s=0.1,
        )
        until(
            lambda: (
                rows(url, f"SELECT status FROM inbox WHERE message_id = '{message}'")
                == [("answered",)]
            ),
            30,
            lambda: rows(url, "SELECT run_id, kind, status FROM runs"),
            every_s=0.1,
        )
        (first_run, first_bundles), *_ = rows(
            url,
            "SELECT r.run_id, count(b.seq) FROM runs r LEFT JOIN bundles b ON b.run = r.run"
            f" WHERE r.message_id = '{message}' AND r.kind = 'initial' GROUP BY r.run_id",
        )
        frozen.process.send_signal(signal.SIGCONT)

        def thaw_events() -> list[dict[str, Any]]:
            return _log_events(frozen.log, start=thawed_at)

        def fenced() -> bool:
            return any("no longer holds agent" in json.dumps(e) for e in thaw_events())

        until(fenced, 30, thaw_events)
        # It keeps running and, through its share, holds agents again under a new epoch.
        until(
            lambda: sum(h == "h1" and (e or 0) > epoch for h, e in _claims(url).values()) == 2,
            30,
            lambda: (_claims(url), thaw_events()),
            every_s=0.2,
        )
        assert frozen.process.poll() is None
        events = thaw_events()
        # It gave its agents up: the renewal found the epoch raised, or each fenced agent.
        assert any(e["event"].startswith(("host lease lost", "agent lease lost")) for e in events)
        assert not [e for e in events if e["level"] in ("error", "critical")], events
        posted = [message]
        for agent in ids:
            reply = frozen.client.post(f"/v1/agents/{agent}/inbox", json={"text": "Order 8?"})
            assert reply.status_code == 202, reply.text
            posted.append(reply.json()["messageId"])
        until(
            lambda: rows(url, "SELECT count(*) FROM inbox WHERE status = 'answered'")[0][0] == 7,
            60,
            lambda: rows(url, "SELECT message_id, status FROM inbox"),
            every_s=0.2,
        )
        for served in hosts.values():
            served.process.send_signal(signal.SIGTERM)
        for served in hosts.values():
            assert served.process.wait(30) == 0, served.log.read_text(encoding="utf-8")[-4000:]
    finally:
        for served in hosts.values():
            if served.process.poll() is None:
                served.process.send_signal(signal.SIGCONT)
            served.end()
    # The frozen host's commit after the thaw wrote nothing: its run kept its bundles and was
    # ended as crashed by the recovery on the host that took the agent.
    assert rows(
        url,
        "SELECT r.status, count(b.seq) FROM runs r LEFT JOIN bundles b ON b.run = r.run"
        f" WHERE r.run_id = '{first_run}' GROUP BY r.status",
    ) == [("crashed", first_bundles)]
    answered = Counter(
        m for (m,) in rows(url, "SELECT message_id FROM runs WHERE status = 'answered'")
    )
    assert sorted(answered) == sorted(posted) and set(answered.values()) == {1}
    lines = invocations.read_text(encoding="utf-8").splitlines()
    starts = [line for line in lines if line.startswith("start ")]
    assert len(starts) == len(set(starts)) == 7, lines  # the cut-off call was never run again
