"""Widening, facts and the one conversion per window and tool
(docs/time.md#widening-and-single-conversion; cases 19-23)."""

from __future__ import annotations

import pytest

from afp_runtime.time._convert import (
    Conversion,
    Refusal,
    convert_for_tool,
    convert_widened,
    trimmed_by_tool,
)
from afp_runtime.time._facts import (
    Facts,
    form_facts,
    partly_beyond_retention,
    period_fact_problem,
    tool_facts,
)
from afp_runtime.time._forms import Bound, BoundsForm, DayForm, LookbackForm
from tests.periods._build import (
    DAY,
    EPOCH,
    LA,
    LOOKBACK,
    LOOKBACK_WINDOW,
    MORNING,
    NOW,
    TODAY,
    TOMORROW,
    YDAY,
    YMORN,
    ctx,
    rng,
    span_ending_now,
    window,
)

BOUNDS_ISO = BoundsForm(
    start=Bound(argument="from", as_="iso"),
    end=Bound(argument="to", as_="iso", edge="exclusive"),
)
BOUNDS24 = BoundsForm(
    start=Bound(argument="from", as_="iso"),
    end=Bound(argument="to", as_="iso", edge="exclusive"),
    max_range="24h",
)
LATE_EXTRA = rng("2026-10-08T15:41:00Z", "2026-10-09T15:40:00.001Z")


class TestCase19:
    """YMORN widened through look-back forms."""

    def test_lookback(self) -> None:
        """now - from is 1480 min; the tool reads from 15:00Z the day before to now."""
        found = convert_widened(window(YMORN), [LOOKBACK], ctx())
        assert found == Conversion(
            form=0,
            values={"w": "1480m"},
            sent=rng("2026-10-08T15:00:00Z", "2026-10-09T15:40:00.001Z"),
            extra=(LATE_EXTRA,),
        )
        assert found is not None
        assert found.sent is not None
        assert found.sent.start == "2026-10-08T15:00:00Z"
        assert found.extra[0].end == "2026-10-09T15:40:00.001Z"

    def test_signed(self) -> None:
        """A signed form writes -1480m."""
        found = convert_widened(window(YMORN), [LookbackForm(argument="w", signed=True)], ctx())
        assert found is not None
        assert found.values == {"w": "-1480m"}

    def test_days_only(self) -> None:
        """With units d the length rounds up to 2d, adding a part before the window."""
        found = convert_widened(window(YMORN), [LookbackForm(argument="w", units="d")], ctx())
        assert found is not None
        assert found.values == {"w": "2d"}
        assert found.extra == (rng("2026-10-07T15:40:00Z", "2026-10-08T15:00:00Z"), LATE_EXTRA)

    def test_cap_passes_the_form_over(self) -> None:
        """With a 24h cap 1480 min is too long; a day form after it takes the window."""
        capped = Facts(max_range="24h")
        assert convert_widened(window(YMORN), [LOOKBACK], ctx(), facts=capped) is None
        found = convert_widened(window(YMORN), [LOOKBACK, DAY], ctx(), facts=capped)
        assert found is not None
        assert found.form == 1


class TestCase20:
    """MORNING widened with DAY."""

    def test_day(self) -> None:
        """The tool reads the whole local date, and the extra is before and after."""
        found = convert_widened(window(MORNING), [DAY], ctx())
        assert found == Conversion(
            form=0,
            values={"date": "2026-10-09", "tz": LA},
            sent=rng("2026-10-09T07:00:00Z", "2026-10-10T07:00:00Z"),
            extra=(
                rng("2026-10-09T07:00:00Z", "2026-10-09T15:00:00Z"),
                rng("2026-10-09T15:41:00Z", "2026-10-10T07:00:00Z"),
            ),
        )


class TestWidening:
    """The limits of docs/time.md#widening."""

    def test_span_ending_now_is_never_widened(self) -> None:
        """A span ending now does not widen, even where a day form could cover it."""
        assert convert_widened(span_ending_now("90s"), [LOOKBACK, DAY], ctx()) is None

    def test_exact_candidate_is_not_a_widening(self) -> None:
        """TODAY in a day form has no extra, so widening does not consider it."""
        assert convert_widened(window(TODAY), [DAY], ctx()) is None

    def test_window_still_running_is_not_widened_to_a_lookback(self) -> None:
        """A window ending within a step of now (or later) cannot widen to a look-back."""
        asked = rng("2026-10-09T14:00:00Z", "2026-10-09T15:39:00Z")
        assert convert_widened(window(asked), [LOOKBACK], ctx()) is None
        earlier = rng("2026-10-09T14:00:00Z", "2026-10-09T15:38:59.999Z")
        found = convert_widened(window(earlier), [LOOKBACK], ctx())
        assert found is not None
        assert found.values == {"w": "100m"}

    def test_window_over_two_dates_does_not_fit_a_day(self) -> None:
        """A day form widens only a window within one local date."""
        asked = rng("2026-10-08T23:00:00-07:00", "2026-10-09T01:00:00-07:00")
        assert convert_widened(window(asked), [DAY], ctx()) is None

    def test_only_day_and_lookback_forms_widen(self) -> None:
        """Bounds forms never widen."""
        assert convert_widened(window(MORNING), [EPOCH, BOUNDS_ISO], ctx()) is None


class TestCase21:
    """convert_for_tool with YDAY and a look-back-only tool."""

    def test_widened_lookback(self) -> None:
        """YDAY becomes 1960m; the tool also reads today until now."""
        found = convert_for_tool(window(YDAY), [LOOKBACK_WINDOW], Facts(), ctx())
        assert found == Conversion(
            form=0,
            values={"window": "1960m"},
            sent=rng("2026-10-08T07:00:00Z", "2026-10-09T15:40:00.001Z"),
            extra=(rng("2026-10-09T07:00:00Z", "2026-10-09T15:40:00.001Z"),),
        )

    def test_cap_leaves_no_form(self) -> None:
        """maxRange 24h → no-form-holds (YDAY's reach is within it, the widening is not)."""
        found = convert_for_tool(window(YDAY), [LOOKBACK_WINDOW], Facts(max_range="24h"), ctx())
        assert found == Refusal(refused="no-form-holds")

    def test_today_has_not_ended(self) -> None:
        """TODAY with a look-back-only tool → no-form-holds."""
        assert convert_for_tool(window(TODAY), [LOOKBACK_WINDOW], Facts(), ctx()) == Refusal(
            refused="no-form-holds"
        )

    def test_direction_future(self) -> None:
        """A past window for a future-only tool → time-past."""
        found = convert_for_tool(window(YDAY), [LOOKBACK_WINDOW], Facts(direction="future"), ctx())
        assert found == Refusal(refused="time-past")

    def test_partly_beyond_retention(self) -> None:
        """retention 30h → the same conversion, marked partly beyond retention."""
        found = convert_for_tool(window(YDAY), [LOOKBACK_WINDOW], Facts(retention="30h"), ctx())
        assert isinstance(found, Conversion)
        assert found.partly_beyond_retention
        assert found.values == {"window": "1960m"}

    def test_multi_day(self) -> None:
        """YDAY through TODAY with [DAY] → multi-day."""
        asked = rng(YDAY.start, TODAY.end)
        assert convert_for_tool(window(asked), [DAY], Facts(), ctx()) == Refusal(
            refused="multi-day"
        )

    def test_multi_day_needs_every_form_to_be_a_day(self) -> None:
        """A look-back form among the forms makes the refusal no-form-holds."""
        asked = rng(YDAY.start, TODAY.end)
        found = convert_for_tool(window(asked), [DAY, LOOKBACK], Facts(), ctx())
        assert found == Refusal(refused="no-form-holds")

    def test_exact_form_first(self) -> None:
        """[EPOCH, LOOKBACK] writes YDAY exactly in form 0."""
        found = convert_for_tool(window(YDAY), [EPOCH, LOOKBACK_WINDOW], Facts(), ctx())
        assert isinstance(found, Conversion)
        assert found.form == 0
        assert found.values == {"start_time": 1791442800000, "end_time": 1791529200000}
        assert not found.widened


class TestCase22:
    """Cap boundaries with [LOOKBACK] and maxRange 24h."""

    CAP = Facts(max_range="24h")

    def test_reach_equal_to_the_cap(self) -> None:
        """A window starting exactly 24h before now widens to 1d."""
        asked = rng("2026-10-08T15:40:00Z", "2026-10-08T16:40:00Z")
        found = convert_for_tool(window(asked), [LOOKBACK_WINDOW], self.CAP, ctx())
        assert isinstance(found, Conversion)
        assert found.values == {"window": "1d"}

    def test_one_minute_more(self) -> None:
        """Starting at 15:39Z the widened look-back exceeds the cap."""
        asked = rng("2026-10-08T15:39:00Z", "2026-10-08T16:40:00Z")
        assert convert_for_tool(window(asked), [LOOKBACK_WINDOW], self.CAP, ctx()) == Refusal(
            refused="no-form-holds"
        )

    def test_span_ending_now_of_the_cap(self) -> None:
        """A 24h span ending now is 1d, or [now - 24h, now) in iso bounds."""
        found = convert_for_tool(span_ending_now("24h"), [LOOKBACK_WINDOW], self.CAP, ctx())
        assert isinstance(found, Conversion)
        assert found.values == {"window": "1d"}
        bounds = convert_for_tool(span_ending_now("24h"), [BOUNDS_ISO], self.CAP, ctx())
        assert isinstance(bounds, Conversion)
        assert bounds.values == {"from": "2026-10-08T15:40:00Z", "to": "2026-10-09T15:40:00Z"}

    def test_span_one_minute_longer(self) -> None:
        """A 1441m span ending now → over-max-range."""
        found = convert_for_tool(span_ending_now("1441m"), [LOOKBACK_WINDOW], self.CAP, ctx())
        assert found == Refusal(refused="over-max-range")


class TestCase23:
    """Per-form caps."""

    def test_long_span_goes_to_the_uncapped_form(self) -> None:
        """A 48h span skips the capped bounds form and is written 2d by the look-back."""
        found = convert_for_tool(
            span_ending_now("48h"), [BOUNDS24, LOOKBACK_WINDOW], Facts(), ctx()
        )
        assert isinstance(found, Conversion)
        assert (found.form, found.values) == (1, {"window": "2d"})

    def test_span_within_the_cap_uses_the_bounds(self) -> None:
        """A 24h span fits form 0's cap."""
        found = convert_for_tool(
            span_ending_now("24h"), [BOUNDS24, LOOKBACK_WINDOW], Facts(), ctx()
        )
        assert isinstance(found, Conversion)
        assert (found.form, found.values) == (
            0,
            {"from": "2026-10-08T15:40:00Z", "to": "2026-10-09T15:40:00Z"},
        )

    def test_every_form_capped(self) -> None:
        """With the look-back capped at 36h, a 48h span → over-max-range."""
        capped = LookbackForm(argument="window", max_range="36h")
        found = convert_for_tool(span_ending_now("48h"), [BOUNDS24, capped], Facts(), ctx())
        assert found == Refusal(refused="over-max-range")

    def test_tool_facts(self) -> None:
        """The largest cap among the forms; none as soon as one form has none."""
        assert tool_facts([BOUNDS24, LOOKBACK], Facts(max_range="7d")) == Facts(max_range="7d")
        assert tool_facts([BOUNDS24, LOOKBACK], Facts()) == Facts()
        capped = LookbackForm(argument="w", max_range="36h")
        assert tool_facts([BOUNDS24, capped], Facts(direction="past")) == Facts(
            direction="past", max_range="36h"
        )
        assert tool_facts([EPOCH], Facts(max_range="1h")) == Facts(max_range="1h")

    def test_form_facts(self) -> None:
        """A form's own cap replaces the period's."""
        assert form_facts(BOUNDS24, Facts(direction="past")) == Facts(
            direction="past", max_range="24h"
        )
        assert form_facts(EPOCH, Facts(max_range="1h")) == Facts(max_range="1h")


class TestFacts:
    """period_fact_problem, in order (docs/time.md#facts-checked-against-a-range)."""

    @pytest.mark.parametrize(
        ("facts", "asked", "problem"),
        [
            (Facts(direction="past"), TOMORROW, "time-future"),
            (Facts(direction="past"), rng("2026-10-09T15:40:00Z", "2026-10-09T16:00:00Z"), None),
            (Facts(direction="future"), YMORN, "time-past"),
            (Facts(direction="future"), MORNING, None),
            (
                Facts(direction="future"),
                rng("2026-10-09T15:00:00Z", "2026-10-09T15:40:00Z"),
                "time-past",
            ),
            (Facts(retention="12h"), YMORN, "beyond-retention"),
            (Facts(retention="30h"), YDAY, None),
            (Facts(max_range="30m"), YMORN, "over-max-range"),
            (Facts(max_range="41m"), YMORN, None),
            (Facts(direction="any", max_range="30m"), TOMORROW, "over-max-range"),
            (Facts(direction="past", max_range="30m"), TOMORROW, "time-future"),
        ],
    )
    def test_first_failure(self, facts: Facts, asked: object, problem: str | None) -> None:
        """The first fact the range breaks is reported; undeclared facts are not checked."""
        assert period_fact_problem(asked, facts, NOW) == problem  # type: ignore[arg-type]

    def test_partly_beyond_retention(self) -> None:
        """Case 33's range straddles now - 30d."""
        asked = rng("2026-09-08T15:40:00Z", "2026-09-10T15:40:00Z")
        assert partly_beyond_retention(asked, Facts(retention="30d"), NOW)
        assert not partly_beyond_retention(asked, Facts(), NOW)
        assert not partly_beyond_retention(YMORN, Facts(retention="30d"), NOW)

    def test_case_33_fills_and_marks(self) -> None:
        """The same range as a window is written and marked partly beyond retention."""
        asked = rng("2026-09-08T15:40:00Z", "2026-09-10T15:40:00Z")
        found = convert_for_tool(window(asked), [EPOCH], Facts(retention="30d"), ctx())
        assert isinstance(found, Conversion)
        assert found.values == {"start_time": 1788882000000, "end_time": 1789054800000}
        assert found.partly_beyond_retention

    def test_granularity(self) -> None:
        """One minute unless declared."""
        assert Facts().granularity_ms == 60_000
        assert Facts(granularity="5s").granularity_ms == 5_000


class TestFiltersToAsked:
    """docs/time.md#tools-that-filter-to-the-asked-window."""

    def test_trimmed_only_when_widened(self) -> None:
        """A widened fill to a filtering tool is trimmed by the tool; an exact one is not."""
        filtering = Facts(filters_to_asked=True)
        widened = convert_for_tool(window(YMORN), [LOOKBACK], filtering, ctx())
        exact = convert_for_tool(window(YMORN), [EPOCH], filtering, ctx())
        assert isinstance(widened, Conversion) and isinstance(exact, Conversion)
        assert trimmed_by_tool(widened, filtering)
        assert not trimmed_by_tool(widened, Facts())
        assert not trimmed_by_tool(exact, filtering)


def test_unknown_zone_leaves_local_forms_unusable() -> None:
    """A day form with no usable zone never writes (no multi-day guess either)."""
    asked = rng(YDAY.start, TODAY.end)
    assert convert_for_tool(window(asked), [DAY], Facts(), ctx(zone=None)) == Refusal(
        refused="no-form-holds"
    )
    assert convert_for_tool(
        window(TODAY), [DayForm(argument="d")], Facts(), ctx(agent_zone="PST")
    ) == Refusal(refused="no-form-holds")
