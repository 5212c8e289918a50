"""Agent definitions refuse bad window settings before any run
(docs/window.md#definition-time-validation, case 50)."""

from __future__ import annotations

from typing import Any

import pytest

from afp_runtime.agents import Agent
from afp_runtime.errors import AgentDefinitionError, ConfigError, ToolDefinitionError
from afp_runtime.models import ScriptedModel
from afp_runtime.tools import Tool
from afp_runtime.window import sliding_window, summarize_oldest


def model() -> ScriptedModel:
    return ScriptedModel([], model="main")


def test_a_second_strategy_is_refused_naming_the_first() -> None:
    """window= and compaction= together: the error names the strategy set first and the field."""
    port = model()
    with pytest.raises(AgentDefinitionError) as caught:
        Agent(
            "ops",
            port,
            window=sliding_window(keep_recent_turns=2),
            compaction=summarize_oldest(
                threshold_tokens=10, summarizer=model(), model="cheap", keep_recent_turns=1
            ),
        )
    assert "sliding-window" in str(caught.value) and caught.value.context["field"] == "compaction"


def test_an_uncalled_factory_is_refused() -> None:
    """window=sliding_window (not called) is not a strategy."""
    with pytest.raises(ConfigError):
        Agent("ops", model(), window=sliding_window)  # type: ignore[arg-type]


def test_summarizing_with_the_agents_own_port_and_model_is_refused() -> None:
    """The agent's own port with its own model id cannot be its summarizer; another id can."""
    port = model()
    with pytest.raises(ConfigError):
        Agent(
            "ops",
            port,
            window=summarize_oldest(threshold_tokens=10, summarizer=port, model="main"),
        )
    Agent("ops", port, window=summarize_oldest(threshold_tokens=10, summarizer=port, model="cheap"))


@pytest.mark.parametrize("value", [-1, 1.5, "two", None, True])
def test_keep_last_tool_results_is_validated(value: Any) -> None:
    """keep_last_tool_results accepts ints >= 0 and False only; the error names the option."""
    with pytest.raises(ConfigError, match="keep_last_tool_results"):
        Agent("ops", model(), keep_last_tool_results=value)


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_iterations", 0), ("max_iterations", True), ("durability", "later"), ("agent_id", "A")],
)
def test_limits_are_validated(field: str, value: Any) -> None:
    """Invalid limits refuse the definition with an error naming the field."""
    kwargs: dict[str, Any] = {field: value} if field != "agent_id" else {}
    agent_id = value if field == "agent_id" else "ops"
    with pytest.raises(AgentDefinitionError):
        Agent(agent_id, model(), **kwargs)


@pytest.mark.parametrize("reserved", ["_findings", "_timeQuote"])
def test_reserved_arguments_are_refused_at_definition(reserved: str) -> None:
    """Case 39: a tool whose schema defines a reserved argument is refused, naming both."""

    async def fn(args: Any, ctx: Any) -> str:
        return "ok"

    schema = {"type": "object", "properties": {reserved: {"type": "string"}}}
    with pytest.raises(ToolDefinitionError) as caught:
        Tool("probe", "Probe.", schema, fn)
    assert reserved in str(caught.value) and "probe" in str(caught.value)


def test_duplicate_tool_names_are_refused() -> None:
    """Two tools with one name refuse the definition."""

    async def fn(args: Any, ctx: Any) -> str:
        return "ok"

    tool = Tool("probe", "Probe.", {"type": "object"}, fn)
    with pytest.raises(AgentDefinitionError, match="probe"):
        Agent("ops", model(), tools=[tool, tool])
