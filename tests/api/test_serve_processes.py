"""``afp serve --processes 2`` as real processes on SQLite and on Postgres: both children hold
agents under their own host ids, health and the API answer from the one port, a post to every
agent is answered whichever child accepted it, a SIGKILLed child is started again and its agents
answered, SIGTERM stops everything with exit 0, and a killed parent leaves no child serving
(docs/host.md#several-host-processes)."""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from tests.host.crash_tools import agents_toml
from tests.host.processes import rows, until
from tests.store._postgres import FreshDatabase

from .conftest import BUSY, free_port

REPO = Path(__file__).resolve().parents[2]
AGENTS = [f"s{n}" for n in range(4)]


@pytest.fixture(name="store_url", params=["sqlite", "postgres"])
def fixture_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite file, or a fresh database on the suite's Postgres server."""
    if request.param == "sqlite":
        yield str(tmp_path / "afp.db")
        return
    database = FreshDatabase()
    anyio.run(database.create)
    yield database.url
    anyio.run(database.drop)


def _holders(url: str) -> Counter[str]:
    sql = "SELECT claim_host FROM agents"
    if url.startswith("postgresql://"):
        return Counter(h for (h,) in rows(url, sql))
    with sqlite3.connect(url) as conn:
        return Counter(h for (h,) in conn.execute(sql).fetchall())


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(parent: int) -> dict[str, int]:
    """The live children of ``parent`` by their host id (read from /proc)."""
    found: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == parent and fields[0] != "Z" and b"--host-id" in words:
            found[words[words.index(b"--host-id") + 1].decode()] = int(entry.name)
    return found


class Parent:
    """``afp serve --processes 2 --host-id t`` on a fresh port, stderr to ``log``."""

    def __init__(self, tmp_path: Path, url: str) -> None:
        agents = tmp_path / "agents.toml"
        text = agents_toml(
            AGENTS, special=AGENTS[0], special_tool="afp_runtime.demo:SHIPPING_STATUS"
        )
        agents.write_text(text + "\n[host]\nleaseTtlS = 3.0\n", encoding="utf-8")
        self.log = tmp_path / "serve.log"
        self.port = free_port()
        env = dict(os.environ)
        env.pop("AFP_API_TOKEN", None)
        args = ["--agents", str(agents), "--db", url, "--port", str(self.port)]
        args += ["--host-id", "t", "--processes", "2"]
        with self.log.open("a", encoding="utf-8") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "afp_runtime.cli", "serve", *args],
                stdout=subprocess.DEVNULL,
                stderr=out,
                env=env,
                cwd=REPO,
            )
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=5)

    def why(self) -> str:
        return self.log.read_text(encoding="utf-8")[-4000:]

    def healthy(self) -> bool:
        assert self.process.poll() is None, self.why()
        try:
            return self.client.get("/v1/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def ask_everyone(self, order: int) -> None:
        """Post to every agent through the one port and wait for every answer."""
        paths = []
        for agent in AGENTS:
            posted = self.client.post(
                f"/v1/agents/{agent}/inbox", json={"text": f"Where is order {order}?"}
            )
            assert posted.status_code == 202, posted.text
            paths.append(f"/v1/agents/{agent}/inbox/{posted.json()['messageId']}")
        for path in paths:
            until(lambda p=path: self.client.get(p).json()["status"] not in BUSY, 60, self.why)
            one = self.client.get(path).json()
            assert one["status"] == "answered" and str(order) in one["answer"], one

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self.client.close()


@pytest.mark.timeout(120)
def test_two_processes_share_the_agents_and_a_killed_one_is_restarted(
    tmp_path: Path, store_url: str
) -> None:
    """Both children hold agents (t-0 and t-1, at most two each), every agent answers through
    the one port, a SIGKILLed child comes back under its host id and its agents answer again,
    and SIGTERM ends the parent and both children with exit 0."""
    parent = Parent(tmp_path, store_url)
    try:
        until(parent.healthy, 30, parent.why)

        def spread() -> bool:
            holders = _holders(store_url)
            return set(holders) == {"t-0", "t-1"} and max(holders.values()) <= math.ceil(4 / 2)

        until(spread, 30, lambda: (_holders(store_url), parent.why()), every_s=0.2)
        parent.ask_everyone(1042)
        before = _children(parent.process.pid)
        assert set(before) == {"t-0", "t-1"}
        os.kill(before["t-1"], signal.SIGKILL)
        until(
            lambda: _children(parent.process.pid).get("t-1") not in (None, before["t-1"]),
            30,
            parent.why,
        )
        parent.ask_everyone(1043)
        until(spread, 30, lambda: (_holders(store_url), parent.why()), every_s=0.2)
        children = _children(parent.process.pid)
        assert children["t-0"] == before["t-0"]
        parent.process.send_signal(signal.SIGTERM)
        assert parent.process.wait(60) == 0, parent.why()
    finally:
        parent.end()
    log = parent.log.read_text(encoding="utf-8")
    assert "afp: process 1 exited with -9; starting it again" in log
    assert log.count("host id t-1") == 2 and log.count("host id t-0") == 1, log
    assert not any(_alive(pid) for pid in children.values())


@pytest.mark.timeout(60)
def test_the_children_stop_when_their_parent_is_killed(tmp_path: Path) -> None:
    """A SIGKILLed parent cannot pass a stop on: its children see their stdin end and stop."""
    parent = Parent(tmp_path, str(tmp_path / "afp.db"))
    try:
        until(parent.healthy, 30, parent.why)
        until(lambda: len(_children(parent.process.pid)) == 2, 30, parent.why)
        children = _children(parent.process.pid)
        parent.process.kill()
        parent.process.wait(10)
        until(
            lambda: not any(_alive(pid) for pid in children.values()),
            30,
            parent.why,
        )
    finally:
        parent.end()


def test_processes_out_of_range_are_refused(tmp_path: Path) -> None:
    """``--processes 0`` exits 2 naming the option, before anything listens."""
    env = dict(os.environ)
    env.pop("AFP_API_TOKEN", None)
    args = ["--agents", "configs/demo.toml", "--db", str(tmp_path / "afp.db"), "--processes", "0"]
    done = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 2 and "--processes must be from 1 to 64" in done.stderr
