"""What model calls cost, and spending budgets (docs/cost.md).

``afp.cost.Price`` and ``afp.cost.Budget`` are what an agent definition takes; ``afp.cost.Cost``
is the figure runs, turns and events carry.
"""

from afp_runtime.cost._prices import (
    Budget,
    CallCost,
    Price,
    UnknownReason,
    check_budgets,
    check_pricing,
    cost_text,
    cost_wire,
    crossed,
    over,
    price_call,
    utc_day,
)
from afp_runtime.messages import Cost

__all__ = [
    "Budget",
    "CallCost",
    "Cost",
    "Price",
    "UnknownReason",
    "check_budgets",
    "check_pricing",
    "cost_text",
    "cost_wire",
    "crossed",
    "over",
    "price_call",
    "utc_day",
]
