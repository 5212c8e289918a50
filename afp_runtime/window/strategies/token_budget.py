"""The token-budget strategy: drop the oldest turns when the last call's input went over a
threshold (docs/window.md#token-budget).

Only the input tokens of the previous call of this turn are compared. It never calls a model.
"""

from __future__ import annotations

from afp_runtime.errors import CompactionUnmeasurableError
from afp_runtime.messages import Usage
from afp_runtime.window.drop import drop_oldest_span
from afp_runtime.window.records import TokenBudgetRecord
from afp_runtime.window.strategies import _options
from afp_runtime.window.visit import Billing, BudgetPressure, WindowResult, WindowVisit

NAME = "token-budget"


class TokenBudget:
    """A built token-budget strategy (make it with ``token_budget``).

    Attributes:
        name: ``token-budget``.
        billing: None (it makes no model call).
        threshold_tokens: the input-token budget; a reading above it engages.
        keep_recent_turns: how many recent turns always stay.
    """

    name = NAME
    billing: Billing | None = None

    def __init__(self, threshold_tokens: float, keep_recent_turns: int) -> None:
        self.threshold_tokens = threshold_tokens
        self.keep_recent_turns = keep_recent_turns

    def __repr__(self) -> str:
        return (
            f"token_budget(threshold_tokens={self.threshold_tokens!r}, "
            f"keep_recent_turns={self.keep_recent_turns})"
        )

    async def plan(self, visit: WindowVisit) -> WindowResult | None:
        """Drop the oldest removable turns when the measured input is over the threshold.

        Raises:
            CompactionUnmeasurableError: the last reading was 0 input and 0 output tokens.
        """
        measured = over_budget(visit, NAME, self.threshold_tokens)
        if measured is None:
            return None
        outcome = drop_oldest_span(visit, self.keep_recent_turns, NAME)
        record = TokenBudgetRecord(
            iteration=visit.iteration,
            measured_tokens=measured.input,
            threshold_tokens=self.threshold_tokens,
            over_budget=True,
            keep_recent_turns=self.keep_recent_turns,
            removed_stage_ids=outcome.removed_stage_ids,
            removed_message_count=outcome.removed_message_count,
            window_chars_before=outcome.window_chars_before,
            window_chars_after=outcome.window_chars_after,
            refusals=outcome.refusals,
        )
        return WindowResult(
            record=record,
            evictions=outcome.evictions,
            window=outcome.window,
            rebase=outcome.rebase,
            budget_pressure=BudgetPressure(
                cap_tokens=self.threshold_tokens,
                projected_tokens=measured.input,
                plan_action="evict" if outcome.removed_message_count > 0 else "none",
            ),
        )


def over_budget(visit: WindowVisit, strategy: str, threshold_tokens: float) -> Usage | None:
    """The trigger both token strategies share (docs/window.md#token-budget): the measured usage
    when its input is over the threshold; None when unmeasured or within it.

    Raises:
        CompactionUnmeasurableError: the last reading was 0 input and 0 output tokens.
    """
    measured = visit.measured
    if measured is None:
        return None
    if measured.input == 0 and measured.output == 0:
        provider = visit.provider_name
        raise CompactionUnmeasurableError(
            f"the {strategy} window strategy cannot measure the window: provider {provider!r} "
            "reported 0 input and 0 output tokens for the last model call",
            provider=provider,
            strategy=strategy,
        )
    return measured if measured.input > threshold_tokens else None


def token_budget(
    *args: object,
    threshold_tokens: float = _options.MISSING,
    keep_recent_turns: int = 6,
) -> TokenBudget:
    """A strategy that drops the oldest turns while the last call's input is over budget.

    Args:
        threshold_tokens: required; a finite number > 0 (floats allowed).
        keep_recent_turns: an int >= 1; default 6.

    Raises:
        WindowConfigError: an option is missing, positional or invalid (names the factory,
            option and value).
    """
    _options.refuse_positional("token_budget", args)
    return TokenBudget(
        _options.threshold("token_budget", threshold_tokens),
        _options.keep_turns("token_budget", keep_recent_turns),
    )
