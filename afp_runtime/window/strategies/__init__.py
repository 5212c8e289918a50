"""The built-in window strategies, one file each (docs/window.md#built-in-strategies):
sliding-window, token-budget and summarize-oldest. Each factory validates its options when called
(docs/window.md#definition-time-validation)."""

from afp_runtime.window.strategies.sliding_window import SlidingWindow, sliding_window
from afp_runtime.window.strategies.summarize_oldest import (
    SummarizeOldest,
    is_existing_summary,
    summarize_oldest,
    summarizer_request,
)
from afp_runtime.window.strategies.token_budget import TokenBudget, token_budget

__all__ = [
    "SlidingWindow",
    "SummarizeOldest",
    "TokenBudget",
    "is_existing_summary",
    "sliding_window",
    "summarize_oldest",
    "summarizer_request",
    "token_budget",
]
