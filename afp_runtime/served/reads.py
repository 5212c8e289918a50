"""Reads over one run's log that the API, the CLI and ``afp.Store`` share (pure: a RunLog in,
values out; callers run them in a worker thread, never on the event loop).

Readings settled here:

* An epoch's listing entry takes ``agentCall`` and whether a wire digest exists from the
  receipt as stored (``null``/``false`` when there is none), ``toolCallCount`` and ``usage``
  from the ``reply`` its ``call-model`` bundle committed (0 and ``null`` without a reply), and
  ``gaps`` from its view.
* ``/calls/{n}`` scans the agent's runs in start order and their receipts in commit order for
  the one whose ``agentCall`` is ``n`` (linear in the agent's epochs; an index comes later).
* A ``discard`` span's originals are resolved from the log of the run that folded them: the
  ``window`` bundle of the span's iteration that appended to ``foldedSpans``; the removed
  messages are what the window held just before that bundle and no longer holds after it (the
  common head and tail of the two lists are kept). When that count differs from the span's
  ``messageCount`` (several spans folded in one visit) the originals are not resolvable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import StoreDamaged
from afp_runtime.messages import Message, message_from_body
from afp_runtime.records import MessageRef, RunLog, StoredFoldedSpan
from afp_runtime.served.locate import EpochLocation, epochs, last_set
from afp_runtime.served.view import ServedView, receipt_at, receipt_write, view_of


class EpochEntry(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One model call (epoch) of a run, as listings show it.

    Attributes:
        epoch: the call's number within its run, from 1.
        call_runtime_stage_id: the ``call-model`` stage that made it (wire
            ``callRuntimeStageId``).
        agent_call: its number over the agent's whole life (wire ``agentCall``), None when the
            receipt holds none.
        outcome: how the call ended (``reply``, ``failed``, ``abandoned``...).
        attempts: sends it took.
        tool_call_count: tool calls its reply made (wire ``toolCallCount``).
        usage: the reply's token usage in wire form, None without a reply.
        wire: whether the receipt digested the wire bytes.
        gaps: the gap kinds of its served view.
    """

    epoch: int
    call_runtime_stage_id: str
    agent_call: int | None
    outcome: str
    attempts: int
    tool_call_count: int
    usage: dict[str, Any] | None
    wire: bool
    gaps: list[str]


def _reply_of(log: RunLog, location: EpochLocation) -> Mapping[str, Any] | None:
    call = log.bundle(location.anchor_seq)
    if call is None or call.stage != "call-model":
        call = log.bundle(location.anchor_seq + 1)
        if call is None or call.stage != "call-model":
            return None
    reply = last_set(call, "reply")
    return reply if isinstance(reply, Mapping) else None


def epoch_entry(log: RunLog, location: EpochLocation, view: ServedView) -> EpochEntry:
    """The listing entry of one located epoch."""
    receipt = receipt_write(log.bundle(location.anchor_seq))
    agent_call = receipt.get("agentCall") if isinstance(receipt, Mapping) else None
    reply = _reply_of(log, location)
    calls = reply.get("toolCalls") if reply is not None else None
    usage = reply.get("usage") if reply is not None else None
    return EpochEntry(
        epoch=location.epoch,
        call_runtime_stage_id=location.call_runtime_stage_id,
        agent_call=agent_call if isinstance(agent_call, int) else None,
        outcome=location.outcome,
        attempts=location.attempts,
        tool_call_count=len(calls) if isinstance(calls, Sequence) else 0,
        usage=dict(usage) if isinstance(usage, Mapping) else None,
        wire=isinstance(receipt, Mapping) and isinstance(receipt.get("wire"), Mapping),
        gaps=[gap.gap for gap in view.gaps],
    )


def epoch_entries(log: RunLog, *, start: int, limit: int) -> tuple[list[EpochEntry], int]:
    """The listing entries of epochs ``start..start+limit`` and how many epochs there are."""
    located = epochs(log)
    chosen = located[start : start + limit]
    return [epoch_entry(log, loc, view_of(loc, log)) for loc in chosen], len(located)


def find_call(log: RunLog, n: int) -> tuple[int, ServedView] | None:
    """The epoch number and view of the receipt with ``agentCall == n`` in this run."""
    for location in epochs(log):
        receipt = receipt_at(log, location.epoch)
        if receipt is not None and receipt.agent_call == n:
            return location.epoch, view_of(location, log)
    return None


def _refs(value: Any) -> list[MessageRef]:
    if not isinstance(value, Sequence):
        return []
    return [ref for ref in value if isinstance(ref, MessageRef)]


def folded_from_log(log: RunLog, span: StoredFoldedSpan) -> list[Message] | None:
    """A folded span's originals as the run's log holds them, or None when unresolvable."""
    visit = next(
        (
            bundle
            for bundle in log.bundles(0)
            if bundle.stage == "window"
            and bundle.iteration == span.iteration
            and any(write.key == "foldedSpans" for write in bundle.writes)
        ),
        None,
    )
    if visit is None or visit.seq == 0:
        return None
    before = _refs(log.value_at("history", visit.seq - 1))
    after = _refs(log.value_at("history", visit.seq))
    head = 0
    while (
        head < len(before)
        and head < len(after)
        and before[head].fingerprint == after[head].fingerprint
    ):
        head += 1
    tail = 0
    while (
        tail < len(before) - head
        and tail < len(after) - head
        and before[-1 - tail].fingerprint == after[-1 - tail].fingerprint
    ):
        tail += 1
    removed = before[head : len(before) - tail]
    if len(removed) != span.message_count:
        return None
    messages: list[Message] = []
    for ref in removed:
        body = log.body(ref.fingerprint)
        if body is None:
            return None
        try:
            message = message_from_body(
                body, not_dispatched=ref.not_dispatched, injected_by=ref.injected_by
            )
        except (msgspec.MsgspecError, ValueError) as exc:
            raise StoreDamaged(f"body {ref.fingerprint} does not decode ({exc})") from exc
        messages.append(message)
    return messages
