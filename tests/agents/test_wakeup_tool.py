"""The built-in ``scheduleWakeup`` tool (docs/schedules.md#the-schedulewakeup-tool) through real
SQLite runs: offered only when switched on, a call sets a durable ``model`` schedule that
delivers as ``schedule:NAME``, files a ``schedule`` ledger row, is refused by name past its
bounds, and a call run again after a crash sets no second schedule."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

import afp_runtime as afp
from afp_runtime.agents import build_definition, load_config
from afp_runtime.agents.wakeup import WAKEUP_LIMIT
from afp_runtime.errors import AgentDefinitionError
from afp_runtime.messages import Message, ModelRequest, ToolCall
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite.schedules import Schedules
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from tests.api.conftest import Api, settle, until

DAY = 86_400_000
BERLIN = afp.TimeConfig(zone="Europe/Berlin")


def tool_texts(messages: Sequence[Message]) -> str:
    return " | ".join(m.content for m in messages if m.role == "tool")


def wakeup_then_echo(*calls: Any) -> ScriptedModel:
    """A model that makes ``calls`` on a user message and echoes the tool results after; a
    delivered wake-up is answered with its own text."""

    def script(request: ModelRequest, number: int) -> afp.ModelReply:
        # The time layer adds its clock note as a request line: read the turn's own message.
        users = [
            n
            for n, m in enumerate(request.messages)
            if m.role == "user" and not m.content.startswith("[Clock note")
        ]
        asked = request.messages[users[-1]]
        if any(m.role == "tool" for m in request.messages[users[-1] :]):
            return answer(f"Done: {tool_texts(request.messages[users[-1] :])}")
        if asked.content.startswith("Check"):
            return answer(f"Woken: {asked.content}")
        return tool_reply(*calls)

    return ScriptedModel(script, model="m")


def test_the_switch_is_off_by_default_and_on_in_a_file_and_in_python(tmp_path: Path) -> None:
    """``scheduleWakeup = true`` and ``schedule_wakeup=True`` offer the tool (and change the
    fingerprint); without them the agent has no such tool; a tool of that name clashes."""
    text = '[[agents]]\nid = "ops"\nmodel = {provider = "scripted", model = "m"}\n'
    model = ScriptedModel([], model="m")
    off = build_definition(load_config(tmp_path / "a.toml", text).agents[0], model=model)
    on_file = build_definition(
        load_config(tmp_path / "b.toml", text + "scheduleWakeup = true\n").agents[0], model=model
    )
    on_python = afp.Agent("ops", model, schedule_wakeup=True)
    assert "scheduleWakeup" not in off.tools_by_name
    assert "scheduleWakeup" in on_file.tools_by_name
    assert on_file.fingerprint() == on_python.fingerprint() != off.fingerprint()

    @afp.tool
    def scheduleWakeup(text: str) -> str:
        """Not the built-in."""
        return text

    with pytest.raises(AgentDefinitionError, match="scheduleWakeup"):
        afp.Agent("ops", model, tools=[scheduleWakeup], schedule_wakeup=True)
    with pytest.raises(AgentDefinitionError) as caught:
        afp.Agent("ops", model, schedule_wakeup="yes")  # type: ignore[arg-type]
    assert caught.value.context["field"] == "scheduleWakeup"


async def test_a_wakeup_is_set_filed_and_delivered(tmp_path: Path) -> None:
    """ "in 3 days" sets a ``model`` schedule named from the call id, tells the model the local
    and UTC instant, files a ``schedule`` row, and three days on ``work()`` delivers its text
    as ``schedule:NAME``."""
    clock = FakeClock()
    wakeup = call("c1", "scheduleWakeup", text="Check the parcel", **{"in": "3 days"})
    agent = afp.Agent("ops", wakeup_then_echo(wakeup), time=BERLIN, schedule_wakeup=True)
    async with afp.open(tmp_path / "afp.db", clock=clock) as store:
        start = clock.now_ms()
        set_result = await store.run(agent, "Remind me about the parcel in 3 days")
        [view] = await store.schedules(agent)
        rows = await store.findings(agent, kind="schedule")
        clock.advance(3 * 86_400 + 60)
        [woken] = await store.work(agent)
    assert (view.name, view.source, view.next_due_ms) == ("wakeup-c1", "model", start + 3 * DAY)
    assert set_result.answer is not None
    assert "Set: at " in set_result.answer and "Europe/Berlin" in set_result.answer
    assert "UTC) you will receive your text as a message from schedule:wakeup-c1" in (
        set_result.answer
    )
    assert rows == [
        {
            "kind": "schedule",
            "turn": 1,
            "toolCallId": "c1",
            "name": "wakeup-c1",
            "text": "Check the parcel",
            "dueMs": start + 3 * DAY,
            "zone": "Europe/Berlin",
        }
    ]
    assert (woken.status, woken.answer) == ("answered", "Woken: Check the parcel")


async def test_wakeups_past_the_bounds_are_refused_by_name(tmp_path: Path) -> None:
    """More than a year ahead is refused naming ``in``; past ``WAKEUP_LIMIT`` pending model
    schedules a new name is refused, while setting a held name again replaces it."""
    calls = [
        call(f"c{n}", "scheduleWakeup", text=f"Check {n}", **{"in": f"{n + 1} hours"})
        for n in range(WAKEUP_LIMIT + 1)
    ]
    far = call("far", "scheduleWakeup", text="Check far", **{"in": "400 days"})
    again = ToolCall(
        id="again",
        name="scheduleWakeup",
        args={"text": "Check again", "name": "wakeup-c0", "at": "2025-07-01T09:00"},
    )
    agent = afp.Agent("ops", wakeup_then_echo(*calls, far, again), schedule_wakeup=True)
    async with afp.open(tmp_path / "afp.db", clock=FakeClock()) as store:
        result = await store.run(agent, "Set many")
        held = {v.name: v for v in await store.schedules(agent)}
    assert result.answer is not None
    parts = result.answer.removeprefix("Done: ").split(" | ")
    assert all(p.startswith("Set: ") for p in parts[:WAKEUP_LIMIT])
    assert "failed with InvalidValue: you hold 20 wake-ups" in parts[WAKEUP_LIMIT]
    assert "failed with InvalidValue: in: " in parts[WAKEUP_LIMIT + 1]
    assert "more than a year ahead" in parts[WAKEUP_LIMIT + 1]
    assert parts[WAKEUP_LIMIT + 2].startswith("Set: at 2025-07-01 09:00 UTC")
    assert len(held) == WAKEUP_LIMIT and held["wakeup-c0"].schedule.text == "Check again"


async def test_a_call_run_again_after_a_crash_sets_no_second_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn is cut right after the schedule was written, before the call's result was
    committed; the next ``work()`` runs the call again, which replaces its own schedule: one
    schedule, one ledger row."""
    written = anyio.Event()
    real_put = Schedules.put_schedule
    cut = {"on": True}

    async def put_then_hang(self: Any, *args: Any, **kwargs: Any) -> Any:
        row = await real_put(self, *args, **kwargs)
        if cut["on"]:
            written.set()
            await anyio.sleep_forever()
        return row

    monkeypatch.setattr(Schedules, "put_schedule", put_then_hang)
    wakeup = call("c1", "scheduleWakeup", text="Check the oven", **{"in": "2 hours"})
    agent = afp.Agent("ops", wakeup_then_echo(wakeup), schedule_wakeup=True)
    path = tmp_path / "afp.db"
    clock = FakeClock()
    async with afp.open(path, clock=clock) as store, anyio.create_task_group() as group:
        group.start_soon(store.run, agent, "Oven in two hours")
        await written.wait()
        group.cancel_scope.cancel()
    cut["on"] = False
    start = clock.now_ms()
    clock.advance(600)  # a due-based name would differ on the call's second run
    async with afp.open(path, clock=clock) as store:
        [result] = await store.work(agent)
        listed = await store.schedules(agent)
        rows = await store.findings(agent, kind="schedule")
        runs = [run.kind for run in await store.runs(agent)]
    assert result.status == "answered" and runs == ["initial", "recovery"]
    assert [(v.name, v.source) for v in listed] == [("wakeup-c1", "model")]
    assert listed[0].next_due_ms == start + 600_000 + 2 * 3_600_000  # set again, replaced
    assert [row["toolCallId"] for row in rows] == ["c1"]


async def test_a_host_runs_the_tool_and_delivers_the_wakeup(tmp_path: Path) -> None:
    """Under a host (its store, its schedule runner): the model's wake-up is set in the host's
    store and delivered on the fake clock as a message from ``schedule:wakeup-w1``, which the
    worker answers."""
    api = Api(tmp_path / "afp.db")
    wakeup = call("w1", "scheduleWakeup", text="Check the delivery", **{"in": "2 hours"})
    definition = afp.Agent("ops", wakeup_then_echo(wakeup), schedule_wakeup=True)
    async with api.host(definition) as host:
        await host.post("ops", "Remind me in two hours")
        await settle(host)
        [view] = await afp.app.list_schedules(host.reader, "ops")
        api.clock.advance(2 * 3600 + 60)

        async def woken() -> bool:
            return any(r.sender == "schedule:wakeup-w1" for r in await host.reader.inbox("ops"))

        await until(woken)
        await settle(host)
        rows = {r.sender: r for r in await host.reader.inbox("ops")}
    assert (view.name, view.source) == ("wakeup-w1", "model")
    woke = rows["schedule:wakeup-w1"]
    assert (woke.text, woke.status) == ("Check the delivery", "answered")
