"""Time at dispatch (docs/time.md; agents with ``time`` only): each call to a period tool gets
its ``call`` row (``dispatchedAt``, drift) and ``ctx.time`` as it is handed over.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime.time._declare import Period, forms_of
from afp_runtime.time._dispatch import dispatch_call, tool_time
from afp_runtime.time._instants import Instant
from afp_runtime.time._turn import period_of
from afp_runtime.tools import PlannedCall, plan_call

if TYPE_CHECKING:
    from afp_runtime.time._loop import TimeRun


class Dispatching:
    """Per batch: the ``call`` rows filed and each call's ``ctx.time``."""

    def __init__(self, run: TimeRun) -> None:
        self.run = run
        self.times: dict[str, Any] = {}

    def prepare(self, plan: PlannedCall) -> PlannedCall:
        """Read the clock once as the call is handed over: ``call`` row, drift, ``ctx.time``."""
        state = self.run.state
        if state is None:
            return plan
        decision = state.decisions.get(plan.call.id)
        if decision is None or plan.tool is None or not isinstance(plan.tool.period, Period):
            return plan
        zone = decision.window.zone if decision.window is not None else state.zone
        ctx = state.context(plan.tool, zone=zone, agent_zone=self.run.config.zone)
        at = Instant(ns=self.run.clock.now_ms() * 1_000_000)
        done = dispatch_call(
            decision.row,
            plan.args if isinstance(plan.args, dict) else decision.arguments,
            forms_of(period_of(plan.tool)),
            ctx,
            at,
        )
        state.add([done.row])
        self.times[plan.call.id] = tool_time(
            decision.row,
            zone=state.clock.zone,
            now=state.clock.now,
            dispatched_at=done.row.dispatched_at,
            zone_unknown=state.clock.zone_source == "unknown",
        )
        if done.arguments == plan.args:
            return plan
        return plan_call(
            msgspec.structs.replace(plan.call, args=done.arguments), self.run.tools_by_name
        )

    def context(self, tool_call_id: str) -> Mapping[str, Any]:
        return {"time": self.times.get(tool_call_id)}
