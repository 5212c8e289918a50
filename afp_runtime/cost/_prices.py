"""Prices per token, the cost of one model call, and budgets (docs/cost.md).

Pure: no I/O, no clock; the day a budget counts is computed from the instant it is given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Literal

import msgspec

from afp_runtime.errors import AgentDefinitionError, shown
from afp_runtime.messages import Cost, Usage

UnknownReason = Literal[
    "usage-unreported", "no-price", "no-cache-read-price", "no-cache-write-price"
]


class Price(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """What one model charges per token, in the currency of your choice (docs/cost.md#prices).

    Attributes:
        input: per prompt token that is neither read from nor written to a cache.
        output: per completion token (reasoning tokens are completion tokens).
        cache_read: per prompt token read from the provider's cache (wire ``cacheRead``); None:
            a call that reports such tokens has an unknown cost.
        cache_write: per prompt token written to the provider's cache (wire ``cacheWrite``).
    """

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class Budget(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """A spending limit (docs/cost.md#budgets).

    Attributes:
        limit: the amount, in the pricing table's currency (> 0).
        per: ``turn`` (the turn's calls, across its runs) or ``day`` (the agent's calls of one
            UTC day).
        action: ``warn`` (an event and a warning once the limit is passed) or ``halt`` (the turn
            stops at the next route boundary, before any further tool or model call, with
            status ``halted``).
    """

    limit: float
    per: Literal["turn", "day"]
    action: Literal["warn", "halt"] = "warn"


class CallCost(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The cost of one model call: its amount, or why it is unknown."""

    model: str
    amount: float | None = None
    unknown: UnknownReason | None = None

    def as_cost(self) -> Cost:
        """The call as a ``Cost`` figure to add up."""
        if self.amount is None:
            return Cost(unknown=1)
        return Cost(amount=self.amount, priced=1)


def price_call(pricing: Mapping[str, Price], model: str, usage: Usage | None) -> CallCost:
    """The cost of a call to ``model`` that reported ``usage`` (None: reported none).

    ``usage.input`` counts every prompt token, cached ones included, so the cache reads and
    writes are taken out of it and priced at their own rates.
    """
    if usage is None:
        return CallCost(model=model, unknown="usage-unreported")
    price = pricing.get(model)
    if price is None:
        return CallCost(model=model, unknown="no-price")
    read = usage.cache_read or 0
    write = usage.cache_write or 0
    if read and price.cache_read is None:
        return CallCost(model=model, unknown="no-cache-read-price")
    if write and price.cache_write is None:
        return CallCost(model=model, unknown="no-cache-write-price")
    amount = max(usage.input - read - write, 0) * price.input + usage.output * price.output
    if read:
        amount += read * (price.cache_read or 0.0)
    if write:
        amount += write * (price.cache_write or 0.0)
    return CallCost(model=model, amount=amount)


def cost_wire(cost: Cost) -> dict[str, object]:
    """A cost as events and listings carry it: its fields and ``total``, null while a call's
    cost is unknown."""
    return {**msgspec.to_builtins(cost), "total": cost.total}


def cost_text(cost: Cost | None) -> str:
    """A cost as tables show it: the amount, or how much is known and how many calls are
    not; empty for a run without pricing."""
    if cost is None:
        return ""
    if cost.unknown:
        return f"unknown (≥ {cost.amount:.6g}; {cost.unknown} calls unpriced)"
    return f"{cost.amount:.6g}"


def utc_day(at_ms: int) -> str:
    """The UTC day of an instant, ``YYYY-MM-DD``: the day a ``per = "day"`` budget counts."""
    return datetime.fromtimestamp(at_ms / 1000, UTC).date().isoformat()


def crossed(budget: Budget, before: Cost, after: Cost) -> bool:
    """Whether the known spend passed the budget's limit between ``before`` and ``after``."""
    return before.amount <= budget.limit < after.amount


def over(budget: Budget, spent: Cost) -> bool:
    """Whether the known spend is past the budget's limit."""
    return spent.amount > budget.limit


def check_pricing(pricing: object) -> dict[str, Price]:
    """A pricing table as the agent keeps it, else ``AgentDefinitionError`` naming the entry."""
    if not isinstance(pricing, Mapping):
        raise AgentDefinitionError(
            f"pricing must map model ids to afp.cost.Price, not {shown(pricing)}", field="pricing"
        )
    checked: dict[str, Price] = {}
    for model, price in pricing.items():
        if not isinstance(model, str) or not model:
            raise AgentDefinitionError(
                f"pricing keys must be model ids, not {shown(model)}", field="pricing"
            )
        if not isinstance(price, Price):
            raise AgentDefinitionError(
                f"pricing[{model!r}] must be an afp.cost.Price, not {shown(price)}",
                field=f"pricing.{model}",
            )
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(price, name)
            if value is None and name.startswith("cache"):
                continue
            _rate(f"pricing.{model}.{_camel(name)}", value)
        checked[model] = price
    return checked


def check_budgets(budgets: object) -> tuple[Budget, ...]:
    """The budgets as the agent keeps them, else ``AgentDefinitionError`` naming the entry."""
    if isinstance(budgets, (str, bytes)) or not isinstance(budgets, Sequence):
        raise AgentDefinitionError(
            f"budgets must be a list of afp.cost.Budget, not {shown(budgets)}", field="budgets"
        )
    for index, budget in enumerate(budgets):
        field = f"budgets[{index}]"
        if not isinstance(budget, Budget):
            raise AgentDefinitionError(
                f"{field} must be an afp.cost.Budget, not {shown(budget)}", field=field
            )
        _rate(f"{field}.limit", budget.limit, positive=True)
        if budget.per not in ("turn", "day"):
            raise AgentDefinitionError(
                f"{field}.per must be turn or day, not {shown(budget.per)}", field=f"{field}.per"
            )
        if budget.action not in ("warn", "halt"):
            raise AgentDefinitionError(
                f"{field}.action must be warn or halt, not {shown(budget.action)}",
                field=f"{field}.action",
            )
    return tuple(budgets)


def _rate(field: str, value: object, *, positive: bool = False) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
        or (positive and value == 0)
    ):
        need = "a finite number above 0" if positive else "a finite number of at least 0"
        raise AgentDefinitionError(f"{field} must be {need}, not {shown(value)}", field=field)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
