"""Honest statuses through real processes (docs/host.md#status-values): an ``afp run`` killed
with SIGKILL in the middle of a turn leaves the agent ``interrupted`` (no host holds it) with
its definition read from the store and what continues it; ``afp run`` finishes it (``idle``); a
turn a live host holds stays ``running``; the clock a reader passes decides whether a claim's
lease has run out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from afp_runtime.api.constants import INTERRUPTED_CONTINUES
from afp_runtime.api.views import agent_view, shown_status
from afp_runtime.store import open_store
from tests.host.processes import Served, until
from tests.store._postgres import FreshDatabase

REPO = Path(__file__).resolve().parent.parent
HOST_TESTS = REPO / "tests" / "host"
ASK = "Where is order 4520?"

AGENT = """
[[agents]]
id = "{agent_id}"
systemPrompt = "You are the order desk. Look orders up with your tools before answering."
maxIterations = 6
durability = "sync"
time = {{zone = "Europe/Berlin"}}

[agents.model]
provider = "scripted"
model = "demo-scripted"
script = "afp_runtime.demo:demo_script"

[agents.window]
kind = "summarizeOldest"
thresholdTokens = 4000
keepRecentTurns = 3
model = "extractive/1"

[agents.window.summarizer]
provider = "extractive"
model = "extractive/1"

[[agents.tools]]
ref = "afp_runtime.demo:LOOKUP_ORDER"

[[agents.tools]]
ref = "crash_tools:SLOW_STATUS"
"""


@pytest.fixture(name="target", params=["sqlite", "postgres"])
def fixture_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store on each backend: a SQLite file, or a fresh database on the suite's server."""
    if request.param == "sqlite":
        yield str(tmp_path / "afp.db")
        return
    database = FreshDatabase()
    anyio.run(database.create)
    try:
        yield database.url
    finally:
        anyio.run(database.drop)


def _config(tmp_path: Path, agent_id: str = "desk") -> Path:
    path = tmp_path / f"{agent_id}.toml"
    path.write_text(AGENT.format(agent_id=agent_id), encoding="utf-8")
    return path


def _env(tmp_path: Path, *, tool_sleep_s: float) -> dict[str, str]:
    """``afp``'s environment: the crash tools importable, the slow tool noting its start in
    ``invocations.txt`` and sleeping ``tool_sleep_s``, no API token."""
    env = dict(os.environ)
    env.pop("AFP_API_TOKEN", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HOST_TESTS), str(REPO), env.get("PYTHONPATH", "")])
    env["AFP_TEST_INVOCATIONS"] = str(tmp_path / "invocations.txt")
    env["AFP_TEST_TOOL_SLEEP_S"] = str(tool_sleep_s)
    return env


def _afp(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _json(env: dict[str, str], *args: str) -> Any:
    return json.loads(_afp(env, *args, "--json").stdout)


def _started(tmp_path: Path) -> bool:
    noted = tmp_path / "invocations.txt"
    return noted.exists() and noted.read_text(encoding="utf-8").startswith("start ")


def _kill_mid_tool(tmp_path: Path, config: Path, target: str) -> None:
    """``afp run`` the message, SIGKILLed while its slow tool runs: the turn stays running."""
    env = _env(tmp_path, tool_sleep_s=600)
    args = ["run", str(config), "--db", target, "--message", ASK]
    log = (tmp_path / "run.log").open("w", encoding="utf-8")
    with log:
        process = subprocess.Popen(
            [sys.executable, "-m", "afp_runtime.cli", *args],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
            cwd=REPO,
        )
        try:
            until(lambda: _started(tmp_path), 60, lambda: (tmp_path / "run.log").read_text())
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(10)


@pytest.mark.timeout(180)
def test_a_killed_run_reads_interrupted_until_afp_run_finishes_it(
    target: str, tmp_path: Path
) -> None:
    """After a SIGKILL of ``afp run`` mid-turn, ``afp agent`` and ``afp agents`` read
    ``interrupted`` with the definition from the store and the continuation; so does the API
    of a host that does not run the agent; ``afp run`` then finishes the turn: ``idle``."""
    config = _config(tmp_path)
    _kill_mid_tool(tmp_path, config, target)
    env = _env(tmp_path, tool_sleep_s=0.01)

    view = _json(env, "agent", "desk", "--db", target)
    assert view["status"] == "interrupted", view
    assert (view["model"], view["provider"]) == ("demo-scripted", "scripted")
    assert (view["windowStrategy"], view["timeZone"]) == ("summarize-oldest", "Europe/Berlin")
    assert view["continuesWith"] == INTERRUPTED_CONTINUES and view["hosted"] is False
    assert view["activeRun"] is not None
    shown = _afp(env, "agent", "desk", "--db", target).stdout
    assert f"interrupted: {INTERRUPTED_CONTINUES}" in shown
    assert "demo-scripted" in shown
    [row] = _json(env, "agents", "--db", target)
    assert row["status"] == "interrupted" and row["definition"]["model"] == "demo-scripted"
    assert row["definition"]["toolNames"] == ["lookup_order", "shipping_status"]
    assert "interrupted" in _afp(env, "agents", "--db", target).stdout

    # A host that runs another agent on the same store shows it so too.
    other = _config(tmp_path, "other")
    host = Served(other, target, "h-other", env, tmp_path / "serve.log").wait_ready()
    try:
        listed = host.client.get("/v1/agents").json()["items"]
        seen = {item["agentId"]: item for item in listed}
        assert seen["desk"]["status"] == "interrupted", seen
        assert seen["desk"]["model"] == "demo-scripted"
        assert seen["desk"]["continuesWith"] == INTERRUPTED_CONTINUES
        assert seen["other"]["status"] == "idle" and seen["other"]["continuesWith"] is None
    finally:
        host.end()

    finished = _json(env, "run", str(config), "--db", target)
    assert [outcome["kind"] for outcome in finished] == ["recovery"], finished
    view = _json(env, "agent", "desk", "--db", target)
    assert (view["status"], view["continuesWith"], view["model"]) == ("idle", None, "demo-scripted")


@pytest.mark.timeout(180)
def test_a_running_turn_a_live_host_holds_reads_running(tmp_path: Path) -> None:
    """A host in the middle of the agent's turn holds it: ``afp agent`` and the host's API
    read ``running``; once the host is killed its claim holds until its lease runs out on the
    reader's clock, then the same row reads ``interrupted``."""
    config = _config(tmp_path)
    db = str(tmp_path / "afp.db")
    env = _env(tmp_path, tool_sleep_s=600)
    host = Served(config, db, "h-desk", env, tmp_path / "serve.log").wait_ready()
    try:
        posted = host.client.post("/v1/agents/desk/inbox", json={"text": ASK})
        assert posted.status_code == 202, posted.text
        until(lambda: _started(tmp_path), 60, lambda: host.log.read_text())
        served = host.client.get("/v1/agents/desk").json()
        assert (served["status"], served["hosted"], served["continuesWith"]) == (
            "running",
            True,
            None,
        )
        view = _json(env, "agent", "desk", "--db", db)
        assert (view["status"], view["continuesWith"]) == ("running", None), view
        assert view["model"] == "demo-scripted"
    finally:
        host.end()

    async def read() -> tuple[str, str, str]:
        store = await open_store(db, read_only=True)
        try:
            [row] = await store.agents()
            claim = await store.agent_claim("desk", now_ms=0)
            assert claim is not None and claim.host_id == "h-desk"
            held = await store.live_hosts(now_ms=0)
            assert held == ["h-desk"]
            late = 10**15  # far past any lease: the clock is the reader's
            view = await agent_view(store, row, None, now_ms=late)
            return (
                await shown_status(store, row, now_ms=0, live=None),
                await shown_status(store, row, now_ms=late, live=None),
                view.status,
            )
        finally:
            await store.aclose()

    assert anyio.run(read) == ("running", "interrupted", "interrupted")
