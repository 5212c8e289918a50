"""The sliding-window strategy: keep the last N turns, drop the oldest
(docs/window.md#sliding-window).

It counts turns only: it needs no usage, never calls a model, never raises at run time and
reports no budget pressure.
"""

from __future__ import annotations

import msgspec

from afp_runtime.window.drop import drop_oldest_span
from afp_runtime.window.records import SlidingWindowRecord
from afp_runtime.window.strategies import _options
from afp_runtime.window.turns import turn_count
from afp_runtime.window.visit import Billing, WindowResult, WindowVisit

NAME = "sliding-window"


class SlidingWindow:
    """A built sliding-window strategy (make it with ``sliding_window``).

    Attributes:
        name: ``sliding-window``.
        billing: None (it makes no model call).
        reads_usage: False: it counts turns, so a provider that reports no token usage does
            not concern it (the window stage warns only strategies that read usage).
        keep_recent_turns: how many recent turns always stay.
    """

    name = NAME
    billing: Billing | None = None
    reads_usage = False

    def __init__(self, keep_recent_turns: int) -> None:
        self.keep_recent_turns = keep_recent_turns

    def __repr__(self) -> str:
        return f"sliding_window(keep_recent_turns={self.keep_recent_turns})"

    async def plan(self, visit: WindowVisit) -> WindowResult | None:
        """Drop the oldest removable turns when the window holds more than the keep depth."""
        turns_before = len(visit.turns)
        if turns_before <= self.keep_recent_turns:
            return None
        outcome = drop_oldest_span(visit, self.keep_recent_turns, NAME)
        window = outcome.window
        # A notice is its own turn; with nothing removed the count is unchanged.
        turns_after = turns_before if window is msgspec.UNSET else turn_count(window)
        record = SlidingWindowRecord(
            iteration=visit.iteration,
            keep_recent_turns=self.keep_recent_turns,
            removed_stage_ids=outcome.removed_stage_ids,
            removed_message_count=outcome.removed_message_count,
            window_chars_before=outcome.window_chars_before,
            window_chars_after=outcome.window_chars_after,
            turns_before=turns_before,
            turns_after=turns_after,
            refusals=outcome.refusals,
        )
        return WindowResult(
            record=record,
            evictions=outcome.evictions,
            window=window,
            rebase=outcome.rebase,
        )


def sliding_window(*args: object, keep_recent_turns: int = _options.MISSING) -> SlidingWindow:
    """A strategy that keeps the last ``keep_recent_turns`` turns and drops older ones.

    Args:
        keep_recent_turns: required; an int >= 1.

    Raises:
        WindowConfigError: an option is missing, positional or invalid (names the factory,
            option and value).
    """
    _options.refuse_positional("sliding_window", args)
    return SlidingWindow(_options.keep_turns("sliding_window", keep_recent_turns))
