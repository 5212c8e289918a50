"""Dispatch: the ``call`` row, drift of spans ending now, and ``ctx.time`` (docs/time.md#dispatch).

When the host hands a call to its tool it reads its clock once (``dispatchedAt``). For a call
whose latest ``call-window`` row uses a look-back form, the difference from the turn's ``now``
is its *drift*: within one step nothing happens; beyond it a filled call is **redrawn** in an
absolute form that expresses the row's ``asked`` exactly (the look-back argument removed), and
any other call is **shifted** (it runs as sent, and the row says by how much). ``asked`` never
changes. The tool then sees ``ctx.time`` (``ToolTime``). The host's clock reading is a
parameter here: nothing in this module reads a clock.

Readings settled here:

* ``byMs`` is ``dispatchedAt - now`` in whole milliseconds (both are on whole milliseconds).
* "Can express the row's ``asked`` exactly" is ``convert_exact`` of ``asked`` (not as a span
  ending now) with no rounding, over the tool's forms that are not look-back forms, in their
  declared order; the zone written is the fill's zone (the person's window's), else the clock's.
* Redrawing removes only the look-back form's argument and adds the new form's values; every
  other argument stays as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from afp_runtime.time._convert import AskedWindow, PeriodContext, convert_exact
from afp_runtime.time._forms import Form, LookbackForm
from afp_runtime.time._instants import NS_PER_MS, Instant, spell_instant
from afp_runtime.time._rows import CallRow, CallWindowRow, Drift
from afp_runtime.tools import AskedSpan, ToolTime

TOOL_TIME_VERSION: Final = 1
"""The version of the ``ToolTime`` shape."""

_DRIFTING: Final = frozenset({"filled", "bound", "model-chosen", "model"})


def dispatched_at_of(moment: Instant) -> Instant:
    """The host clock's reading as ``dispatchedAt``: truncated to the millisecond, in UTC
    (docs/time.md#the-call-row)."""
    return Instant(ns=moment.ns - moment.ns % NS_PER_MS, offset=0)


def dispatched_at_text(moment: Instant) -> str:
    """``dispatchedAt`` spelled canonically in UTC, e.g. ``2026-10-09T15:50:00Z``."""
    return spell_instant(dispatched_at_of(moment))


class DriftResult(msgspec.Struct, frozen=True, kw_only=True):
    """What drift did to a call (docs/time.md#drift).

    Attributes:
        drift: the row's ``drift`` (``{byMs, outcome}`` or ``{byMs, outcome, form}``).
        values: ``redrawn`` only: the absolute form's values that replace the look-back
            argument.
        removed: ``redrawn`` only: the look-back argument removed.
    """

    drift: Drift
    values: dict[str, Any] = msgspec.field(default_factory=dict)
    removed: str | None = None

    def apply(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments the tool receives: redrawn → look-back argument out, values in;
        shifted → unchanged."""
        if self.drift.outcome != "redrawn":
            return dict(arguments)
        kept = {key: value for key, value in arguments.items() if key != self.removed}
        return {**kept, **self.values}


def drift_of(
    row: CallWindowRow,
    forms: Sequence[Form],
    ctx: PeriodContext,
    dispatched_at: Instant,
) -> DriftResult | None:
    """The drift of a call dispatched at ``dispatched_at`` (docs/time.md#drift), or None.

    Drift is considered only when the row's ``how`` is ``filled``, ``bound``, ``model-chosen``
    or ``model`` and its ``form`` is a look-back form. ``|byMs| <= granularity`` → None (one
    whole step is still tolerated). Beyond it: a ``filled`` row whose ``asked`` another,
    non-look-back form expresses exactly → ``redrawn`` in the first such form; otherwise
    ``shifted``.

    Args:
        row: the call's latest ``call-window`` row.
        forms: the tool's forms.
        ctx: the turn's ``now``, the fill's zone (the person's window's), the agent's zone, and
            the tool's step.
        dispatched_at: the ``call`` row's ``dispatchedAt``.
    """
    if row.how not in _DRIFTING or row.form is None or not 0 <= row.form < len(forms):
        return None
    form = forms[row.form]
    if not isinstance(form, LookbackForm):
        return None
    by_ns = dispatched_at.ns - ctx.now.ns
    by_ms = by_ns // NS_PER_MS if by_ns >= 0 else -((-by_ns) // NS_PER_MS)
    if abs(by_ms) <= ctx.granularity_ms or by_ms == 0:
        return None
    if row.how == "filled" and row.asked is not None:
        window = AskedWindow(range=row.asked)
        for index, other in enumerate(forms):
            if isinstance(other, LookbackForm):
                continue
            found = convert_exact(window, [other], ctx)
            if found is not None and not found.rounded:
                return DriftResult(
                    drift=Drift(by_ms=by_ms, outcome="redrawn", form=index),
                    values=dict(found.values),
                    removed=form.argument,
                )
    return DriftResult(drift=Drift(by_ms=by_ms, outcome="shifted"))


def call_row_of(
    row: CallWindowRow, dispatched_at: Instant, drift: DriftResult | None = None
) -> CallRow:
    """The ``call`` row filed when the call is handed to its tool (docs/time.md#the-call-row)."""
    return CallRow(
        turn=row.turn,
        iteration=row.iteration,
        tool_call_id=row.tool_call_id,
        tool_name=row.tool_name,
        dispatched_at=dispatched_at_text(dispatched_at),
        drift=None if drift is None else drift.drift,
    )


class DispatchedCall(msgspec.Struct, frozen=True, kw_only=True):
    """A call ready for its tool.

    Attributes:
        row: the ``call`` row to file.
        arguments: the arguments the tool receives (redrawn when drift redrew them).
        drift: what drift did, if anything.
    """

    row: CallRow
    arguments: dict[str, Any]
    drift: DriftResult | None = None


def dispatch_call(
    window_row: CallWindowRow,
    arguments: Mapping[str, Any],
    forms: Sequence[Form],
    ctx: PeriodContext,
    dispatched_at: Instant,
) -> DispatchedCall:
    """The ``call`` row, drift and final arguments of a call handed to its tool
    (docs/time.md#the-call-row, docs/time.md#drift).

    Args:
        window_row: the call's latest ``call-window`` row.
        arguments: the arguments the decision gave (``CallDecision.arguments``).
        forms: the tool's forms.
        ctx: as for ``drift_of``.
        dispatched_at: the host clock's reading at dispatch.
    """
    at = dispatched_at_of(dispatched_at)
    drift = drift_of(window_row, forms, ctx, at)
    final = drift.apply(arguments) if drift is not None else dict(arguments)
    return DispatchedCall(row=call_row_of(window_row, at, drift), arguments=final, drift=drift)


def tool_time(
    row: CallWindowRow,
    *,
    zone: str,
    now: str,
    dispatched_at: str,
    zone_unknown: bool = False,
) -> ToolTime:
    """``ctx.time`` for a call whose latest ``call-window`` row is ``row``
    (docs/time.md#the-time-a-tool-sees).

    Args:
        row: the call's latest ``call-window`` row in this turn.
        zone: the turn's clock zone.
        now: the turn's clock ``now`` (the clock row's text).
        dispatched_at: the ``call`` row's ``dispatchedAt``.
        zone_unknown: the clock's ``zoneSource`` is ``unknown``.
    """
    asked = None if row.asked is None else AskedSpan(start=row.asked.start, end=row.asked.end)
    return ToolTime(
        version=TOOL_TIME_VERSION,
        zone=zone,
        now=now,
        dispatched_at=dispatched_at,
        asked=asked,
        zone_unknown=zone_unknown,
    )
