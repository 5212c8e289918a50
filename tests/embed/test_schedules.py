"""``afp.Store``'s schedules (docs/python.md#schedules): listed with their marks, set, paused,
resumed and removed through the app layer; declared ones synced and due ones delivered at
``work()`` on the store's clock."""

from __future__ import annotations

from pathlib import Path

import pytest

import afp_runtime as afp
from afp_runtime.errors import InvalidValue, NotFound
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import FakeClock, answer

HOUR = 3_600_000


async def test_work_delivers_due_schedules_on_the_stores_clock(tmp_path: Path) -> None:
    """A declared schedule is synced at ``work()``; once its due instants pass on the store's
    clock, ``work()`` delivers them (the default catch-up: the latest missed one) and answers
    them; a schedule set through the store is listed with its source and delivered too."""
    clock = FakeClock()
    model = ScriptedModel([answer(f"ok {n}") for n in range(5)], model="m")
    tick = afp.schedule("tick", "Tick", every="1 hours")
    agent = afp.Agent("ops", model, schedules=[tick])
    async with afp.open(tmp_path / "afp.db", clock=clock) as store:
        assert await store.work(agent) == []
        start = clock.now_ms()
        clock.advance(3 * 3600 + 600)  # all three due instants missed
        results = await store.work(agent)
        view = await store.set_schedule(agent, afp.schedule("once", "Once", at="2030-01-01T00:00Z"))
        listed = {v.name: v for v in await store.schedules("ops")}
    assert [r.status for r in results] == ["answered"]
    assert listed["tick"].last_due_ms == start + 3 * HOUR
    assert listed["tick"].next_due_ms == start + 4 * HOUR
    assert (listed["tick"].source, listed["tick"].delivered) == ("declared", 1)
    assert view.source == "python" and listed["once"].next_due_ms == 1_893_456_000_000


async def test_schedules_are_paused_resumed_and_removed_by_name(tmp_path: Path) -> None:
    """Pause clears the next due instant and resume sets it from now; removing or pausing a
    schedule that does not exist names the agent's schedules; an unknown agent names the
    agents; a wrong schedule names its field."""
    clock = FakeClock()
    agent = afp.Agent("ops", ScriptedModel([], model="m"))
    async with afp.open(tmp_path / "afp.db", clock=clock) as store:
        await store.work(agent)
        await store.set_schedule(agent, {"name": "tick", "text": "Tick", "every": "2 hours"})
        paused = await store.pause_schedule(agent, "tick")
        clock.advance(5 * 3600)
        resumed = await store.resume_schedule(agent, "tick")
        with pytest.raises(NotFound, match="its schedules are: 'tick'"):
            await store.remove_schedule(agent, "tock")
        with pytest.raises(NotFound, match="the agents are: ops"):
            await store.schedules("nobody")
        with pytest.raises(InvalidValue) as caught:
            await store.set_schedule(agent, {"name": "x", "text": "go", "every": "sometimes"})
        await store.remove_schedule(agent, "tick")
        left = await store.schedules(agent)
    assert paused.paused and paused.next_due_ms is None
    assert not resumed.paused and resumed.next_due_ms == resumed.anchor_ms + 6 * HOUR
    assert caught.value.context["field"] == "every"
    assert left == []
