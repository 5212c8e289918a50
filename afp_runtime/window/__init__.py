"""Window: the pure window family — turns, refusals, removal plans, pins, stand-down, notices,
strategies, records and folded spans (docs/window.md)."""

# The texts the runtime writes into a conversation, as one namespace (``texts.WRAP_UP_TEXT``).
from afp_runtime.window import texts
from afp_runtime.window.config import validate_keep_last_tool_results, validate_strategy
from afp_runtime.window.drop import drop_oldest_span
from afp_runtime.window.folds import FoldedSpan
from afp_runtime.window.names import call_names, tool_name_of
from afp_runtime.window.records import CustomRecord, DroppedStanding
from afp_runtime.window.refusals import Standing
from afp_runtime.window.stage import VisitOutcome, record_to_wire, visit_window
from afp_runtime.window.standdown import PriorVisit
from afp_runtime.window.strategies import sliding_window, summarize_oldest, token_budget
from afp_runtime.window.traits import traits_of
from afp_runtime.window.turns import Turn
from afp_runtime.window.visit import (
    Billing,
    BudgetPressure,
    Eviction,
    MessageOrigin,
    Rebase,
    Spend,
    Summarizer,
    TurnStanding,
    WindowResult,
    WindowStrategy,
    WindowVisit,
)

__all__ = [
    "Billing",
    "BudgetPressure",
    "CustomRecord",
    "DroppedStanding",
    "Eviction",
    "FoldedSpan",
    "MessageOrigin",
    "PriorVisit",
    "Rebase",
    "Spend",
    "Standing",
    "Summarizer",
    "Turn",
    "TurnStanding",
    "VisitOutcome",
    "WindowResult",
    "WindowStrategy",
    "WindowVisit",
    "call_names",
    "drop_oldest_span",
    "record_to_wire",
    "sliding_window",
    "summarize_oldest",
    "texts",
    "token_budget",
    "tool_name_of",
    "traits_of",
    "validate_keep_last_tool_results",
    "validate_strategy",
    "visit_window",
]
