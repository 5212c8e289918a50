"""What each model call cost, the turn's and the day's spend, and the budgets
(docs/cost.md#figures, docs/cost.md#budgets).

A call is priced on its receipt's basis (the model the request named) from the usage the reply
reported. Everything here is a pure function of the run's committed state and the clock's
instant; the call-model stage commits what it returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.cost import Budget, CallCost, crossed, over, price_call, utc_day
from afp_runtime.messages import Cost, Usage
from afp_runtime.records import (
    BudgetExceeded,
    ConversationState,
    CostFigures,
    CostSpent,
    DayCostFigures,
    DaySpend,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run

log = get_logger()


class CallSpend(msgspec.Struct, frozen=True, kw_only=True):
    """One call's cost and the spend it brings the turn and the day to."""

    call: CallCost
    turn_before: Cost
    turn_after: Cost
    day: str
    day_before: Cost
    day_after: Cost


def spend_of_call(run: Run, usage: Usage | None, model: str) -> CallSpend | None:
    """The cost of a call to ``model`` that reported ``usage``, or None for an agent without
    pricing."""
    if not run.d.pricing:
        return None
    call = price_call(run.d.pricing, model, usage)
    turn_before = _turn_spent(run)
    day = utc_day(run.now())
    day_before = _day_spent(run, day)
    figure = call.as_cost()
    return CallSpend(
        call=call,
        turn_before=turn_before,
        turn_after=turn_before + figure,
        day=day,
        day_before=day_before,
        day_after=day_before + figure,
    )


def account(run: Run, spend: CallSpend, conv: ConversationState) -> ConversationState:
    """Add the call to the run's cost; returns ``conv`` (the conversation the caller commits
    with the call) with the call added to its totals, the day's spend and the open turn's."""
    run.state.run_cost = run.state.run_cost + spend.call.as_cost()
    totals = conv.cost_totals or Cost()
    turn = conv.open_turn
    assert turn is not None
    return msgspec.structs.replace(
        conv,
        cost_totals=totals + spend.call.as_cost(),
        day_spend=DaySpend(day=spend.day, cost=spend.day_after),
        open_turn=msgspec.structs.replace(turn, spent=spend.turn_after),
    )


def report_call(run: Run, spend: CallSpend, head: CostSpent) -> None:
    """``cost.spent`` for the call (``head``, then its cost and the turn's and the day's), then
    a ``budget.exceeded`` event and a warning for each ``warn`` budget the call took past its
    limit."""
    call = spend.call
    unset = msgspec.UNSET
    payload = msgspec.structs.replace(
        head,
        model=call.model,
        amount=call.amount if call.amount is not None else unset,
        unknown=call.unknown if call.unknown is not None else unset,
        turn=CostFigures.of(spend.turn_after),
        day=DayCostFigures.of(spend.day, spend.day_after),
    )
    run.emit(payload)
    for budget in run.d.budgets:
        if budget.action != "warn":
            continue
        before, after = (
            (spend.turn_before, spend.turn_after)
            if budget.per == "turn"
            else (spend.day_before, spend.day_after)
        )
        if crossed(budget, before, after):
            _exceeded(run, budget, after)


def halting_budget(run: Run) -> tuple[Budget, Cost] | None:
    """The first ``halt`` budget the turn's or today's known spend is past, with that spend."""
    for budget in run.d.budgets:
        if budget.action != "halt":
            continue
        spent = _turn_spent(run) if budget.per == "turn" else _day_spent(run, utc_day(run.now()))
        if over(budget, spent):
            _exceeded(run, budget, spent)
            return budget, spent
    return None


def halt_reason(budget: Budget, spent: Cost) -> tuple[str, str]:
    """The ``(error kind, words)`` of a turn a budget halts."""
    scope = "this turn" if budget.per == "turn" else "today (UTC)"
    return (
        f"budget-{budget.per}",
        f"the model calls of {scope} cost {spent.amount:.6g}, past the {budget.per} budget of "
        f"{budget.limit:.6g}",
    )


def _exceeded(run: Run, budget: Budget, spent: Cost) -> None:
    run.emit(
        BudgetExceeded(
            limit=budget.limit, per=budget.per, action=budget.action, spent=CostFigures.of(spent)
        )
    )
    log.warning(
        "budget exceeded",
        per=budget.per,
        limit=budget.limit,
        spent=spent.amount,
        action=budget.action,
    )


def _turn_spent(run: Run) -> Cost:
    turn = run.state.conv.open_turn
    return (turn.spent if turn is not None else None) or Cost()


def _day_spent(run: Run, day: str) -> Cost:
    spend = run.state.conv.day_spend
    return spend.cost if spend is not None and spend.day == day else Cost()
