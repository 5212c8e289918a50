"""Writing a window into a tool's forms: exactly, widened, and the one conversion per window
and tool (docs/time.md#writing-a-window-into-a-form, docs/time.md#widening,
docs/time.md#one-conversion-per-window-and-tool,
docs/time.md#tools-that-filter-to-the-asked-window).

``convert_for_tool`` is the single entry point the decision, the time question and the answer
check use; ``convert_exact`` and ``convert_widened`` are its two passes. Rounding only ever
enlarges the window, and only in two places: epoch-second bounds (start down, end up) and
look-back lengths (up). Any other value that cannot be written exactly makes the form unusable.

Readings settled here:

* An ``iso`` or ``wall`` value whose step is one millisecond is written with exactly three
  fraction digits (``.000`` included), so its written precision is the millisecond and an
  inclusive end reads back exactly; an ``iso`` value on a whole second is written with seconds
  and no fraction. ``iso`` values keep the offset the instant was written in.
* Instants with sub-millisecond parts make ``iso``, ``epoch-ms``, ``wall`` and ``date`` values
  unusable; ``epoch-s`` bounds and look-back lengths round them outward like any other value.
* A form with a zone argument writes (and, for ``wall``/``date``/``day``, reads local values
  in) the window's zone ``ctx.zone``; a form without one uses ``ctx.agent_zone`` (the period's
  ``wallZone: "agent"``, which validation requires for such local forms). A zone that is
  absent or not a valid name makes a local form unusable; an ``iso`` or epoch form then leaves
  its zone argument out.
* "``to`` lies within ``granularity_ms`` of now" is ``|to - now| ≤ granularity``.
* With per-form caps, a form without its own cap is judged by the period's cap in both passes
  (docs/time.md#one-conversion-per-window-and-tool step 3 names only "own" caps; the period's cap is
  what docs/time.md#facts-checked-against-a-range gives such a form).
* A widened conversion never sets ``rounded``; what the tool reads is in ``sent`` and
  ``extra``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import msgspec

from afp_runtime.time._durations import (
    FACT_UNITS,
    parse_duration,
    smallest_unit_ms,
    spell_duration,
)
from afp_runtime.time._facts import (
    DEFAULT_GRANULARITY_MS,
    Facts,
    TimeRefusal,
    form_cap,
    partly_beyond_retention,
    period_fact_problem,
    tool_facts,
)
from afp_runtime.time._forms import (
    BoundsForm,
    DayForm,
    Form,
    JoinedForm,
    LookbackForm,
    ends_of,
    zone_argument_of,
)
from afp_runtime.time._instants import NS_PER_MS, NS_PER_S, Instant, spell_instant
from afp_runtime.time._ranges import TimeRange, lookback_range
from afp_runtime.time._values import is_safe, spell_wall
from afp_runtime.time._zones import (
    WallUnique,
    date_start,
    is_zone_name,
    local_date,
    read_wall,
    to_local,
)

_DAY = timedelta(days=1)


class PeriodContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a conversion or a read-back needs besides the window and the forms
    (docs/time.md#writing-a-window-into-a-form, docs/time.md#which-path-a-call-takes).

    Attributes:
        now: the turn's clock (never read here; always given).
        zone: the window's zone (the fill's zone, docs/time.md#zone-names-and-the-database), written
        into zone arguments; None
            when unknown.
        agent_zone: the agent's configured zone, for local forms without a zone argument.
        granularity_ms: the tool's step in milliseconds (its ``granularity``, else 60,000).
    """

    now: Instant
    zone: str | None = None
    agent_zone: str | None = None
    granularity_ms: int = DEFAULT_GRANULARITY_MS


class AskedWindow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A window to write into a form (docs/time.md#writing-a-window-into-a-form).

    Attributes:
        range: the window's range.
        lookback: set when the window is a span ending now (the person answered with one): its
            length, a duration. The span written is then ``[now - L, now)`` in now's offset.
    """

    range: TimeRange
    lookback: str | None = None


class Conversion(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A window written into one of the tool's forms (docs/time.md#writing-a-window-into-a-form,
    docs/time.md#widening, docs/time.md#one-conversion-per-window-and-tool).

    Attributes:
        form: the position of the form used in the tool's forms.
        values: the arguments to write (only that form's, its zone argument included).
        rounded: an epoch-second bound or a look-back length was rounded outward (exact pass).
        sent: when widened, the range the tool will actually read, in UTC.
        extra: when widened, what the tool reads beyond the window: one or two UTC ranges,
            earliest first.
        partly_beyond_retention: the window begins before ``now - retention`` and ends after
            it (wire ``partlyBeyondRetention``; set by ``convert_for_tool`` only).
    """

    form: int
    values: dict[str, Any]
    rounded: bool = False
    sent: TimeRange | None = None
    extra: tuple[TimeRange, ...] = ()
    partly_beyond_retention: bool = False

    @property
    def widened(self) -> bool:
        """Whether the tool will read more than the window (``sent`` is set)."""
        return self.sent is not None


class Refusal(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """No honest conversion exists (docs/time.md#one-conversion-per-window-and-tool).

    Attributes:
        refused: the code: a fact the window breaks, ``multi-day`` or ``no-form-holds``.
    """

    refused: TimeRefusal


def trimmed_by_tool(conversion: Conversion, facts: Facts) -> bool:
    """Whether a fill's row records ``trimmedByTool`` instead of ``differs.extra``
    (docs/time.md#tools-that-filter-to-the-asked-window): the conversion was widened and the tool
    declares ``filtersToAsked``."""
    return conversion.widened and facts.filters_to_asked


# --- writing one value ------------------------------------------------------------------------


def _zone_for(form: Form, ctx: PeriodContext) -> str | None:
    zone = ctx.zone if zone_argument_of(form) is not None else ctx.agent_zone
    return zone if is_zone_name(zone) else None


def _zone_values(form: Form, ctx: PeriodContext) -> dict[str, Any]:
    argument = zone_argument_of(form)
    if argument is None or ctx.zone is None:
        return {}
    return {argument: ctx.zone}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _write(as_: str, point: Instant, role: str, zone: str | None) -> tuple[Any, bool] | None:
    """One end written as ``as_``; ``role`` is ``from``, ``exclusive`` or ``inclusive``.

    Returns the value and whether it was rounded, or None when it cannot be written exactly.
    """
    if as_ == "epoch-s":
        if role == "from":
            value, rounded = point.ns // NS_PER_S, point.ns % NS_PER_S != 0
        else:
            value, rounded = _ceil_div(point.ns, NS_PER_S), point.ns % NS_PER_S != 0
            if role == "inclusive":
                value -= 1
        return (value, rounded) if is_safe(value) else None
    if point.has_sub_ms:
        return None
    if as_ == "epoch-ms":
        value = point.ns // NS_PER_MS - (1 if role == "inclusive" else 0)
        return (value, False) if is_safe(value) else None
    if as_ == "date":
        return _write_date(point, role, zone)
    step = NS_PER_MS if point.has_fraction else NS_PER_S
    if role == "inclusive":
        point = point.plus(-step)
    millis = step == NS_PER_MS
    if as_ == "iso":
        return spell_instant(point, millis=millis), False
    if zone is None:  # wall
        return None
    local = to_local(point, zone)
    reading = read_wall(local, zone)
    if not isinstance(reading, WallUnique) or reading.instant != point:
        return None
    return spell_wall(local, millis=millis), False


def _write_date(point: Instant, role: str, zone: str | None) -> tuple[Any, bool] | None:
    if zone is None:
        return None
    day = local_date(point, zone)
    if date_start(day, zone) != point:
        return None
    if role == "inclusive":
        day -= _DAY
    return day.isoformat(), False


def _span(window: AskedWindow, ctx: PeriodContext) -> tuple[Instant, Instant]:
    """The span to write: ``[now - L, now)`` in now's offset for a span ending now."""
    if window.lookback is not None:
        length = parse_duration(window.lookback, FACT_UNITS)
        return ctx.now.plus(-length * NS_PER_MS), ctx.now
    return window.range.start_instant, window.range.end_instant


def _pair(
    from_as: str, to_as: str, edge: str, span: tuple[Instant, Instant], zone: str | None
) -> tuple[Any, Any, bool] | None:
    first = _write(from_as, span[0], "from", zone)
    last = _write(to_as, span[1], edge, zone)
    if first is None or last is None:
        return None
    return first[0], last[0], first[1] or last[1]


def _lookback_length(
    form: LookbackForm, window: AskedWindow, ctx: PeriodContext, *, widen: bool
) -> tuple[str, bool] | None:
    """The look-back text (sign included) and whether its length was rounded up."""
    units = form.letters
    now = ctx.now.ns
    if window.lookback is not None:
        if widen:
            return None  # a span ending now is never widened
        text = spell_duration(parse_duration(window.lookback, FACT_UNITS), units)
        rounded = False
    else:
        start, end = window.range.bounds()
        step = ctx.granularity_ms * NS_PER_MS
        usable = end < now - step if widen else abs(end - now) <= step
        if not usable or now - start <= 0:
            return None
        unit = smallest_unit_ms(units) * NS_PER_MS
        length = _ceil_div(now - start, unit) * unit
        text = spell_duration(length // NS_PER_MS, units)
        rounded = length != now - start or end not in (now, now + NS_PER_MS)
    if text is None:
        return None
    return ("-" if form.signed else "") + text, rounded


def _exact(
    form: Form, window: AskedWindow, ctx: PeriodContext
) -> tuple[dict[str, Any], bool] | None:
    if isinstance(form, LookbackForm):
        found = _lookback_length(form, window, ctx, widen=False)
        return None if found is None else ({form.argument: found[0]}, found[1])
    span = _span(window, ctx)
    zone = _zone_for(form, ctx)
    if isinstance(form, DayForm):
        if zone is None:
            return None
        day = local_date(span[0], zone)
        if date_start(day, zone) != span[0] or date_start(day + _DAY, zone) != span[1]:
            return None
        return {form.argument: day.isoformat(), **_zone_values(form, ctx)}, False
    from_as, to_as, edge = ends_of(form)
    assert edge is not None  # a bounds or object form's edge is checked when it is made
    pair = _pair(from_as, to_as, edge, span, zone)
    if pair is None:
        return None
    first, last, rounded = pair
    values: dict[str, Any]
    if isinstance(form, BoundsForm):
        values = {form.start.argument: first, form.end.argument: last}
    elif isinstance(form, JoinedForm):
        values = {form.argument: f"{first}{form.joiner}{last}"}
    else:
        values = {form.argument: {form.keys.start: first, form.keys.end: last}}
    return {**values, **_zone_values(form, ctx)}, rounded


def _over_cap(form: Form, facts: Facts, reach_ns: int) -> bool:
    cap = form_cap(form, facts)
    return cap is not None and reach_ns > parse_duration(cap, FACT_UNITS) * NS_PER_MS


def convert_exact(
    window: AskedWindow, forms: Sequence[Form], ctx: PeriodContext, *, facts: Facts | None = None
) -> Conversion | None:
    """Write ``window`` in the first form that represents it without loss
    (docs/time.md#writing-a-window-into-a-form).

    Per ``as``: ``iso`` keeps the instant's offset (an inclusive end is ``to - step``, the step
    one second, or one millisecond when the end has a fraction); ``epoch-ms`` is milliseconds
    (inclusive: minus one); ``epoch-s`` rounds the start down and the end up (``rounded``);
    ``wall`` is the local time when it maps to that single instant; ``date`` needs both ends
    on local day starts. ``day`` needs exactly one local date. ``lookback`` takes a span ending
    now in the shortest exact spelling of the form's units, or, when ``to`` is within one step
    of now, ``now - from`` rounded up to the form's smallest unit.

    With ``facts``, a form whose cap (its own ``maxRange``, else the period's) is below the
    window's reach is passed over.

    Returns:
        ``Conversion(form, values, rounded)``, or None when no form can hold the window.
    """
    for index, form in enumerate(forms):
        if facts is not None and _over_cap(form, facts, window.range.reach_ns):
            continue
        found = _exact(form, window, ctx)
        if found is not None:
            return Conversion(form=index, values=found[0], rounded=found[1])
    return None


# --- widening ---------------------------------------------------------------------------------


def _extra(asked: TimeRange, sent: TimeRange) -> tuple[TimeRange, ...]:
    (a_start, a_end), (s_start, s_end) = asked.bounds(), sent.bounds()
    parts: list[TimeRange] = []
    if s_start < a_start:
        parts.append(TimeRange.of(Instant(ns=s_start), Instant(ns=a_start)))
    if a_end < s_end:
        parts.append(TimeRange.of(Instant(ns=a_end), Instant(ns=s_end)))
    return tuple(parts)


def _widen(
    form: Form, window: AskedWindow, ctx: PeriodContext
) -> tuple[dict[str, Any], TimeRange] | None:
    if isinstance(form, LookbackForm):
        found = _lookback_length(form, window, ctx, widen=True)
        if found is None:
            return None
        length = parse_duration(found[0].removeprefix("-"), form.letters)
        return {form.argument: found[0]}, lookback_range(ctx.now, length).utc()
    if isinstance(form, DayForm):
        zone = _zone_for(form, ctx)
        if zone is None:
            return None
        start, end = window.range.start_instant, window.range.end_instant
        day = local_date(start, zone)
        if local_date(end.plus(-NS_PER_MS), zone) != day:
            return None
        sent = TimeRange.of(date_start(day, zone).utc(), date_start(day + _DAY, zone).utc())
        return {form.argument: day.isoformat(), **_zone_values(form, ctx)}, sent
    return None


def convert_widened(
    window: AskedWindow,
    forms: Sequence[Form],
    ctx: PeriodContext,
    *,
    facts: Facts | None = None,
) -> Conversion | None:
    """Write a window no form holds exactly in the first form that covers a larger one
    (docs/time.md#widening).

    Only ``day`` forms (the window within one local date: the tool reads that whole date) and
    ``lookback`` forms (a window that finished more than one step before now: the tool reads
    ``now - from`` rounded up to the form's smallest unit) can widen; a span ending now is
    never widened. A candidate without any extra would have been exact and is not considered;
    one whose widened reach exceeds its cap (the form's own ``maxRange``, else the period's in
    ``facts``) is passed over.

    Returns:
        ``Conversion(form, values, sent, extra)`` (``sent`` and ``extra`` in UTC), or None.
    """
    if window.lookback is not None:
        return None
    declared = facts if facts is not None else Facts()
    for index, form in enumerate(forms):
        found = _widen(form, window, ctx)
        if found is None:
            continue
        values, sent = found
        extra = _extra(window.range, sent)
        if not extra or _over_cap(form, declared, sent.reach_ns):
            continue
        return Conversion(form=index, values=values, sent=sent, extra=extra)
    return None


# --- the one conversion per window and tool ---------------------------------------------------


def _multi_day(window: AskedWindow, forms: Sequence[Form], ctx: PeriodContext) -> bool:
    if not forms or not all(isinstance(form, DayForm) for form in forms):
        return False
    start, end = window.range.start_instant, window.range.end_instant.plus(-NS_PER_MS)
    for form in forms:
        zone = _zone_for(form, ctx)
        if zone is None or local_date(start, zone) == local_date(end, zone):
            return False
    return True


def convert_for_tool(
    window: AskedWindow, forms: Sequence[Form], facts: Facts, ctx: PeriodContext
) -> Conversion | Refusal:
    """The one conversion of a window for a tool, or why there is none
    (docs/time.md#one-conversion-per-window-and-tool).

    1. The facts first, judged by ``tool_facts``: a failure is a ``Refusal``.
    2. With ``retention``, a window that begins before ``now - retention`` and ends after it
       is marked ``partly_beyond_retention``; the call still runs.
    3. Exact, then widened. Without per-form caps: ``convert_exact`` over all forms, then
       ``convert_widened`` with the period's cap. With per-form caps: an exact pass that skips
       any form whose cap is smaller than the window's reach, then the widening pass, each
       form under its own cap.
    4. Nothing worked and every form is ``day`` while the window covers more than one date in
       each form's zone → ``multi-day``.
    5. Anything else → ``no-form-holds``.

    This one function serves filling a call, choosing the readings a time question offers and
    judging a typed answer; no other code re-implements it.
    """
    judged = tool_facts(forms, facts)
    problem = period_fact_problem(window.range, judged, ctx.now)
    if problem is not None:
        return Refusal(refused=problem)
    partly = partly_beyond_retention(window.range, judged, ctx.now)
    # Without per-form caps no form's cap is below the reach: the facts passed above.
    conversion = convert_exact(window, forms, ctx, facts=facts)
    if conversion is None:
        conversion = convert_widened(window, forms, ctx, facts=facts)
    if conversion is not None:
        return msgspec.structs.replace(conversion, partly_beyond_retention=partly)
    if _multi_day(window, forms, ctx):
        return Refusal(refused="multi-day")
    return Refusal(refused="no-form-holds")
