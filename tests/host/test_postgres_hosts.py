"""Two real `afp serve` processes on one Postgres database share one agents file: the agents
spread over both, a message posted through either host's API is answered once by the agent's
holder, and when one host is SIGKILLed the other takes its agents after the lease TTL and
answers everything, no non-idempotent call run twice (docs/host.md#agents-spread-over-the-hosts,
docs/host.md#a-message-reaches-its-host, docs/storage.md#the-postgres-backend)."""

from __future__ import annotations

import math
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.host.crash_tools import agents_toml
from tests.host.processes import rows, serve, serve_env, until_answered
from tests.store._postgres import FreshDatabase

AGENTS = [f"p{n}" for n in range(1, 7)]


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
    env = serve_env(invocations)
    url = database.url
    hosts = [serve(agents, url, "a", env, log)]
    try:
        hosts.append(serve(agents, url, "b", env, log))
        (a, client_a), (b, client_b) = ((h.process, h.client) for h in hosts)
        deadline = time.monotonic() + 30
        while True:
            holders = Counter(h for (h,) in rows(url, "SELECT claim_host FROM agents"))
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
        until_answered(url, 12, within_s=4)
        a.send_signal(signal.SIGKILL)
        a.wait(10)
        for i in range(12, 24):
            agent = AGENTS[i % 6]
            reply = client_b.post(f"/v1/agents/{agent}/inbox", json={"text": f"Order {2000 + i}?"})
            assert reply.status_code == 202, reply.text
            posted.append(reply.json()["messageId"])
        until_answered(url, 24, within_s=40)
        holders = Counter(h for (h,) in rows(url, "SELECT claim_host FROM agents"))
        assert holders == {"b": 6}
        b.send_signal(signal.SIGTERM)
        assert b.wait(30) == 0, log.read_text(encoding="utf-8")
    finally:
        for host in hosts:
            host.end()
    answered = rows(
        url, "SELECT message_id, count(*) FROM runs WHERE status = 'answered' GROUP BY message_id"
    )
    assert sorted(m for m, _ in answered) == sorted(posted)
    assert all(n == 1 for _, n in answered), answered
    calls = Counter(line.split()[1] for line in invocations.read_text().splitlines())
    assert calls and max(calls.values()) == 1, calls
