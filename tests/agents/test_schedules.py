"""Declaring an agent's schedules (docs/config.md#schedules, docs/python.md#schedules): in a
file's ``[[agents.schedules]]`` tables and through ``afp.Agent(schedules=…)``, checked by the one
declaration with errors naming the path."""

from __future__ import annotations

from pathlib import Path

import pytest

import afp_runtime as afp
from afp_runtime.agents import build_definition, load_config
from afp_runtime.errors import AgentDefinitionError
from afp_runtime.models import ScriptedModel

FILE = """
[[agents]]
id = "ops"
model = {provider = "scripted", model = "m"}

[[agents.schedules]]
name = "morning"
text = "Check the overnight orders"
every = "weekday at 09:00"
zone = "Europe/Berlin"

[[agents.schedules]]
name = "report"
text = "Write the weekly report"
cron = "0 17 * * fri"
catchUp = "all"
"""


def model() -> ScriptedModel:
    return ScriptedModel([], model="m")


def test_a_file_declares_schedules_as_python_does(tmp_path: Path) -> None:
    """``[[agents.schedules]]`` tables (camelCase keys) build the agent ``afp.Agent`` builds
    from ``afp.schedule`` values."""
    config = load_config(tmp_path / "agents.toml", FILE)
    built = build_definition(config.agents[0], model=model())
    morning = afp.schedule(
        "morning", "Check the overnight orders", every="weekday at 09:00", zone="Europe/Berlin"
    )
    report = afp.schedule("report", "Write the weekly report", cron="0 17 * * fri", catch_up="all")
    assert built.schedules == (morning, report)
    assert afp.Agent("ops", model(), schedules=[morning, report]).schedules == built.schedules
    assert afp.Agent("ops", model()).schedules == ()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('every = "fortnightly"', "agents[0].schedules[0].every: "),
        ('every = "day at 09:00"\nzone = "Mars/Olympus"', "agents[0].schedules[0].zone: "),
        ('every = "day at 09:00"\ncatchUp = "some"', "agents[0].schedules[0].catchUp"),
        ('every = "day at 09:00"\ncron = "0 9 * * *"', "agents[0].schedules[0]"),
        ('every = "day at 09:00"\nrepeat = 3', "agents[0].schedules[0]"),
    ],
)
def test_a_wrong_schedule_in_a_file_is_named_by_its_path(
    tmp_path: Path, table: str, message: str
) -> None:
    """A wrong field of a file's schedule fails the agent with the field's path leading the
    message."""
    text = (
        '[[agents]]\nid = "ops"\nmodel = {provider = "scripted", model = "m"}\n'
        f'[[agents.schedules]]\nname = "x"\ntext = "go"\n{table}\n'
    )
    config = load_config(tmp_path / "agents.toml", text)
    with pytest.raises(AgentDefinitionError) as caught:
        build_definition(config.agents[0], model=model())
    assert caught.value.message.startswith(message), caught.value.message


def test_python_declarations_are_checked() -> None:
    """``afp.Agent(schedules=…)`` refuses a non-list, a non-schedule and two of one name, each
    naming the field."""
    once = afp.schedule("x", "go", at="2026-12-08T09:00")
    cases = [
        ({"schedules": once}, "schedules"),
        ({"schedules": [once, "daily"]}, "schedules[1]"),
        ({"schedules": [once, once]}, "schedules[1].name"),
    ]
    for given, field in cases:
        with pytest.raises(AgentDefinitionError) as caught:
            afp.Agent("ops", model(), **given)  # type: ignore[arg-type]
        assert caught.value.context["field"] == field
