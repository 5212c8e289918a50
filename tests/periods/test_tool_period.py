"""A tool's ``period=`` (docs/loop.md#tool-declarations) checked against its input schema, and the
``period`` of a tool in a config file (docs/time.md#validation-at-definition-time, case 55)."""

from __future__ import annotations

from typing import Any

import pytest

from afp_runtime.agents import build_definition, load_config
from afp_runtime.errors import ConfigError, PeriodDeclarationError, ToolDefinitionError
from afp_runtime.time import Period
from afp_runtime.time._declare import forms_of
from afp_runtime.tools import Tool
from tests.periods._build import EPOCH

EPOCH_SCHEMA = {
    "type": "object",
    "properties": {"start_time": {"type": "integer"}, "end_time": {"type": "integer"}},
}


async def probe(args: Any, ctx: Any) -> str:
    """A tool function for config references."""
    return "ok"


def make(schema: dict[str, Any], period: Period | None) -> Tool:
    """A tool named client_activity with ``schema`` and ``period``."""
    return Tool("client_activity", "Client activity.", schema, probe, period=period)


def test_tool_keeps_its_period() -> None:
    """A period that fits the schema is kept on the tool."""
    period = Period(forms=(EPOCH,), direction="past")
    assert make(EPOCH_SCHEMA, period).period == period
    assert make(EPOCH_SCHEMA, None).period is None


def test_period_argument_absent_from_schema() -> None:
    """An argument the schema lacks raises PeriodDeclarationError naming tool and field."""
    with pytest.raises(PeriodDeclarationError) as exc:
        make(EPOCH_SCHEMA, Period(argument="window", spelling="lookback"))
    assert exc.value.context["tool"] == "client_activity"
    assert exc.value.context["field"] == "argument"


def test_epoch_bound_on_a_string_property() -> None:
    """An epoch bound needs a number or integer property."""
    schema = {
        "type": "object",
        "properties": {"start_time": {"type": "string"}, "end_time": {"type": "integer"}},
    }
    with pytest.raises(PeriodDeclarationError) as exc:
        make(schema, Period(forms=(EPOCH,)))
    assert exc.value.context["field"] == "forms[0].from.argument"


def test_period_must_be_a_period() -> None:
    """A raw dict is not a Period."""
    with pytest.raises(ToolDefinitionError):
        make(EPOCH_SCHEMA, {"forms": []})  # type: ignore[arg-type]


@pytest.mark.parametrize("period", [None, Period(forms=(EPOCH,))])
def test_time_quote_is_refused_with_or_without_a_period(period: Period | None) -> None:
    """Case 55: a schema defining _timeQuote is a ToolDefinitionError naming tool and property."""
    schema = {
        "type": "object",
        "properties": {**EPOCH_SCHEMA["properties"], "_timeQuote": {"type": "string"}},
    }
    with pytest.raises(ToolDefinitionError) as exc:
        make(schema, period)
    assert exc.value.context == {"tool": "client_activity", "property": "_timeQuote"}


AGENT = """
[[agents]]
id = "ops"
model = {provider = "scripted", model = "demo", script = "afp_runtime.demo:demo_script"}

[[agents.tools]]
ref = "tests.periods.test_tool_period:probe"
name = "search_logs"
inputSchema = {type = "object", properties = {window = {type = "string"}, tz = {type = "string"}}}
PERIOD
"""


def test_config_tool_carries_its_period() -> None:
    """A TOML period (camelCase keys) decodes into the tool's Period."""
    text = AGENT.replace(
        "PERIOD",
        'period = {argument = "window", spelling = "wall-range", zoneArgument = "tz", '
        'direction = "past", missing = {assume = "1h"}}',
    )
    config = load_config("a.toml", text)
    period = config.agents[0].tools[0].period
    assert period is not None
    assert forms_of(period)[0].zone is not None  # type: ignore[union-attr]
    tool = build_definition(config.agents[0]).tools[0]
    assert tool.period == period


@pytest.mark.parametrize(
    ("period", "field"),
    [
        (
            'period = {argument = "window", spelling = "wall-range", zone_argument = "tz"}',
            "zone_argument",
        ),
        (
            'period = {argument = "window", spelling = "iso-range", zoneArgument = "tz"}',
            "zoneArgument",
        ),
    ],
)
def test_config_period_errors_name_the_path(period: str, field: str) -> None:
    """A bad declaration in a file names the tool's key path and the period field."""
    with pytest.raises(PeriodDeclarationError) as exc:
        load_config("a.toml", AGENT.replace("PERIOD", period))
    assert exc.value.context["field"] == field
    assert exc.value.context["path"] == "agents[0].tools[0].period"
    assert isinstance(exc.value, ConfigError)


def test_config_period_is_checked_against_the_schema() -> None:
    """A period whose argument the file's schema lacks fails when the tool is built."""
    text = AGENT.replace("PERIOD", 'period = {argument = "span", spelling = "lookback"}')
    config = load_config("a.toml", text)
    with pytest.raises(PeriodDeclarationError) as exc:
        build_definition(config.agents[0])
    assert exc.value.context["tool"] == "search_logs"
