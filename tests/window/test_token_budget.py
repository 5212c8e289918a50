"""The token-budget strategy (docs/window.md#token-budget; docs/window.md#how-this-is-tested cases
27, 28)."""

from __future__ import annotations

import math

import msgspec
import pytest

from afp_runtime.errors import CompactionUnmeasurableError, WindowConfigError
from afp_runtime.messages import Message, Usage
from afp_runtime.window.records import TokenBudgetRecord
from afp_runtime.window.strategies import token_budget
from afp_runtime.window.texts import build_drop_notice
from afp_runtime.window.visit import BudgetPressure
from tests.window._build import TASK, A, R, T, U, ikw, visit, wire


def F(x: int, y: int) -> list[Message]:
    """``[U TASK, A[c1], T c1 "a"*x, A[c2], T c2 "b"*y, A[c3], T c3 "c"*y]``."""
    return [
        U(TASK),
        A(["c1"]),
        T("c1", "a" * x),
        A(["c2"]),
        T("c2", "b" * y),
        A(["c3"]),
        T("c3", "c" * y),
    ]


class TestCase27:
    """Case 27: the trigger, in order, and an over-budget visit that removes nothing."""

    async def test_no_reading_does_not_engage(self) -> None:
        """Case 27: measured None returns None."""
        strategy = token_budget(threshold_tokens=1000)
        assert await strategy.plan(visit(F(700, 700), measured=None)) is None

    async def test_zero_reading_is_unmeasurable(self) -> None:
        """Case 27: ``{0, 0}`` raises CompactionUnmeasurableError naming the provider."""
        strategy = token_budget(threshold_tokens=1000)
        with pytest.raises(CompactionUnmeasurableError) as caught:
            await strategy.plan(
                visit(F(700, 700), measured=Usage(input=0, output=0), provider_name="acme")
            )
        assert caught.value.provider == "acme"
        assert "acme" in str(caught.value)

    async def test_zero_input_with_output_does_not_engage(self) -> None:
        """Case 27: ``{0, 5}`` returns None (0 input is under any threshold)."""
        strategy = token_budget(threshold_tokens=1000)
        assert await strategy.plan(visit(F(700, 700), measured=Usage(input=0, output=5))) is None

    async def test_at_the_threshold_does_not_engage(self) -> None:
        """Case 27: ``{1000, 9}`` against 1000 returns None (only above engages)."""
        strategy = token_budget(threshold_tokens=1000)
        reading = Usage(input=1000, output=9)
        assert await strategy.plan(visit(F(700, 700), measured=reading)) is None

    async def test_fractional_threshold_engages(self) -> None:
        """Case 27: threshold 999.5 with ``{1000, 9}`` engages."""
        strategy = token_budget(threshold_tokens=999.5)
        result = await strategy.plan(visit(F(700, 700), measured=Usage(input=1000, output=9)))
        assert result is not None
        assert result.record.threshold_tokens == 999.5  # type: ignore[union-attr]

    async def test_over_budget_inside_the_keep_depth(self) -> None:
        """Case 27: ``[U TASK, *R c1]`` at ``{1001, 9}`` files a record that removed nothing."""
        history = [U(TASK), *R("c1")]
        strategy = token_budget(threshold_tokens=1000)
        result = await strategy.plan(visit(history, measured=Usage(input=1001, output=9)))
        assert result is not None
        record = result.record
        assert isinstance(record, TokenBudgetRecord)
        assert record.over_budget is True
        assert record.removed_message_count == 0
        assert record.refusals == (ikw(0, 0), ikw(1, 1))
        assert (record.window_chars_before, record.window_chars_after) == (133, 133)
        assert result.budget_pressure == BudgetPressure(
            cap_tokens=1000, projected_tokens=1001, plan_action="none"
        )
        assert result.window is msgspec.UNSET
        assert result.spend is None


class TestCase28:
    """Case 28: an over-budget visit that drops the oldest span."""

    async def test_record_on_the_wire(self) -> None:
        """Case 28: the record's keys, values and order are those of docs/window.md#token-budget."""
        strategy = token_budget(threshold_tokens=1000, keep_recent_turns=2)
        result = await strategy.plan(visit(F(700, 700), measured=Usage(input=5000, output=10)))
        assert result is not None
        notice = build_drop_notice(3, 4, "token-budget", False, ["look"])
        expected = {
            "strategy": "token-budget",
            "iteration": 4,
            "measuredTokens": 5000,
            "thresholdTokens": 1000,
            "overBudget": True,
            "keepRecentTurns": 2,
            "removedStageIds": ["writer#0", "writer#1", "writer#2"],
            "removedMessageCount": 3,
            "windowCharsBefore": 2231,
            "windowCharsAfter": 1400 + len(notice),
            "refusals": [
                {"reason": "inside-keep-window", "turnIndex": 2, "messageIndex": 3},
                {"reason": "inside-keep-window", "turnIndex": 3, "messageIndex": 5},
            ],
        }
        data = wire(result.record)
        assert data == expected
        assert isinstance(data, dict)
        assert list(data) == list(expected)
        assert result.window is not msgspec.UNSET
        assert result.window[0].content == notice

    async def test_budget_pressure_evicts(self) -> None:
        """Case 28: pressure is cap 1000, projected 5000, ``evict``, in tokens (overflow 4000)."""
        strategy = token_budget(threshold_tokens=1000, keep_recent_turns=2)
        result = await strategy.plan(visit(F(700, 700), measured=Usage(input=5000, output=10)))
        assert result is not None
        pressure = result.budget_pressure
        assert pressure == BudgetPressure(
            cap_tokens=1000, projected_tokens=5000, plan_action="evict"
        )
        assert pressure.unit == "tokens"
        assert max(0, pressure.projected_tokens - pressure.cap_tokens) == 4000
        assert result.spend is None


def test_defaults_and_name() -> None:
    """The factory's default keep is 6; the strategy is named ``token-budget``, unbilled."""
    strategy = token_budget(threshold_tokens=12.5)
    assert strategy.name == "token-budget"
    assert strategy.keep_recent_turns == 6
    assert strategy.threshold_tokens == 12.5
    assert strategy.billing is None


@pytest.mark.parametrize("value", [0, -3, math.inf, math.nan, True, "1000", None])
def test_bad_threshold_is_refused(value: object) -> None:
    """threshold_tokens must be a finite number > 0 (bool refused), naming factory and option."""
    with pytest.raises(WindowConfigError) as caught:
        token_budget(threshold_tokens=value)  # type: ignore[arg-type]
    assert caught.value.context["factory"] == "token_budget"
    assert caught.value.context["option"] == "threshold_tokens"


def test_threshold_is_required() -> None:
    """Leaving threshold_tokens out is a WindowConfigError naming it."""
    with pytest.raises(WindowConfigError) as caught:
        token_budget()
    assert caught.value.context["option"] == "threshold_tokens"


@pytest.mark.parametrize("value", [0, False, 2.0])
def test_bad_keep_is_refused(value: object) -> None:
    """keep_recent_turns must be an int >= 1 here too."""
    with pytest.raises(WindowConfigError) as caught:
        token_budget(threshold_tokens=10, keep_recent_turns=value)  # type: ignore[arg-type]
    assert caught.value.context["option"] == "keep_recent_turns"
