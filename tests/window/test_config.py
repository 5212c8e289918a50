"""Definition-time checks of window settings (docs/window.md#definition-time-validation,
docs/window.md#last-tool-result-pin; docs/window.md#how-this-is-tested case 50)."""

from __future__ import annotations

import pytest

from afp_runtime.errors import WindowConfigError
from afp_runtime.messages import ModelReply, ModelRequest
from afp_runtime.models import ScriptedModel
from afp_runtime.window.config import validate_keep_last_tool_results, validate_strategy
from afp_runtime.window.strategies import sliding_window, summarize_oldest, token_budget
from afp_runtime.window.visit import Billing, WindowResult, WindowVisit
from tests.window._build import Dropper


class TestKeepLastToolResults:
    """Case 50: the ``keep_last_tool_results`` option."""

    @pytest.mark.parametrize("value", [-1, 1.5, "two", None, True])
    def test_invalid_values_are_refused(self, value: object) -> None:
        """Case 50: -1, 1.5, "two", None and True are refused, naming the option and value."""
        with pytest.raises(WindowConfigError) as caught:
            validate_keep_last_tool_results(value)
        assert caught.value.context["option"] == "keep_last_tool_results"
        assert "keep_last_tool_results" in str(caught.value)
        assert repr(value) in str(caught.value)

    @pytest.mark.parametrize("value", [0, 2, 40, False])
    def test_valid_values_pass_unchanged(self, value: object) -> None:
        """Ints >= 0 and False are accepted and returned as given."""
        assert validate_keep_last_tool_results(value) is value


class TestStrategyShape:
    """Case 50: what may be given as ``window=``."""

    def test_uncalled_factory_is_refused(self) -> None:
        """Case 50: ``window=sliding_window`` (the factory itself) is refused."""
        with pytest.raises(WindowConfigError) as caught:
            validate_strategy(sliding_window)
        assert caught.value.context["option"] == "window"
        assert "sliding_window" in str(caught.value)

    @pytest.mark.parametrize("value", [None, {"name": "sliding-window"}, Dropper, "dropper"])
    def test_non_strategies_are_refused(self, value: object) -> None:
        """None, a dict, a class and a string are refused."""
        with pytest.raises(WindowConfigError):
            validate_strategy(value)

    def test_built_ins_and_custom_objects_pass(self) -> None:
        """The three built-ins and a custom object with a name and async plan pass."""
        summarizer = ScriptedModel([ModelReply()])
        for strategy in (
            sliding_window(keep_recent_turns=2),
            token_budget(threshold_tokens=100),
            summarize_oldest(threshold_tokens=100, summarizer=summarizer, model="m"),
            Dropper(),
        ):
            validate_strategy(strategy)

    def test_name_must_be_a_non_empty_str(self) -> None:
        """A strategy with an empty name is refused."""
        with pytest.raises(WindowConfigError, match="name"):
            validate_strategy(Dropper(name=""))

    def test_plan_must_be_async(self) -> None:
        """A strategy whose plan is not async is refused."""

        class SyncPlan:
            name = "sync"

            def plan(self, visit: WindowVisit) -> WindowResult | None:
                return None

        with pytest.raises(WindowConfigError, match="plan"):
            validate_strategy(SyncPlan())

    def test_billing_must_be_a_billing(self) -> None:
        """A strategy whose billing is not a Billing is refused."""
        strategy = Dropper()
        strategy.billing = "the agent"  # type: ignore[attr-defined]
        with pytest.raises(WindowConfigError, match="billing"):
            validate_strategy(strategy)


class TestBilling:
    """Case 50: a summarizer on the agent's own port and model is refused."""

    def test_same_port_same_model_is_refused(self) -> None:
        """Case 50: the summarizer is the agent's port with the agent's model: refused."""
        port = ScriptedModel([ModelReply()], model="agent-model")
        strategy = summarize_oldest(threshold_tokens=100, summarizer=port, model="agent-model")
        with pytest.raises(WindowConfigError) as caught:
            validate_strategy(strategy, agent_model_port=port, agent_model="agent-model")
        assert caught.value.context["option"] == "window"
        assert "agent-model" in str(caught.value)

    def test_same_port_other_model_is_accepted(self) -> None:
        """Case 50: the agent's own port with another model id is accepted."""
        port = ScriptedModel([ModelReply()], model="agent-model")
        strategy = summarize_oldest(threshold_tokens=100, summarizer=port, model="cheap")
        validate_strategy(strategy, agent_model_port=port, agent_model="agent-model")

    def test_other_port_same_model_is_accepted(self) -> None:
        """Another port with the agent's model id is accepted."""
        port = ScriptedModel([ModelReply()], model="agent-model")
        other = ScriptedModel([ModelReply()], model="agent-model")
        strategy = summarize_oldest(threshold_tokens=100, summarizer=other, model="agent-model")
        validate_strategy(strategy, agent_model_port=port, agent_model="agent-model")

    def test_custom_billing_is_checked_the_same_way(self) -> None:
        """A custom strategy billing the agent's own port and model is refused too."""

        class Own:
            provider = "own"

            async def send(self, request: ModelRequest) -> ModelReply:
                return ModelReply()

        port = Own()
        strategy = Dropper()
        strategy.billing = Billing(provider=port, model="m")  # type: ignore[attr-defined]
        with pytest.raises(WindowConfigError):
            validate_strategy(strategy, agent_model_port=port, agent_model="m")
        validate_strategy(strategy, agent_model_port=Own(), agent_model="m")
