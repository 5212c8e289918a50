"""Writing a window into a form exactly (docs/time.md#writing-a-window-into-a-form; cases 12-17 of
docs/time.md#how-this-is-tested)."""

from __future__ import annotations

from afp_runtime.time import Period
from afp_runtime.time._convert import Conversion, convert_exact
from afp_runtime.time._declare import forms_of
from afp_runtime.time._forms import (
    Bound,
    BoundsForm,
    DayForm,
    JoinedForm,
    LookbackForm,
    ObjectForm,
    ObjectKeys,
    ZoneArgument,
)
from afp_runtime.time._instants import parse_instant
from tests.periods._build import (
    DAY,
    EPOCH,
    LA,
    MORNING,
    MS_1500,
    MS_1540,
    SIGNED,
    TODAY,
    WALL,
    ctx,
    rng,
    span_ending_now,
    window,
)


def bounds(as_: str, edge: str, *, zone: bool = False) -> BoundsForm:
    """A bounds form start/end of one spelling."""
    return BoundsForm(
        start=Bound(argument="start", as_=as_),  # type: ignore[arg-type]
        end=Bound(argument="end", as_=as_, edge=edge),  # type: ignore[arg-type]
        zone=ZoneArgument(argument="tz") if zone else None,
    )


class TestCase12:
    """MORNING written as iso-range, iso bounds and epoch-ms bounds."""

    def test_iso_range_shorthand(self) -> None:
        """The inclusive end is to minus one second, in the offset the range was written in."""
        forms = forms_of(Period(argument="w", spelling="iso-range"))
        assert convert_exact(window(MORNING), forms, ctx()) == Conversion(
            form=0, values={"w": "2026-10-09T08:00:00-07:00..2026-10-09T08:40:59-07:00"}
        )

    def test_iso_bounds_exclusive(self) -> None:
        """Exclusive iso bounds are the instants themselves."""
        found = convert_exact(window(MORNING), [bounds("iso", "exclusive")], ctx())
        assert found is not None
        assert found.values == {
            "start": "2026-10-09T08:00:00-07:00",
            "end": "2026-10-09T08:41:00-07:00",
        }
        assert not found.rounded

    def test_epoch_ms_inclusive(self) -> None:
        """Inclusive epoch-ms ends one millisecond before to."""
        found = convert_exact(window(MORNING), [bounds("epoch-ms", "inclusive")], ctx())
        assert found is not None
        assert found.values == {"start": 1791558000000, "end": 1791560459999}


class TestCase13:
    """Epoch seconds round outward."""

    def test_epoch_s_exclusive_rounds_outward(self) -> None:
        """A fractional start rounds down, a fractional end up, and rounded is set."""
        asked = rng("2026-10-09T08:00:00.250-07:00", "2026-10-09T08:41:00.500-07:00")
        found = convert_exact(window(asked), [bounds("epoch-s", "exclusive")], ctx())
        assert found == Conversion(
            form=0, values={"start": 1791558000, "end": 1791560461}, rounded=True
        )

    def test_epoch_s_on_whole_seconds_is_not_rounded(self) -> None:
        """Whole seconds need no rounding; an inclusive end is one second earlier."""
        found = convert_exact(window(MORNING), [bounds("epoch-s", "inclusive")], ctx())
        assert found == Conversion(form=0, values={"start": 1791558000, "end": 1791560459})

    def test_sub_millisecond_instants_are_never_exact(self) -> None:
        """iso and epoch-ms cannot write a sub-millisecond instant; the next form is tried."""
        asked = rng("2026-10-09T08:00:00.0000001-07:00", "2026-10-09T08:41:00-07:00")
        forms = [bounds("iso", "exclusive"), bounds("epoch-ms", "exclusive"), EPOCH]
        assert convert_exact(window(asked), forms, ctx()) is None


class TestCase14:
    """Wall values in the window's zone."""

    def test_wall_range_with_zone_argument(self) -> None:
        """Local times without offset, inclusive end one second earlier, plus the zone."""
        forms = forms_of(Period(argument="w", spelling="wall-range", zone_argument="tz"))
        found = convert_exact(window(MORNING), forms, ctx())
        assert found is not None
        assert found.values == {"w": "2026-10-09T08:00:00..2026-10-09T08:40:59", "tz": LA}

    def test_wall_uses_the_windows_zone(self) -> None:
        """A window in another zone writes its local time and that zone."""
        found = convert_exact(window(MORNING), [WALL], ctx(zone="Europe/London"))
        assert found is not None
        assert found.values == {
            "start": "2026-10-09T16:00:00",
            "end": "2026-10-09T16:41:00",
            "tz": "Europe/London",
        }

    def test_wall_with_milliseconds(self) -> None:
        """A millisecond step writes .mmm, also when the inclusive end falls on a second."""
        asked = rng("2026-10-09T08:00:00.5-07:00", "2026-10-09T08:41:00.001-07:00")
        inclusive = bounds("wall", "inclusive", zone=True)
        found = convert_exact(window(asked), [inclusive], ctx())
        assert found is not None
        assert found.values == {
            "start": "2026-10-09T08:00:00.500",
            "end": "2026-10-09T08:41:00.000",
            "tz": LA,
        }

    def test_repeated_hour_is_not_written(self) -> None:
        """A wall value in the repeated hour is not one instant; the next form is used."""
        asked = rng("2026-11-01T01:30:00-07:00", "2026-11-01T01:45:00-07:00")
        found = convert_exact(window(asked), [WALL, EPOCH], ctx())
        assert found is not None
        assert found.form == 1

    def test_wall_without_any_zone_is_unusable(self) -> None:
        """A wall form with no zone available cannot be used."""
        assert convert_exact(window(MORNING), [WALL], ctx(zone=None)) is None
        agent_wall = bounds("wall", "exclusive")
        assert convert_exact(window(MORNING), [agent_wall], ctx(agent_zone=None)) is None
        found = convert_exact(window(MORNING), [agent_wall], ctx(zone=None))
        assert found is not None
        assert found.values == {"start": "2026-10-09T08:00:00", "end": "2026-10-09T08:41:00"}


class TestCase15:
    """Local dates."""

    def test_day_form(self) -> None:
        """TODAY is one local date."""
        found = convert_exact(window(TODAY), [DAY], ctx())
        assert found == Conversion(form=0, values={"date": "2026-10-09", "tz": LA})

    def test_date_bounds_inclusive(self) -> None:
        """Inclusive date bounds write the same date twice."""
        found = convert_exact(window(TODAY), [bounds("date", "inclusive", zone=True)], ctx())
        assert found is not None
        assert found.values == {"start": "2026-10-09", "end": "2026-10-09", "tz": LA}

    def test_date_bounds_exclusive(self) -> None:
        """An exclusive date bound is the date starting at to."""
        found = convert_exact(window(TODAY), [bounds("date", "exclusive", zone=True)], ctx())
        assert found is not None
        assert found.values == {"start": "2026-10-09", "end": "2026-10-10", "tz": LA}

    def test_partial_day_cannot_be_written(self) -> None:
        """00:00-07:00 … 23:00-07:00 with DAY cannot be written exactly."""
        asked = rng("2026-10-09T00:00-07:00", "2026-10-09T23:00-07:00")
        assert convert_exact(window(asked), [DAY], ctx()) is None
        assert convert_exact(window(asked), [bounds("date", "exclusive", zone=True)], ctx()) is None

    def test_day_without_midnight(self) -> None:
        """Santiago's 2026-09-06 (begins 01:00-03:00) is one day."""
        asked = rng("2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00")
        found = convert_exact(window(asked), [DAY], ctx(zone="America/Santiago"))
        assert found is not None
        assert found.values == {"date": "2026-09-06", "tz": "America/Santiago"}


class TestCase16:
    """A span ending now."""

    def test_signed_lookback(self) -> None:
        """A 40m span ending now becomes -40m for a signed form."""
        found = convert_exact(span_ending_now("40m"), [SIGNED], ctx())
        assert found == Conversion(form=0, values={"w": "-40m"})

    def test_epoch_writes_now_minus_length_to_now(self) -> None:
        """The span written is [now - L, now)."""
        found = convert_exact(span_ending_now("40m"), [EPOCH], ctx())
        assert found is not None
        assert found.values == {"start_time": MS_1500, "end_time": MS_1540}

    def test_seconds_in_the_shortest_allowed_spelling(self) -> None:
        """3600s with unsigned mhdw is 1h; 90s has no spelling in mhdw."""
        unsigned = LookbackForm(argument="w")
        found = convert_exact(span_ending_now("3600s"), [unsigned], ctx())
        assert found is not None
        assert found.values == {"w": "1h"}
        assert convert_exact(span_ending_now("90s"), [unsigned], ctx()) is None

    def test_seconds_when_the_form_opts_in(self) -> None:
        """A form with units smhdw writes 90s."""
        found = convert_exact(
            span_ending_now("90s"), [LookbackForm(argument="w", units="smhdw")], ctx()
        )
        assert found is not None
        assert found.values == {"w": "90s"}

    def test_iso_range_of_a_span_ending_now(self) -> None:
        """Case 40: 2 hours ending 16:00Z in iso-range ends 15:59:59Z."""
        now = parse_instant("2026-10-09T16:00:00Z")
        forms = forms_of(Period(argument="window", accepts=("iso-range", "signed-lookback")))
        found = convert_exact(span_ending_now("2h", now), forms, ctx(now))
        assert found is not None
        assert found.values == {"window": "2026-10-09T14:00:00Z..2026-10-09T15:59:59Z"}


class TestCase17:
    """A range ending near now, written as a look-back."""

    def test_start_rounded_up_to_the_unit(self) -> None:
        """15:00:20Z … 15:40:00Z becomes -40m, rounded."""
        asked = rng("2026-10-09T15:00:20Z", "2026-10-09T15:40:00Z")
        found = convert_exact(window(asked), [SIGNED], ctx())
        assert found == Conversion(form=0, values={"w": "-40m"}, rounded=True)

    def test_range_that_ended_long_ago_is_not_a_lookback(self) -> None:
        """14:00Z … 15:00Z is not expressible as a look-back."""
        asked = rng("2026-10-09T14:00:00Z", "2026-10-09T15:00:00Z")
        assert convert_exact(window(asked), [SIGNED], ctx()) is None

    def test_next_form_takes_it(self) -> None:
        """With [signed look-back, EPOCH], 06:00-07:00 … 07:00-07:00 uses form 1."""
        asked = rng("2026-10-09T06:00:00-07:00", "2026-10-09T07:00:00-07:00")
        found = convert_exact(window(asked), [SIGNED, EPOCH], ctx())
        assert found is not None
        assert found.form == 1

    def test_end_one_step_after_now(self) -> None:
        """MORNING (ending one step after now) is form 0, -40m, rounded."""
        found = convert_exact(window(MORNING), [SIGNED, EPOCH], ctx())
        assert found == Conversion(form=0, values={"w": "-40m"}, rounded=True)

    def test_end_exactly_now_plus_one_ms_is_not_rounded(self) -> None:
        """A look-back range itself (not marked as one) is written without rounding."""
        asked = rng("2026-10-09T15:00:00Z", "2026-10-09T15:40:00.001Z")
        found = convert_exact(window(asked), [SIGNED], ctx())
        assert found == Conversion(form=0, values={"w": "-40m"})

    def test_end_just_beyond_one_step(self) -> None:
        """An end more than one step after now cannot be a look-back."""
        asked = rng("2026-10-09T15:00:00Z", "2026-10-09T15:41:00.001Z")
        assert convert_exact(window(asked), [SIGNED], ctx()) is None


class TestKinds:
    """Joined and object forms, and forms that cannot hold a value."""

    def test_joined_epoch_with_slash(self) -> None:
        """A joined epoch form writes digits around its joiner."""
        form = JoinedForm(argument="w", as_="epoch-ms", joiner="/", edge="exclusive")
        found = convert_exact(window(MORNING), [form], ctx())
        assert found is not None
        assert found.values == {"w": "1791558000000/1791560460000"}

    def test_object_form_with_zone(self) -> None:
        """An object form writes {keys.from, keys.to} plus the zone argument."""
        form = ObjectForm(
            argument="span",
            keys=ObjectKeys(start="since", end="until"),
            as_="iso",
            edge="exclusive",
            zone=ZoneArgument(argument="tz"),
        )
        found = convert_exact(window(MORNING.utc()), [form], ctx())
        assert found is not None
        assert found.values == {
            "span": {"since": "2026-10-09T15:00:00Z", "until": "2026-10-09T15:41:00Z"},
            "tz": LA,
        }

    def test_iso_keeps_milliseconds_as_three_digits(self) -> None:
        """An iso value with a fraction is written with exactly three digits."""
        asked = rng("2026-10-09T15:00:00.25Z", "2026-10-09T15:40:00.001Z")
        found = convert_exact(window(asked), [bounds("iso", "inclusive")], ctx())
        assert found is not None
        assert found.values == {
            "start": "2026-10-09T15:00:00.250Z",
            "end": "2026-10-09T15:40:00.000Z",
        }

    def test_day_form_without_zone_uses_the_agent_zone(self) -> None:
        """A day form with no zone argument reads the date in the agent's zone."""
        found = convert_exact(window(TODAY), [DayForm(argument="d")], ctx(zone=None))
        assert found == Conversion(form=0, values={"d": "2026-10-09"})

    def test_no_form_holds(self) -> None:
        """Nothing fits → None."""
        assert convert_exact(window(MORNING), [DAY], ctx()) is None
        assert convert_exact(window(MORNING), [], ctx()) is None
