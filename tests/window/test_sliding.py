"""The sliding-window strategy (docs/window.md#sliding-window; docs/window.md#how-this-is-tested
case 26)."""

from __future__ import annotations

import msgspec
import pytest

from afp_runtime.errors import WindowConfigError
from afp_runtime.messages import Usage
from afp_runtime.window.records import SlidingWindowRecord
from afp_runtime.window.strategies import SlidingWindow, sliding_window
from tests.window._build import TASK, R, U, cr, ikw, visit, wire


class TestCase26:
    """Case 26: ``[U TASK, *R c1, *R c2]`` at keep 3 and keep 2."""

    async def test_within_the_keep_depth_it_does_not_engage(self) -> None:
        """Case 26: keep 3 over 3 turns returns None (no record)."""
        history = [U(TASK), *R("c1"), *R("c2")]
        assert await sliding_window(keep_recent_turns=3).plan(visit(history, anchor=0)) is None

    async def test_everything_refuses(self) -> None:
        """Case 26: keep 2 with the anchor at 0 files a record that removed nothing."""
        history = [U(TASK), *R("c1"), *R("c2")]
        result = await sliding_window(keep_recent_turns=2).plan(visit(history, anchor=0))
        assert result is not None
        record = result.record
        assert isinstance(record, SlidingWindowRecord)
        assert record.removed_message_count == 0
        assert record.removed_stage_ids == ()
        assert record.refusals == (cr(0, 0), ikw(1, 1), ikw(2, 3))
        assert (record.turns_before, record.turns_after) == (3, 3)
        assert (record.window_chars_before, record.window_chars_after) == (135, 135)
        assert result.window is msgspec.UNSET
        assert result.budget_pressure is None
        assert result.spend is None


async def test_record_fields_in_spec_order() -> None:
    """The sliding-window record encodes its keys in the order of docs/window.md#sliding-window."""
    history = [U(TASK), *R("c1", c="x" * 900), *R("c2"), *R("c3")]
    result = await sliding_window(keep_recent_turns=2).plan(visit(history))
    assert result is not None
    data = wire(result.record)
    assert isinstance(data, dict)
    assert list(data) == [
        "strategy",
        "iteration",
        "keepRecentTurns",
        "removedStageIds",
        "removedMessageCount",
        "windowCharsBefore",
        "windowCharsAfter",
        "turnsBefore",
        "turnsAfter",
        "refusals",
    ]
    assert data["strategy"] == "sliding-window"
    assert data["keepRecentTurns"] == 2


async def test_count_only_trigger_ignores_usage() -> None:
    """The trigger is the turn count: a zero usage reading neither raises nor matters."""
    history = [U(TASK), *R("c1", c="x" * 900), *R("c2"), *R("c3")]
    strategy = sliding_window(keep_recent_turns=2)
    result = await strategy.plan(visit(history, measured=Usage(input=0, output=0)))
    assert result is not None
    assert result.record.removed_message_count == 3


def test_factory_builds_a_named_unbilled_strategy() -> None:
    """The factory returns a strategy named ``sliding-window`` with no billing."""
    strategy = sliding_window(keep_recent_turns=4)
    assert isinstance(strategy, SlidingWindow)
    assert strategy.name == "sliding-window"
    assert strategy.billing is None
    assert strategy.keep_recent_turns == 4


@pytest.mark.parametrize("value", [0, -1, 1.0, True, "2", None])
def test_bad_keep_recent_turns_is_refused(value: object) -> None:
    """keep_recent_turns must be an int >= 1; the error names factory, option and value."""
    with pytest.raises(WindowConfigError) as caught:
        sliding_window(keep_recent_turns=value)  # type: ignore[arg-type]
    assert caught.value.context["factory"] == "sliding_window"
    assert caught.value.context["option"] == "keep_recent_turns"
    assert repr(value) in str(caught.value)


def test_keep_recent_turns_is_required() -> None:
    """Leaving keep_recent_turns out is a WindowConfigError naming it."""
    with pytest.raises(WindowConfigError) as caught:
        sliding_window()
    assert caught.value.context["option"] == "keep_recent_turns"


def test_options_are_keywords_only() -> None:
    """A positional option is a WindowConfigError naming the factory."""
    with pytest.raises(WindowConfigError) as caught:
        sliding_window(2)
    assert caught.value.context["factory"] == "sliding_window"
