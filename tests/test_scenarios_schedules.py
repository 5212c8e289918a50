"""Schedules in scenarios (docs/scenarios.md#schedules): ``agent.schedules`` and wait steps are
checked up front with errors naming their JSON path; a wait step delivers due schedules and
runs their turns, a crash armed before it cuts the first such turn and the due instant is still
delivered once, and a scheduleWakeup call's reminder arrives."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from afp_runtime.errors import AfpError, AgentDefinitionError, InvalidValue
from afp_runtime.scenario import decode_scenario, run_scenario

START = 1_775_023_200_000  # 2026-04-01T06:00:00Z, a Wednesday
DAILY = {"name": "daily", "text": "Daily check.", "every": "day at 09:00", "zone": "UTC"}
BASE: dict[str, Any] = {
    "format": "afp-scenario/1",
    "name": "waits",
    "clock": {"startMs": START, "modelCallStepMs": 10, "toolStepMs": 5, "runGapMs": 100},
    "agent": {"model": "mock-main", "schedules": [DAILY]},
    "provider": {"replies": [{"content": f"done {n}"} for n in range(6)]},
    "turns": [{"kind": "wait", "days": 2}],
}


def scenario(change: Callable[[dict[str, Any]], Any]) -> bytes:
    data = copy.deepcopy(BASE)
    change(data)
    return msgspec.json.encode(data)


def refused(data: bytes, kind: type[AfpError] = InvalidValue) -> AfpError:
    with pytest.raises(kind) as caught:
        decode_scenario(data)
    return caught.value


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["agent"]["schedules"][0].update(every="fortnightly"), "schedules[0].every"),
        (lambda d: d["agent"]["schedules"][0].update(zone="Mars/Olympus"), "schedules[0].zone"),
        (lambda d: d["agent"]["schedules"][0].update(repeat=3), "schedules[0]"),
        (lambda d: d["agent"]["schedules"].append(DAILY), "schedules[1].name"),
    ],
)
def test_a_wrong_declared_schedule_is_named_by_its_json_path(
    change: Callable[[dict[str, Any]], Any], path: str
) -> None:
    """Each wrong ``agent.schedules`` entry fails the file before anything runs, its message
    leading with ``$.agent.`` and the entry's path."""
    error = refused(scenario(change), AgentDefinitionError)
    assert error.message.startswith(f"$.agent.{path}"), error.message


@pytest.mark.parametrize(
    ("step", "path", "words"),
    [
        ({"kind": "wait"}, "$.turns[0]", "exactly one of days, hours or until, not none"),
        ({"kind": "wait", "days": 1, "hours": 2}, "$.turns[0]", "not days, hours"),
        ({"kind": "wait", "until": "2026-04-06T09:00"}, "$.turns[0].until", "its offset"),
        ({"kind": "wait", "days": 0}, "$.turns[0].days", ">= 1"),
        ({"kind": "wait", "days": 1, "soon": True}, "$.turns[0].soon", "unknown key"),
        ({"kind": "wait", "days": 1, "down": "yes"}, "$.turns[0].down", "bool"),
    ],
)
def test_a_wrong_wait_step_is_named_by_its_json_path(
    step: dict[str, Any], path: str, words: str
) -> None:
    """A wait step holds exactly one of days, hours and until (an instant with its offset);
    every wrong one is refused naming its path."""
    error = refused(scenario(lambda d: d.update(turns=[step])))
    assert error.context["field"] == path and words in error.message, error.message


@pytest.mark.parametrize(("key", "value"), [("scheduleWakeup", "on"), ("schedules", "daily")])
def test_the_agents_schedule_keys_are_typed(key: str, value: Any) -> None:
    """``agent.scheduleWakeup`` is a bool and ``agent.schedules`` a list, strict like the rest
    of the format."""
    error = refused(scenario(lambda d: d["agent"].update({key: value})))
    assert error.context["field"] == f"$.agent.{key}"


async def test_until_before_the_clock_is_refused_when_the_step_runs(tmp_path: Path) -> None:
    """An ``until`` in the past of the virtual clock names the step's ``until``."""
    data = scenario(lambda d: d.update(turns=[{"kind": "wait", "until": "2026-03-01T00:00:00Z"}]))
    with pytest.raises(InvalidValue) as caught:
        await run_scenario(data, db_path=tmp_path / "afp.db")
    assert caught.value.context["field"] == "$.turns[0].until"
    assert "before the virtual clock (2026-04-01T06:00:00Z)" in caught.value.message


async def test_a_crash_before_a_wait_cuts_the_delivered_turn_and_delivers_once(
    tmp_path: Path,
) -> None:
    """A crash step before a wait fires in the first turn the wait starts; a fresh host
    recovers that turn, and each due instant is delivered exactly once over two days."""
    turns = [{"kind": "crash", "after": "send"}, {"kind": "wait", "days": 2}]
    result = await run_scenario(
        scenario(lambda d: d.update(turns=turns)), db_path=tmp_path / "afp.db"
    )
    wait = result.turns[1]
    assert not isinstance(wait.deliveries, msgspec.UnsetType)
    assert [(d.due, d.sender, d.outcome) for d in wait.deliveries] == [
        ("2026-04-01T09:00:00Z", "schedule:daily", "answered"),
        ("2026-04-02T09:00:00Z", "schedule:daily", "answered"),
    ]
    first = wait.deliveries[0]
    assert not isinstance(first.runs, msgspec.UnsetType)
    assert [(run.kind, run.status) for run in first.runs] == [
        ("initial", "crashed"),
        ("recovery", "answered"),
    ]
    assert [(s.name, s.delivered) for s in wait.schedules or ()] == [("daily", 2)]


async def test_a_crash_before_a_wait_that_runs_no_turn_is_refused(tmp_path: Path) -> None:
    """A wait that delivers nothing never reaches the crash armed before it: refused, naming
    the crash step."""
    turns = [{"kind": "crash", "after": "send"}, {"kind": "wait", "hours": 1}]
    with pytest.raises(InvalidValue) as caught:
        await run_scenario(scenario(lambda d: d.update(turns=turns)), db_path=tmp_path / "a.db")
    assert caught.value.context["field"] == "$.turns[0]"
    assert "was never reached by step $.turns[1]" in caught.value.message


async def test_a_wakeup_set_in_a_message_step_arrives_in_a_wait(tmp_path: Path) -> None:
    """``agent.scheduleWakeup``: the model's call files its ``schedule`` row in the step's
    ``scheduleRows``, and a wait of a day delivers the reminder as ``schedule:NAME``."""
    wakeup = {"id": "w1", "name": "scheduleWakeup", "args": {"in": "5 hours", "text": "Look."}}

    def change(d: dict[str, Any]) -> None:
        d["agent"].update(scheduleWakeup=True, schedules=[])
        d["provider"]["replies"].insert(0, {"toolCalls": [wakeup]})
        d["turns"] = [{"kind": "message", "message": "Wake me"}, {"kind": "wait", "hours": 6}]

    result = await run_scenario(scenario(change), db_path=tmp_path / "afp.db")
    set_step, wait = result.turns
    assert [row["name"] for row in set_step.schedule_rows or ()] == ["wakeup-w1"]
    assert [(d.sender, d.answer) for d in wait.deliveries or ()] == [
        ("schedule:wakeup-w1", "done 1")
    ]
