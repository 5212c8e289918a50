"""Two real `afp serve` processes on one Postgres database share one agents file: the agents
spread over both, a message posted through either host's API is answered once by the agent's
holder, and when one host is SIGKILLed the other takes its agents after the lease TTL and
answers everything, no non-idempotent call run twice (docs/host.md#agents-spread-over-the-hosts,
docs/host.md#a-message-reaches-its-host, docs/storage.md#the-postgres-backend)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.host.crash_tools import agents_toml
from tests.store._postgres import FreshDatabase, admin

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
AGENTS = [f"p{n}" for n in range(1, 7)]


def _env(invocations: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("AFP_API_TOKEN", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(REPO), env.get("PYTHONPATH", "")])
    env["AFP_TEST_INVOCATIONS"] = str(invocations)
    env["AFP_TEST_TOOL_SLEEP_S"] = "0.02"
    return env


def _serve(agents: Path, url: str, host_id: str, env: dict[str, str], log: Path) -> Any:
    from tests.api.conftest import free_port

    port = free_port()
    args = ["serve", "--agents", str(agents), "--db", url, "--port", str(port)]
    with log.open("a", encoding="utf-8") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "afp_runtime.cli", *args, "--host-id", host_id],
            stdout=subprocess.DEVNULL,
            stderr=out,
            env=env,
            cwd=REPO,
        )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5)
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, log.read_text(encoding="utf-8")
        try:
            if client.get("/v1/health").status_code == 200:
                return process, client
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "afp serve did not come up"
        time.sleep(0.05)


def _rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    async def run() -> list[tuple[Any, ...]]:
        conn = await admin(url)
        try:
            return [tuple(r) for r in await conn.fetch(sql)]
        finally:
            await conn.close()

    return anyio.run(run)


@pytest.fixture(name="database")
def fixture_database() -> Iterator[FreshDatabase]:
    """A fresh database on the test server, dropped after the test."""
    database = FreshDatabase()
    anyio.run(database.create)
    yield database
    anyio.run(database.drop)


def _until_answered(url: str, count: int, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while _rows(url, "SELECT count(*) FROM inbox WHERE status = 'answered'")[0][0] < count:
        assert time.monotonic() < deadline, _rows(
            url, "SELECT message_id, status FROM inbox WHERE status <> 'answered'"
        )
        time.sleep(0.1)


@pytest.mark.timeout(120)
def test_two_hosts_share_the_agents_and_one_takes_over_when_the_other_dies(
    database: FreshDatabase, tmp_path: Path
) -> None:
    """Six agents over hosts a and b: at most three each while both live, every message posted
    through either API answered once, and after a SIGKILL of a the host b answers the rest."""
    agents = tmp_path / "agents.toml"
    text = agents_toml(
        AGENTS,
        special="p1",
        special_tool="crash_tools:RECORDED_STATUS",
        other_tool="crash_tools:SLEEPY_STATUS",
    )
    agents.write_text(text + "\n[host]\nleaseTtlS = 3.0\npollIntervalS = 5.0\n", encoding="utf-8")
    invocations, log = tmp_path / "invocations.txt", tmp_path / "serve.log"
    env = _env(invocations)
    url = database.url
    a, client_a = _serve(agents, url, "a", env, log)
    b, client_b = _serve(agents, url, "b", env, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            holders = Counter(h for (h,) in _rows(url, "SELECT claim_host FROM agents"))
            if set(holders) == {"a", "b"} and max(holders.values()) <= math.ceil(6 / 2):
                break
            assert time.monotonic() < deadline, holders
            time.sleep(0.2)
        # Posted through a's API for every agent, half of them held by b: with polling every
        # 5 s, only LISTEN/NOTIFY brings b's messages to it within the wait below.
        posted = []
        for i in range(12):
            agent = AGENTS[i % 6]
            reply = client_a.post(f"/v1/agents/{agent}/inbox", json={"text": f"Order {2000 + i}?"})
            assert reply.status_code == 202, reply.text
            posted.append(reply.json()["messageId"])
        _until_answered(url, 12, within_s=4)
        a.send_signal(signal.SIGKILL)
        a.wait(10)
        for i in range(12, 24):
            agent = AGENTS[i % 6]
            reply = client_b.post(f"/v1/agents/{agent}/inbox", json={"text": f"Order {2000 + i}?"})
            assert reply.status_code == 202, reply.text
            posted.append(reply.json()["messageId"])
        _until_answered(url, 24, within_s=40)
        holders = Counter(h for (h,) in _rows(url, "SELECT claim_host FROM agents"))
        assert holders == {"b": 6}
        b.send_signal(signal.SIGTERM)
        assert b.wait(30) == 0, log.read_text(encoding="utf-8")
    finally:
        for process in (a, b):
            if process.poll() is None:
                process.kill()
                process.wait(10)
        client_a.close()
        client_b.close()
    answered = _rows(
        url, "SELECT message_id, count(*) FROM runs WHERE status = 'answered' GROUP BY message_id"
    )
    assert sorted(m for m, _ in answered) == sorted(posted)
    assert all(n == 1 for _, n in answered), answered
    calls = Counter(line.split()[1] for line in invocations.read_text().splitlines())
    assert calls and max(calls.values()) == 1, calls
