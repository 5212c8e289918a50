"""Reads over one run's log that the API, the CLI and ``afp.Store`` share (pure: a RunLog in,
values out; callers run them in a worker thread, never on the event loop).

Readings settled here:

* An epoch's listing entry takes ``agentCall`` and whether a wire digest exists from the
  receipt as stored (``null``/``false`` when there is none), ``toolCallCount`` and ``usage``
  from the ``reply`` its ``call-model`` bundle committed (0 and ``null`` without a reply), and
  ``gaps`` from its view.
* An agent's call ``n`` is found by halving its runs in start order: ``agentCall`` numbers
  rise with commit order over the agent's life (each is the conversation's count plus one,
  committed with the receipt), so a run whose receipts all come after ``n`` sends the search
  left and one whose receipts all come before it sends it right. A run with no receipt says
  nothing and the search looks at the run after it. Logs read: about log2 of the run count.
* A ``discard`` span's originals are resolved from the log of the run that folded them: the
  ``window`` bundle of the span's iteration that appended to ``foldedSpans``; the removed
  messages are what the window held just before that bundle and no longer holds after it (the
  common head and tail of the two lists are kept). When that count differs from the span's
  ``messageCount`` (several spans folded in one visit) the originals are not resolvable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import msgspec

from afp_runtime.errors import StoreDamaged
from afp_runtime.messages import Message, message_from_body
from afp_runtime.records import FoldedSpansWrite, MessageRef, ReplyWrite, RunLog, StoredFoldedSpan
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
    reply = last_set(call, ReplyWrite)
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
    found = _call_side(log, n)
    return found if isinstance(found, tuple) else None


def _call_side(log: RunLog, n: int) -> tuple[int, ServedView] | int:
    """Call ``n`` against this run: its epoch and view when the run made it; else ``-1`` when
    the run's calls all come after ``n``, ``1`` when they all come before it, ``0`` when the
    run holds no numbered call."""
    numbered = 0
    for location in epochs(log):
        receipt = receipt_at(log, location.epoch)
        if receipt is None:
            continue
        if receipt.agent_call == n:
            return location.epoch, view_of(location, log)
        if not numbered:
            numbered = -1 if receipt.agent_call > n else 1
    return numbered


T = TypeVar("T")
LogReader = Callable[[str, Callable[[RunLog], T]], Awaitable[T]]
"""``read(run_id, fn)``: ``fn`` over the run's log, off the event loop (a store's
``read_run``)."""


async def find_agent_call(
    run_ids: Sequence[str], n: int, read: LogReader[Any]
) -> tuple[int, int, ServedView] | None:
    """Where the agent's call ``n`` sits among its runs (``run_ids`` in start order): the
    run's index, the epoch and its view; None when no run made it. Reads about log2 of the
    runs' logs (see the module's readings)."""
    low, high = 0, len(run_ids) - 1
    while low <= high:
        middle = probe = (low + high) // 2
        side = await read(run_ids[probe], lambda log: _call_side(log, n))
        while side == 0 and probe < high:
            probe += 1
            side = await read(run_ids[probe], lambda log: _call_side(log, n))
        if isinstance(side, tuple):
            return probe, side[0], side[1]
        if side == 1:
            low = probe + 1
        else:
            high = middle - 1
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
            and any(isinstance(write, FoldedSpansWrite) for write in bundle.writes)
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
