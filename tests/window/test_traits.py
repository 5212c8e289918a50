"""A strategy's optional declarations are read in one place, with one default each
(docs/window.md#the-strategy-protocol): the definition check, the stage's stale-usage warning,
its flush before a visit and its ``cost.spent`` provider all go through ``traits_of``."""

from __future__ import annotations

import msgspec
import pytest

from afp_runtime.errors import WindowConfigError
from afp_runtime.models import ExtractiveSummarizer
from afp_runtime.window import (
    Billing,
    WindowResult,
    WindowVisit,
    sliding_window,
    summarize_oldest,
    token_budget,
    traits_of,
    validate_strategy,
)
from afp_runtime.window.traits import StrategyTraits


class Bare:
    """A custom strategy that declares nothing beyond name and plan."""

    name = "bare"

    async def plan(self, visit: WindowVisit) -> WindowResult | None:
        return None


class Declared(Bare):
    """A custom strategy that says it reads no usage and makes no model call."""

    reads_usage = False
    billing: Billing | None = None


def test_a_strategy_that_declares_nothing_gets_the_cautious_defaults() -> None:
    """Undeclared: it may read usage, may call a model (so pending writes are committed before
    its visit), and a spend it reports is billed to ``unknown``."""
    traits = traits_of(Bare())
    assert traits == StrategyTraits(reads_usage=True, billing=msgspec.UNSET)
    assert traits.may_call_model is True
    assert traits.billed_provider == "unknown"
    validate_strategy(Bare())  # no billing to check


def test_declared_values_win_over_the_defaults() -> None:
    traits = traits_of(Declared())
    assert (traits.reads_usage, traits.billing, traits.may_call_model) == (False, None, False)
    assert traits.billed_provider == "unknown"


@pytest.mark.parametrize(
    ("strategy", "reads_usage", "may_call_model", "provider"),
    [
        (sliding_window(keep_recent_turns=2), False, False, "unknown"),
        (token_budget(threshold_tokens=100), True, False, "unknown"),
        (
            summarize_oldest(
                threshold_tokens=100, summarizer=ExtractiveSummarizer(), model="extractive/1"
            ),
            True,
            True,
            "extractive",
        ),
    ],
    ids=["sliding-window", "token-budget", "summarize-oldest"],
)
def test_the_built_in_strategies_declare_what_they_do(
    strategy: object, reads_usage: bool, may_call_model: bool, provider: str
) -> None:
    traits = traits_of(strategy)
    assert (traits.reads_usage, traits.may_call_model) == (reads_usage, may_call_model)
    assert traits.billed_provider == provider


def test_a_billing_that_is_not_a_billing_is_still_refused() -> None:
    strategy = Bare()
    strategy.billing = "the agent"  # type: ignore[attr-defined]
    with pytest.raises(WindowConfigError, match="billing must be a Billing or None"):
        validate_strategy(strategy)
