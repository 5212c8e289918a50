"""Deciding each call's period before dispatch (docs/time.md#deciding-each-call):
``decide_call``.

For every call of a batch whose tool has period forms, the decision takes the call
(``CallToBind``), the turn's windows (``windows.turn_windows_of``) and the clock, and gives one
``CallWindowRow`` plus the arguments the tool receives. It is pure: no clock, no I/O.

* **Sent-window path** (some argument of some form was sent): the sent window is read back and
  matched to the person's windows — ``bound`` (by the declared quote or by value),
  ``model-chosen`` or ``model`` — or found ``unread``, or refused (a declared fact, or a local
  time the zone skips: ``dst-gap`` naming the argument). Sent values are never edited.
* **Fill path** (nothing sent): with exactly one mention that has a window, that window is
  written in the tool's own form (``filled``) or refused; otherwise ``not-filled`` with
  ``no-window``, ``several-mentions`` (the missing-period rule may ``assume`` a span) or
  ``open-reading`` (the batch asks the person, docs/time.md#the-time-question).

The reserved ``_timeQuote`` argument is removed first and never reaches the tool.

Readings settled here:

* ``CallToBind.quote`` wins over a ``_timeQuote`` argument; a ``_timeQuote`` that is not a
  string is removed and ignored.
* The step (``granularity_ms``) is the tool's: ``facts.granularity`` (one minute when absent),
  whatever ``ctx.granularity_ms`` says. ``ctx.zone`` is the clock's zone and ``ctx.agent_zone``
  the agent's configured zone; the fill path writes in the window's own zone.
* A window "equals" a sent range when the instants are equal, or when the window is a span ending
  now of length L and the sent range is its look-back as bounds ``[now - L, now)``.
* ``assume(L)`` writes the span ``[now - L, now]`` in the first form that expresses it exactly
  (``convert_exact``, in the clock's zone); when no form does, nothing is written and the row has
  no ``assumed``. Facts are not judged for an assumed span (docs/time.md#fill-path gives no refusal
  for it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from afp_runtime.errors import InvalidValue
from afp_runtime.time._convert import (
    AskedWindow,
    Conversion,
    PeriodContext,
    Refusal,
    convert_exact,
    convert_for_tool,
    trimmed_by_tool,
)
from afp_runtime.time._declare import AS_SENT, Assume, MissingRule
from afp_runtime.time._durations import FACT_UNITS, parse_duration
from afp_runtime.time._facts import Facts, TimeRefusal, form_facts, partly_beyond_retention
from afp_runtime.time._facts import period_fact_problem as _fact_problem
from afp_runtime.time._forms import Form, arguments_of
from afp_runtime.time._ranges import TimeRange, lookback_bounds, lookback_range
from afp_runtime.time._readback import find_sent_gap, is_missing, read_back
from afp_runtime.time._rows import CallWindowRow, Differs
from afp_runtime.time._windows import OpenReading, TurnWindow, TurnWindows

TIME_QUOTE: Final = "_timeQuote"
"""The reserved argument in which the model quotes the person's words a period comes from."""

TIME_QUOTE_DESCRIPTION: Final = (
    "Optional. The exact words from the person's message that this call's time period comes "
    "from, copied as they were written. Leave it out when the period is not based on the "
    "person's words."
)
"""The description of the ``_timeQuote`` property served on every tool with period forms."""

_SPACES = re.compile(r"\s+")


class CallToBind(msgspec.Struct, frozen=True, kw_only=True):
    """One call of a batch, as the decision sees it (docs/time.md#which-path-a-call-takes).

    Attributes:
        tool_call_id: the call's id.
        tool_name: its tool.
        turn: the turn, >= 1.
        iteration: the iteration of the batch, >= 1.
        args: the arguments as the model sent them (``_timeQuote`` included, if sent).
        forms: the tool's period forms (at least one).
        facts: the facts the tool declares about its data.
        missing: the missing-period rule: ``"as-sent"`` or ``Assume``.
        quote: the declared quote, when already peeled off; otherwise ``args["_timeQuote"]``.
    """

    tool_call_id: str
    tool_name: str
    turn: int
    iteration: int
    args: Mapping[str, Any]
    forms: tuple[Form, ...]
    facts: Facts = msgspec.field(default_factory=Facts)
    missing: MissingRule = AS_SENT
    quote: str | None = None


class CallDecision(msgspec.Struct, frozen=True, kw_only=True):
    """What the decision made of one call.

    Attributes:
        row: the ``call-window`` row to file before dispatch.
        arguments: what the tool receives when it runs: the sent arguments without
            ``_timeQuote``, plus the written values of a fill or an assumed span.
        window: the turn window the call was filled from or tied to, if any (its zone is the
            fill's zone, used again when drift redraws the call).
    """

    row: CallWindowRow
    arguments: dict[str, Any]
    window: TurnWindow | None = None

    @property
    def asks(self) -> bool:
        """Whether the batch has to wait for a time question (``not-filled / open-reading``)."""
        return self.row.how == "not-filled" and self.row.why == "open-reading"


def without_time_quote(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments without the reserved ``_timeQuote`` (it never reaches the tool)."""
    return {key: value for key, value in args.items() if key != TIME_QUOTE}


def declared_quote(call: CallToBind) -> str | None:
    """The call's declared quote: ``call.quote``, else a string ``_timeQuote`` argument."""
    if call.quote is not None:
        return call.quote
    sent = call.args.get(TIME_QUOTE)
    return sent if isinstance(sent, str) else None


def normalize_quote(text: str) -> str:
    """A quote as compared for pointing: lower-cased, whitespace runs collapsed, trimmed."""
    return _SPACES.sub(" ", text.lower()).strip()


def points_at(declared: str | None, mention_quote: str | None) -> bool:
    """Whether a declared quote points at a mention (docs/time.md#sent-window-path step 4): both
    normalized quotes are non-empty and one contains the other."""
    if declared is None or mention_quote is None:
        return False
    a, b = normalize_quote(declared), normalize_quote(mention_quote)
    return bool(a) and bool(b) and (a in b or b in a)


def _context(call: CallToBind, ctx: PeriodContext, zone: str | None) -> PeriodContext:
    return msgspec.structs.replace(ctx, zone=zone, granularity_ms=call.facts.granularity_ms)


def window_equals(window: TurnWindow, sent: TimeRange, ctx: PeriodContext) -> bool:
    """Whether a sent range is the person's window (docs/time.md#outcomes ``bound by: value``):
    identical instants, or a span ending now sent as ``[now - L, now)``."""
    if window.range == sent:
        return True
    if window.lookback is None:
        return False
    length = parse_duration(window.lookback, FACT_UNITS)
    return sent in (lookback_bounds(ctx.now, length), lookback_range(ctx.now, length))


def convert_reading(
    call: CallToBind, reading: OpenReading, ctx: PeriodContext
) -> Conversion | Refusal:
    """``convert_for_tool`` of an open reading for ``call``, in the reading's zone and at the
    tool's step."""
    local = _context(call, ctx, reading.zone)
    return convert_for_tool(reading.asked(), call.forms, call.facts, local)


def refusal_of_all(
    call: CallToBind, readings: Sequence[OpenReading], ctx: PeriodContext
) -> TimeRefusal | None:
    """The first reading's refusal when ``call`` refuses every one of ``readings``
    (docs/time.md#fill-path step 4); None when one of them converts, or there is none."""
    first: TimeRefusal | None = None
    for reading in readings:
        outcome = convert_reading(call, reading, ctx)
        if not isinstance(outcome, Refusal):
            return None
        first = first or outcome.refused
    return first


def _row(call: CallToBind, **fields: Any) -> CallWindowRow:
    return CallWindowRow(
        turn=call.turn,
        iteration=call.iteration,
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        **fields,
    )


def _sent(call: CallToBind, windows: TurnWindows, ctx: PeriodContext) -> CallDecision:
    arguments = without_time_quote(call.args)
    local = _context(call, ctx, ctx.zone)
    found = read_back(arguments, call.forms, local)
    if found is None:
        gap = find_sent_gap(arguments, call.forms, local)
        if gap is not None:
            row = _row(call, how="refused", refused="dst-gap", form=gap.form, argument=gap.argument)
        else:
            row = _row(call, how="unread")
        return CallDecision(row=row, arguments=arguments)
    asked, form = found.range, found.form
    how: str
    person: TurnWindow | None = None
    by: str | None = None
    if not windows.windows:
        how = "model"
    else:
        quote = declared_quote(call)
        pointed = [w for w in windows.windows if points_at(quote, w.quote)]
        equal = [w for w in windows.windows if window_equals(w, asked, ctx)]
        if pointed:
            hit = [w for w in pointed if w in equal]
            if hit:
                how, by, person = "bound", "quote", hit[0]
            else:
                how, person = "model-chosen", pointed[0]
        elif equal:
            how, by, person = "bound", "value", equal[0]
        else:
            how = "model-chosen"
            person = windows.windows[0] if len(windows.windows) == 1 else None
    judged = form_facts(call.forms[form], call.facts)
    problem = _fact_problem(asked, judged, ctx.now)
    # Absent fields are None (or False): a row leaves them out.
    fields = {"form": form, "asked": asked, "person": None if person is None else person.person()}
    if problem is not None:
        row = _row(call, how="refused", refused=problem, **fields)
        return CallDecision(row=row, arguments=arguments, window=person)
    partly = partly_beyond_retention(asked, judged, ctx.now)
    row = _row(call, how=how, by=by, partly_beyond_retention=partly, **fields)
    return CallDecision(row=row, arguments=arguments, window=person)


def _assumed(
    call: CallToBind, ctx: PeriodContext, why: str, arguments: dict[str, Any]
) -> CallDecision:
    rule = call.missing
    if isinstance(rule, Assume):
        length = parse_duration(rule.length, FACT_UNITS)
        span = AskedWindow(range=lookback_range(ctx.now, length), lookback=rule.length)
        conversion = convert_exact(span, call.forms, _context(call, ctx, ctx.zone))
        if conversion is not None:
            row = _row(call, how="not-filled", why=why, assumed=rule.length)
            return CallDecision(row=row, arguments={**arguments, **conversion.values})
    return CallDecision(row=_row(call, how="not-filled", why=why), arguments=arguments)


def _filled(call: CallToBind, window: TurnWindow, conversion: Conversion) -> CallWindowRow:
    trimmed = trimmed_by_tool(conversion, call.facts)
    return _row(
        call,
        how="filled",
        form=conversion.form,
        asked=window.range,
        person=window.person(),
        rounded=conversion.rounded,
        sent=conversion.sent,
        differs=Differs(extra=conversion.extra) if conversion.widened and not trimmed else None,
        trimmed_by_tool=trimmed,
        partly_beyond_retention=conversion.partly_beyond_retention,
    )


def _fill(call: CallToBind, windows: TurnWindows, ctx: PeriodContext) -> CallDecision:
    arguments = without_time_quote(call.args)
    if windows.mentions == 0:
        return _assumed(call, ctx, "no-window", arguments)
    if windows.mentions > 1:
        return _assumed(call, ctx, "several-mentions", arguments)
    if windows.windows:
        window = windows.windows[0]
        local = _context(call, ctx, window.zone)
        outcome = convert_for_tool(window.asked(), call.forms, call.facts, local)
        if isinstance(outcome, Refusal):
            row = _row(
                call,
                how="refused",
                refused=outcome.refused,
                asked=window.range,
                person=window.person(),
            )
            return CallDecision(row=row, arguments=arguments, window=window)
        filled = {**arguments, **outcome.values}
        return CallDecision(row=_filled(call, window, outcome), arguments=filled, window=window)
    refused = refusal_of_all(call, windows.open[0].readings if windows.open else (), ctx)
    if refused is not None:
        return CallDecision(row=_row(call, how="refused", refused=refused), arguments=arguments)
    return CallDecision(row=_row(call, how="not-filled", why="open-reading"), arguments=arguments)


def decide_call(call: CallToBind, windows: TurnWindows, ctx: PeriodContext) -> CallDecision:
    """Decide one call's period (docs/time.md#deciding-each-call): the row to file and the arguments
    the tool receives.

    Gathers every argument of every form, zone arguments included; if any was sent (not
    missing, docs/time.md#which-path-a-call-takes), the sent-window path
    (docs/time.md#sent-window-path), otherwise the fill path (docs/time.md#fill-path).

    Args:
        call: the call.
        windows: the turn's windows (``turn_windows_of``).
        ctx: the turn's clock ``now``, the clock's zone and the agent's configured zone.

    Raises:
        InvalidValue: the call's tool has no period forms (no decision applies,
        docs/time.md#which-path-a-call-takes).
    """
    if not call.forms:
        raise InvalidValue(
            f"tool {call.tool_name} has no period forms; no call-window decision applies",
            field="forms",
        )
    arguments = without_time_quote(call.args)
    named = {name for form in call.forms for name in arguments_of(form)}
    if any(not is_missing(arguments.get(name)) for name in named):
        return _sent(call, windows, ctx)
    return _fill(call, windows, ctx)
