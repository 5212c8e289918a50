"""Graceful shutdown (docs/host.md#graceful-shutdown): stop admitting, let running stages finish
within the grace on the injected clock, cancel the rest, close adapters once; a real `afp serve`
exits 0 on SIGTERM while a tool sleeps and leaves an intact, fully written file."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from afp_runtime.host import Host
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from tests.api.conftest import Api, agent, error_of, settle, until, watch_of
from tests.host.crash_tools import agents_toml

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


class SlowTool:
    """A non-idempotent tool that sleeps ``seconds`` on the call's clock and counts its runs."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = 0
        self.finished = 0
        self.running = anyio.Event()

    async def __call__(self, args: Mapping[str, Any], ctx: ToolContext) -> str:
        self.started += 1
        self.running.set()
        await ctx.clock.sleep(self.seconds)
        self.finished += 1
        return "slept"

    def tool(self) -> Tool:
        return Tool("slow", "sleeps", {"type": "object"}, self, idempotent=False)


def _model() -> ScriptedModel:
    return ScriptedModel([tool_reply(call("c1", "slow")), answer("done")], model="mock")


async def _stop_while_the_tool_runs(api: Api, host: Host, slow: SlowTool, grace_s: float) -> None:
    await host.post("ops", "go")
    with anyio.fail_after(10):
        await slow.running.wait()
    host.stop(grace_s)
    await anyio.wait_all_tasks_blocked()  # the grace deadline is now on the clock


async def test_a_stage_that_finishes_within_the_grace_commits_normally(api: Api) -> None:
    """A tool that ends inside the grace completes its turn; adapters are closed once."""
    slow, model = SlowTool(10.0), _model()
    async with api.host(agent(model, tools=[slow.tool()]), shutdown_grace_s=30.0) as host:
        await _stop_while_the_tool_runs(api, host, slow, 30.0)
        api.clock.advance(10.0)
        await until(lambda: not watch_of(host).working("ops"))
    runs = await _runs(api)
    assert host.state == "stopped" and model.closed == 1
    assert slow.finished == 1 and model.calls == 2
    assert runs == [("initial", "answered")]
    assert await _inbox_statuses(api) == ["answered"]


async def test_the_grace_deadline_cancels_and_the_next_start_settles_the_call(api: Api) -> None:
    """Past the grace the tool is cancelled, nothing partial is committed, and the next host
    answers the interrupted non-idempotent call with a note instead of running it again."""
    slow, model = SlowTool(100.0), _model()
    async with api.host(agent(model, tools=[slow.tool()])) as host:
        await _stop_while_the_tool_runs(api, host, slow, 5.0)
        api.clock.advance(5.0)
    assert slow.started == 1 and slow.finished == 0 and model.closed == 1
    assert await _inbox_statuses(api) == ["running"]
    assert await _integrity(api) == ["ok"]
    again = ScriptedModel([answer("recovered")], model="mock")
    async with api.host(agent(again, tools=[slow.tool()])) as host:
        await settle(host)
    assert slow.started == 1  # not re-run: it is not idempotent and may have run
    # Case 26: the cancelled run ends `cancelled`; its turn stayed `running` for the recovery.
    assert await _runs(api) == [("initial", "cancelled"), ("recovery", "answered")]
    assert await _inbox_statuses(api) == ["answered"]
    tool_results = [m for m in again.requests[0].messages if m.role == "tool"]
    assert len(tool_results) == 1 and "slept" not in tool_results[0].content


async def test_a_second_stop_skips_the_grace(api: Api) -> None:
    """A second stop (a second signal) cancels the running work without waiting the grace."""
    slow, model = SlowTool(100.0), _model()
    started = api.clock.now_ms()
    async with api.host(agent(model, tools=[slow.tool()])) as host:
        await _stop_while_the_tool_runs(api, host, slow, 30.0)
        host.stop()
    assert api.clock.now_ms() == started and slow.finished == 0 and model.closed == 1


async def test_writes_answer_503_while_the_host_stops(api: Api) -> None:
    """During the grace the API refuses writes with 503 shutting-down and health says so."""
    slow, model = SlowTool(10.0), _model()
    definition = agent(model, tools=[slow.tool()])
    async with api.running(definition) as (host, client):
        await _stop_while_the_tool_runs(api, host, slow, 30.0)
        refused = await client.post("/v1/agents/ops/inbox", json={"text": "late"})
        health = await client.get("/v1/health")
        api.clock.advance(10.0)
    assert refused.status_code == 503
    assert error_of(refused)["code"] == "shutting-down"
    assert health.json()["status"] == "shutting-down"
    assert await _inbox_statuses(api) == ["answered"]


def _serve_then_signal(
    tmp_path: Path, *, sleep_s: float, serve_args: list[str], signals: int
) -> tuple[int, str, float, Path, Path]:
    """Run `afp serve`, post a message whose tool sleeps ``sleep_s``, send SIGTERM ``signals``
    times once the tool started; returns (exit code, stderr, seconds to exit, db, calls file)."""
    db, invocations, agents = tmp_path / "afp.db", tmp_path / "calls.txt", tmp_path / "a.toml"
    agents.write_text(
        agents_toml(["a1"], special="a1", special_tool="crash_tools:SLOW_STATUS"),
        encoding="utf-8",
    )
    env = dict(os.environ)
    env.pop("AFP_API_TOKEN", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(REPO), env.get("PYTHONPATH", "")])
    env["AFP_TEST_INVOCATIONS"] = str(invocations)
    env["AFP_TEST_TOOL_SLEEP_S"] = str(sleep_s)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    args = ["serve", "--agents", str(agents), "--db", str(db), "--port", str(port), *serve_args]
    process = subprocess.Popen(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, process.communicate()[1]
                try:
                    if client.get("/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "afp serve did not come up"
                time.sleep(0.02)
            posted = client.post("/v1/agents/a1/inbox", json={"text": "Where is order 77?"})
            assert posted.status_code == 202, posted.text
        while not (invocations.exists() and invocations.read_text(encoding="utf-8")):
            assert time.monotonic() < deadline, "the tool never started"
            time.sleep(0.01)
        signalled = time.monotonic()
        for _ in range(signals):
            process.send_signal(signal.SIGTERM)
            time.sleep(0.2)
        _, stderr = process.communicate(timeout=60)
        took = time.monotonic() - signalled
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, stderr, took, db, invocations


def test_sigterm_while_a_tool_sleeps_exits_0_with_a_clean_file(tmp_path: Path) -> None:
    """SIGTERM to `afp serve` while a tool sleeps lets the tool finish, exits 0 well within the
    grace, and leaves `PRAGMA integrity_check` ok with every run and journal row complete."""
    code, stderr, took, db, invocations = _serve_then_signal(
        tmp_path, sleep_s=1.5, serve_args=[], signals=1
    )
    assert code == 0, stderr
    assert 0.5 < took < 30  # it waited for the tool, well within the 30 s grace
    lines = invocations.read_text(encoding="utf-8").splitlines()
    assert [line.split()[0] for line in lines] == ["start", "end"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT status FROM inbox").fetchall() == [("answered",)]
        assert conn.execute("SELECT kind, status FROM runs").fetchall() == [("initial", "answered")]
        marker = conn.execute("SELECT value FROM meta WHERE key='clean_shutdown'").fetchall()
    assert marker == [("1",)]


@pytest.mark.parametrize(
    ("serve_args", "signals"),
    [(["--grace", "0.5"], 1), (["--grace", "60"], 2)],
    ids=["grace-over", "second-signal"],
)
def test_past_the_grace_the_run_is_cancelled_and_exit_is_0(
    tmp_path: Path, serve_args: list[str], signals: int
) -> None:
    """A tool longer than the grace (or a second SIGTERM) is cancelled: exit 0 long before the
    tool would end, the run ends `cancelled`, the turn stays `running` for the next start, and
    the file is intact with its clean-shutdown marker."""
    code, stderr, took, db, invocations = _serve_then_signal(
        tmp_path, sleep_s=30.0, serve_args=serve_args, signals=signals
    )
    assert code == 0, stderr
    assert took < 20
    lines = invocations.read_text(encoding="utf-8").splitlines()
    assert [line.split()[0] for line in lines] == ["start"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT status FROM inbox").fetchall() == [("running",)]
        assert conn.execute("SELECT kind, status FROM runs").fetchall() == [
            ("initial", "cancelled")
        ]
        marker = conn.execute("SELECT value FROM meta WHERE key='clean_shutdown'").fetchall()
    assert marker == [("1",)]


async def _runs(api: Api) -> list[tuple[str, str]]:
    store = await _open(api)
    try:
        return [(r.kind, r.status) for r in await store.runs("ops")]
    finally:
        await store.aclose()


async def _inbox_statuses(api: Api) -> list[str]:
    store = await _open(api)
    try:
        return [r.status for r in await store.inbox("ops")]
    finally:
        await store.aclose()


async def _open(api: Api) -> SqliteStore:
    return await SqliteStore.open(api.path, read_only=True)


async def _integrity(api: Api) -> list[str]:
    store = await _open(api)
    try:
        return await store.integrity_check()
    finally:
        await store.aclose()


async def test_no_new_turn_starts_during_the_grace(api: Api) -> None:
    """The turn in progress may finish within the grace, but the agent's next queued message
    waits for the next start (docs/host.md#graceful-shutdown step 1)."""
    slow = SlowTool(10.0)
    model = ScriptedModel([tool_reply(call("c1", "slow")), answer("one"), answer("two")])
    async with api.host(agent(model, tools=[slow.tool()]), shutdown_grace_s=30.0) as host:
        await host.post("ops", "go")
        await host.post("ops", "and again")
        with anyio.fail_after(10):
            await slow.running.wait()
        host.stop()
        await anyio.wait_all_tasks_blocked()
        api.clock.advance(10.0)
        await until(lambda: not watch_of(host).working("ops"))
    assert await _inbox_statuses(api) == ["answered", "queued"]
    assert model.calls == 2
