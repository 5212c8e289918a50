"""Properties of the conversions (docs/time.md#writing-a-window-into-a-form): a filled window
reads back covering what was asked, an exact form reads back to exactly the asked range, and
rounding only widens."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_runtime.time._convert import (
    AskedWindow,
    Conversion,
    PeriodContext,
    convert_exact,
    convert_for_tool,
)
from afp_runtime.time._durations import spell_duration
from afp_runtime.time._facts import Facts
from afp_runtime.time._forms import (
    Bound,
    BoundsForm,
    DayForm,
    Form,
    JoinedForm,
    LookbackForm,
    ObjectForm,
    ObjectKeys,
    ZoneArgument,
)
from afp_runtime.time._instants import NS_PER_MS, Instant
from afp_runtime.time._ranges import TimeRange, lookback_bounds, lookback_range
from afp_runtime.time._readback import read_back
from afp_runtime.time._zones import date_start, local_date, to_zone
from tests.periods._build import DAY, EPOCH, NOW

TZ = ZoneArgument(argument="tz")
ZONES = ["America/Los_Angeles", "America/Santiago", "UTC", "Asia/Kolkata", "Australia/Lord_Howe"]
FORMS: list[Form] = [
    EPOCH,
    BoundsForm(
        start=Bound(argument="a", as_="epoch-s"),
        end=Bound(argument="b", as_="epoch-s", edge="inclusive"),
    ),
    BoundsForm(
        start=Bound(argument="a", as_="iso"), end=Bound(argument="b", as_="iso", edge="exclusive")
    ),
    JoinedForm(argument="w", as_="iso", joiner="..", edge="inclusive"),
    JoinedForm(argument="w", as_="wall", joiner="..", edge="inclusive", zone=TZ),
    BoundsForm(
        start=Bound(argument="a", as_="wall"),
        end=Bound(argument="b", as_="wall", edge="exclusive"),
    ),
    BoundsForm(
        start=Bound(argument="a", as_="date"),
        end=Bound(argument="b", as_="date", edge="inclusive"),
        zone=TZ,
    ),
    ObjectForm(
        argument="o",
        keys=ObjectKeys(start="s", end="e"),
        as_="epoch-ms",
        edge="inclusive",
        zone=TZ,
    ),
    JoinedForm(argument="w", as_="date", joiner="/", edge="exclusive"),
    DAY,
    DayForm(argument="d"),
    LookbackForm(argument="l"),
    LookbackForm(argument="l", signed=True, units="smhdw"),
    LookbackForm(argument="l", units="d"),
    LookbackForm(argument="l", units="hw"),
]
STEPS_MS = [1, 1000, 60_000, 3_600_000]


@st.composite
def instants(draw: st.DrawFn, zone: str) -> Instant:
    """An instant within about three weeks of now, on a random step, in ``zone``'s offset."""
    step = draw(st.sampled_from(STEPS_MS))
    moves = draw(st.integers(-500_000_000, 50_000_000)) // step
    return to_zone(NOW.plus(moves * step * NS_PER_MS), zone)


@st.composite
def windows(draw: st.DrawFn) -> tuple[AskedWindow, str]:
    """A window to write and its zone: a plain range, a range of whole local dates, or a span
    ending now."""
    zone = draw(st.sampled_from(ZONES))
    kind = draw(st.sampled_from(["range", "dates", "lookback"]))
    if kind == "lookback":
        length = draw(st.integers(1, 30 * 24 * 60)) * draw(st.sampled_from([1000, 60_000]))
        text = spell_duration(length, "smhdw")
        assert text is not None
        return AskedWindow(range=lookback_range(NOW, length), lookback=text), zone
    if kind == "dates":
        first = local_date(NOW, zone) + timedelta(days=draw(st.integers(-20, 3)))
        last = first + timedelta(days=draw(st.integers(1, 3)))
        start, end = date_start(first, zone), date_start(last, zone)
        return AskedWindow(range=TimeRange.of(start, end)), zone
    start = draw(instants(zone))
    end = draw(instants(zone).filter(lambda end: end > start))
    return AskedWindow(range=TimeRange.of(start, end)), zone


def _context(zone: str) -> PeriodContext:
    return PeriodContext(now=NOW, zone=zone, agent_zone=zone, granularity_ms=60_000)


def _read(conversion: Conversion, forms: list[Form], zone: str) -> TimeRange:
    found = read_back(conversion.values, [forms[conversion.form]], _context(zone))
    assert found is not None, conversion
    return found.range


def _asked_bounds(window: AskedWindow, form: Form) -> tuple[int, int]:
    """What a conversion has to cover: the range, without now's own millisecond for a span
    ending now, and up to now + 1 ms for a look-back form."""
    start, end = window.range.bounds()
    if window.lookback is not None:
        end = NOW.ns
    if isinstance(form, LookbackForm):
        end = min(end, NOW.ns + NS_PER_MS)
    return start, end


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(windows(), st.lists(st.sampled_from(FORMS), min_size=1, max_size=3))
def test_a_filled_window_reads_back_covering_what_was_asked(
    asked: tuple[AskedWindow, str], forms: list[Form]
) -> None:
    """Whatever form a fill uses, its values read back to a range covering the asked one (a
    look-back cannot reach past now + 1 ms, where no data exists yet, and a span ending now is
    written as its look-back bounds ``[now - L, now)``,
    docs/time.md#writing-a-window-into-a-form)."""
    window, zone = asked
    conversion = convert_for_tool(window, forms, Facts(), _context(zone))
    if not isinstance(conversion, Conversion):
        return
    back = _read(conversion, forms, zone)
    start, end = _asked_bounds(window, forms[conversion.form])
    covered = back.bounds()
    assert covered[0] <= start and end <= covered[1]
    if conversion.sent is not None:
        assert back == conversion.sent


@PROPERTY
@given(windows(), st.lists(st.sampled_from(FORMS), min_size=1, max_size=3))
def test_an_exact_form_reads_back_to_exactly_the_asked_range(
    asked: tuple[AskedWindow, str], forms: list[Form]
) -> None:
    """An exact, unrounded conversion reads back to the asked range (a span ending now may come
    back as its look-back bounds, and a look-back form may add now's own millisecond)."""
    window, zone = asked
    conversion = convert_exact(window, forms, _context(zone))
    if conversion is None or conversion.rounded:
        return
    back = _read(conversion, forms, zone)
    start, end = window.range.bounds()
    accepted = {(start, end)}
    if window.lookback is not None:
        accepted.add(lookback_bounds(NOW, end // NS_PER_MS - 1 - start // NS_PER_MS).bounds())
    if isinstance(forms[conversion.form], LookbackForm) and end == NOW.ns:
        accepted.add((start, end + NS_PER_MS))
    assert back.bounds() in accepted


@PROPERTY
@given(windows(), st.lists(st.sampled_from(FORMS), min_size=1, max_size=3))
def test_rounding_and_widening_only_enlarge(
    asked: tuple[AskedWindow, str], forms: list[Form]
) -> None:
    """A rounded conversion reads back to a superset; a widened one reads exactly ``sent``,
    which is the asked range plus its extra parts."""
    window, zone = asked
    conversion = convert_for_tool(window, forms, Facts(), _context(zone))
    if not isinstance(conversion, Conversion):
        return
    if conversion.rounded:
        back = _read(conversion, forms, zone).bounds()
        start, end = _asked_bounds(window, forms[conversion.form])
        assert back[0] <= start and end <= back[1]
        assert back != (start, end) or not isinstance(forms[conversion.form], BoundsForm)
    if conversion.sent is not None:
        sent = conversion.sent.bounds()
        start, end = window.range.bounds()
        assert sent[0] <= start and end <= sent[1]
        assert conversion.extra
        extra = sum(end - start for start, end in (part.bounds() for part in conversion.extra))
        assert extra == (sent[1] - sent[0]) - (end - start)
        for part in conversion.extra:
            low, high = part.bounds()
            assert sent[0] <= low and high <= sent[1]
            assert high <= start or end <= low
