"""An agent's window over its model calls, one point per call, for a chart
(docs/inspector.md#window-chart, docs/architecture.md#the-application-layer): what each call
was sent in characters, the tokens its provider reported, its cost when the agent is priced,
and the folds and drops that shaped it.

Readings settled here:

* ``charsSent`` is one count over the served view the call was sent
  (docs/served.md#the-served-view), in code points like the window's chars (docs/window.md):
  the system text, the content of each message as sent and of each request-only line, and each
  served tool's name, description and input schema as compact JSON. It is counted on the view
  ``served_view``/``agent_call`` rebuild, so a point and its call's view never disagree.
* Tokens are the usage the call's reply reported (``input``, ``output``); a call without a
  reply (failed, abandoned, in flight) or without usage has none. Cost is the call's
  ``callCost`` write (docs/cost.md#figures): an amount, or the reason it is unknown; neither for
  an agent without pricing.
* A fold is marked at the call it shaped: the first call sent its summary (the fold's
  iteration in the folding run). A drop is the count of messages the window visits before a
  call removed without a summary standing in for them (their records' ``removedMessageCount``
  less the messages folds of that call summarized).
* Bounded: the newest ``limit`` numbered calls, found by reading the agent's runs newest first
  until that many are in hand, so the cost follows ``limit`` and not the agent's age. A call
  whose receipt holds no ``agentCall`` has no place on the axis and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Final

import msgspec

from afp_runtime.records import UNKNOWN, CallCostWrite, RunLog
from afp_runtime.served import ServedView, epoch_entry, epochs, served_views, view_of
from afp_runtime.store import Store

__all__ = ["CHART_CALLS", "WindowPoint", "WindowSeries", "chars_sent", "window_series"]

CHART_CALLS: Final = 100
"""The calls a chart shows by default: the agent's newest (docs/inspector.md#window-chart says
what 100 and 200 cost)."""


class WindowPoint(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One model call of the agent, as the window chart plots it.

    Attributes:
        agent_call: the call's number over the agent's life (wire ``agentCall``).
        run_id: the run that made it (wire ``runId``).
        epoch: the call's epoch within that run.
        outcome: how the call ended (``replied``, ``failed``, ``in-flight``, ``abandoned``).
        chars_sent: the characters of its served view (wire ``charsSent``; see the module).
        input_tokens: the input tokens its reply reported (wire ``inputTokens``), absent
            without a reply or usage.
        output_tokens: likewise the output tokens (wire ``outputTokens``).
        cost: the call's priced amount, absent when unpriced or unknown.
        cost_unknown: why a priced agent's call has no amount (wire ``costUnknown``,
            docs/cost.md#figures).
        fold: the summary fingerprint of the fold that shaped this call, absent without one.
        dropped: messages the window removed before this call with no summary in their place.
    """

    agent_call: int
    run_id: str
    epoch: int
    outcome: str
    chars_sent: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    cost_unknown: str | None = None
    fold: str | None = None
    dropped: int = 0


class WindowSeries(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The window chart's points of one agent.

    Attributes:
        agent_id: the agent (wire ``agentId``).
        calls: the model calls the agent has made over its life.
        limit: the most points a series holds (its newest calls).
        points: the newest numbered calls, at most ``limit``, oldest first.
    """

    agent_id: str
    calls: int
    limit: int
    points: tuple[WindowPoint, ...]


def chars_sent(view: ServedView) -> int:
    """The characters one served view sent (see the module's readings)."""
    total = len(view.system.text)
    total += sum(len(message.content) for message in view.messages.as_sent)
    total += sum(len(line.text) for line in view.messages.request_only)
    for tool in view.tools.schemas:
        schema = msgspec.json.encode(tool.as_schema().input_schema).decode("utf-8")
        total += len(tool.name) + len(tool.description) + len(schema)
    return total


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _removed(log: RunLog, last_seq: int) -> dict[int, int]:
    """Messages the run's window records up to ``last_seq`` removed, by the iteration they
    served (read through the key index: only the bundles that filed records)."""
    records = log.value_at("compactions", last_seq)
    removed: dict[int, int] = {}
    for record in records if isinstance(records, list | tuple) else ():
        if not isinstance(record, Mapping):
            continue
        iteration = _count(record.get("iteration"))
        count = _count(record.get("removedMessageCount")) or 0
        if iteration is not None and count > 0:
            removed[iteration] = removed.get(iteration, 0) + count
    return removed


def _call_cost(log: RunLog, anchor_seq: int) -> Mapping[str, Any] | None:
    """The ``callCost`` the epoch's ``call-model`` bundle wrote: the anchor itself (a legacy
    log) or the bundle just after its receipt."""
    for seq in (anchor_seq, anchor_seq + 1):
        bundle = log.bundle(seq)
        if bundle is not None and bundle.stage == "call-model":
            for write in bundle.writes:
                if isinstance(write, CallCostWrite) and isinstance(write.value, Mapping):
                    return write.value
            return None
    return None


def _amount(cost: Mapping[str, Any] | None) -> tuple[float | None, str | None]:
    if cost is None:
        return None, None
    amount = cost.get("amount")
    if isinstance(amount, int | float) and not isinstance(amount, bool):
        return float(amount), None
    unknown = cost.get("unknown")
    return None, unknown if isinstance(unknown, str) else "unknown"


def _run_points(
    log: RunLog, *, run: str, folds: Mapping[int, tuple[str, int]]
) -> list[WindowPoint]:
    """The numbered calls of one run, in commit order."""
    located = epochs(log)
    if not located:
        return []
    views = served_views(log)
    if len(views) != len(located):  # epoch numbers repeat in a damaged log: one by one
        views = tuple(view_of(location, log) for location in located)
    last = located[-1].anchor_seq + 1
    removed = _removed(log, last)
    # Only a priced agent's calls wrote a cost: the others' bundles are not read for one.
    priced = log.value_at("callCost", last) is not UNKNOWN
    points = []
    for location, view in zip(located, views, strict=True):
        entry = epoch_entry(log, location, view)
        if entry.agent_call is None:
            continue
        usage = entry.usage or {}
        amount, unknown = _amount(_call_cost(log, location.anchor_seq) if priced else None)
        fold, folded = folds.get(location.epoch, (None, 0))
        points.append(
            WindowPoint(
                agent_call=entry.agent_call,
                run_id=run,
                epoch=location.epoch,
                outcome=location.outcome,
                chars_sent=chars_sent(view),
                input_tokens=_count(usage.get("input")),
                output_tokens=_count(usage.get("output")),
                cost=amount,
                cost_unknown=unknown,
                fold=fold,
                dropped=max(0, removed.get(location.epoch, 0) - folded),
            )
        )
    return points


async def window_series(store: Store, agent_id: str, *, limit: int = CHART_CALLS) -> WindowSeries:
    """The agent's newest ``limit`` calls as chart points, oldest first; an agent the store
    has no conversation of has none. Reads the logs of the newest runs only, until ``limit``
    calls are in hand (see the module's readings).

    Raises:
        ValueError: ``limit`` is below 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    state = await store.conversation_state(agent_id)
    if state is None:
        return WindowSeries(agent_id=agent_id, calls=0, limit=limit, points=())
    folds: dict[str, dict[int, tuple[str, int]]] = {}
    for span in await store.folded_spans(agent_id):
        by_epoch = folds.setdefault(span.run_id, {})
        _, count = by_epoch.get(span.iteration, ("", 0))
        by_epoch[span.iteration] = (span.summary_fingerprint, count + span.message_count)
    found: list[WindowPoint] = []
    for run in reversed(await store.runs(agent_id)):
        if len(found) >= limit:
            break
        found.extend(
            await store.read_run(
                run.run_id, partial(_run_points, run=run.run_id, folds=folds.get(run.run_id, {}))
            )
        )
    found.sort(key=lambda point: point.agent_call)
    return WindowSeries(
        agent_id=agent_id, calls=state.model_calls, limit=limit, points=tuple(found[-limit:])
    )
