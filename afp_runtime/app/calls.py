"""An agent's model call by its agent-wide number, and the diff between any two of them
(docs/served.md, docs/architecture.md#the-application-layer): which run made each, at which
epoch and turn, how it ended, and what it was sent.

Readings settled here:

* ``call_diff(store, agent, n, m)`` is what changed from call ``m`` (``before``) to call ``n``
  (``after``), wherever the two sit: one run, two runs of a turn, two turns. ``m`` may be the
  later call; the sides say which is which. ``m == n`` is an empty diff.
* A number names a call when it is from 1 to the agent's ``modelCalls``; anything else is
  ``NotFound`` naming the calls that exist and the argument (``n`` or ``m``). An epoch
  abandoned by a crash keeps its number (docs/loop.md): it diffs like any other, its side
  saying ``outcome: "abandoned"``.
* ``call_ending`` reads how a call ended from the ``call-model`` bundle that answers its
  epoch: the reply it committed (text, tool calls, usage, stop reason, attempts), or the
  failure (kind, message, status, attempts); neither for a call still in flight or abandoned
  by a crash. A record that does not read as its shape is named in ``damaged``, never raised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import NotFound
from afp_runtime.messages import ToolCall, Usage
from afp_runtime.records import CallFailureWrite, CommitBundle, ReplyWrite, RunLog, Write
from afp_runtime.served import ServedView, ViewDiff, diff_views, epoch_at, find_agent_call
from afp_runtime.store import RunRow, Store


class AgentCall(msgspec.Struct, frozen=True, kw_only=True):
    """Where an agent's call ``number`` sits, and what it was sent.

    Attributes:
        number: the call's number over the agent's whole life, from 1.
        run: the run that made it.
        epoch: the call's epoch within that run.
        view: what the model was sent.
    """

    number: int
    run: RunRow
    epoch: int
    view: ServedView


class CallSide(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One side of a diff between two of an agent's calls: where the call sits.

    Attributes:
        agent_call: the call's number over the agent's life (wire ``agentCall``).
        run_id: the run that made it (wire ``runId``).
        turn: that run's turn.
        epoch: the call's epoch within the run.
        outcome: how the call ended: ``replied``, ``failed``, ``in-flight`` (its run is still
            live) or ``abandoned`` (its run crashed before the reply was committed).
    """

    agent_call: int
    run_id: str
    turn: int
    epoch: int
    outcome: str


class CallDiff(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What changed in what the model was sent from one of an agent's calls to another.

    Attributes:
        agent_id: the agent (wire ``agentId``).
        before: where the earlier side (``m``, the one compared against) sits.
        after: where the later side (``n``) sits.
        diff: the change itself, as ``store.diff`` gives it within one run (its ``before`` and
            ``after`` are the two epochs).
    """

    agent_id: str
    before: CallSide
    after: CallSide
    diff: ViewDiff


async def call_among(store: Store, runs: Sequence[RunRow], number: int) -> AgentCall | None:
    """Call ``number`` among ``runs`` (an agent's runs in start order, or a stretch of them),
    or None when none of them made it. Reads about log2 of the runs' logs."""
    if number < 1:
        return None
    found = await find_agent_call([run.run_id for run in runs], number, store.read_run)
    if found is None:
        return None
    index, epoch, view = found
    return AgentCall(number=number, run=runs[index], epoch=epoch, view=view)


async def agent_call(store: Store, agent_id: str, number: int) -> AgentCall | None:
    """The agent's call ``number`` over its whole life, or None when it made no such call."""
    return await call_among(store, await store.runs(agent_id), number)


def _made(agent_id: str, made: int) -> str:
    if made == 0:
        return f"agent {agent_id!r} has made no model call yet"
    if made == 1:
        return f"agent {agent_id!r} has made one model call, call 1"
    return f"agent {agent_id!r} has made calls 1 to {made}"


def no_call(agent_id: str, made: int, number: int, argument: str) -> NotFound:
    """The error of a call number (argument ``argument``) that names none of the agent's
    ``made`` calls: it names the ones that exist. A number among them that no run's log holds
    (its receipt stored in a shape that is refused) is named as such."""
    missing = (
        f"call {number} is in none of its runs' logs"
        if 1 <= number <= made
        else f"there is no call {number}"
    )
    return NotFound(
        f"{_made(agent_id, made)}; {missing}", what="call", value=number, argument=argument
    )


async def _side(
    store: Store, agent_id: str, runs: Sequence[RunRow], made: int, number: int, argument: str
) -> tuple[CallSide, ServedView]:
    found = await call_among(store, runs, number) if 1 <= number <= made else None
    if found is None:
        raise no_call(agent_id, made, number, argument)
    epoch = found.epoch
    located = await store.read_run(found.run.run_id, lambda log: epoch_at(log, epoch))
    side = CallSide(
        agent_call=number,
        run_id=found.run.run_id,
        turn=found.run.turn,
        epoch=epoch,
        # The log located this epoch a moment ago; a run's log only grows.
        outcome=located.outcome if located is not None else "in-flight",
    )
    return side, found.view


async def call_diff(store: Store, agent_id: str, n: int, m: int) -> CallDiff:
    """What changed in what the model was sent from the agent's call ``m`` to its call ``n``,
    across runs and turns. Reads about log2 of the agent's runs' logs per side.

    Raises:
        NotFound: no such agent, or no call ``n`` or ``m`` (``n`` checked first); the message
            names the calls the agent has made, the context the ``argument``.
    """
    state = await store.conversation_state(agent_id)
    if state is None:
        raise NotFound(f"there is no agent {agent_id!r}", what="agent", value=agent_id)
    runs = await store.runs(agent_id)
    after, later = await _side(store, agent_id, runs, state.model_calls, n, "n")
    before, earlier = await _side(store, agent_id, runs, state.model_calls, m, "m")
    return CallDiff(agent_id=agent_id, before=before, after=after, diff=diff_views(earlier, later))


class CallEnding(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """How one of an agent's calls ended: what the model answered, or why nothing came.

    Attributes:
        outcome: ``replied``, ``failed``, ``in-flight`` or ``abandoned`` (as ``CallSide``).
        attempts: the sends the call took (0 when none was recorded: in flight or abandoned).
        content: the reply's text (``replied``).
        tool_calls: the tool calls the reply made, with their arguments (wire ``toolCalls``).
        stop_reason: why the model stopped (wire ``stopReason``), ``""`` without a reply.
        usage: the tokens the provider reported for the reply, None when it reported none.
        error_kind: the failure's kind (wire ``errorKind``; ``failed``), such as ``auth``.
        error: the failure's message (``failed``).
        status: the failure's HTTP status, when the provider answered with one.
        damaged: what could not be read of a reply or failure record, ``""`` when all could.
    """

    outcome: str
    attempts: int
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str = ""
    usage: Usage | None = None
    error_kind: str = ""
    error: str = ""
    status: int | None = None
    damaged: str = ""


class _Reply(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The ``reply`` record as the loop commits it (its ``CommittedReply``)."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    stop_reason: str = "end"


class _Failure(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The ``callFailure`` record as the loop commits it."""

    error_kind: str = ""
    message: str = ""
    status: int | None = None


def _last_set(bundle: CommitBundle, kind: type[Write]) -> Any:
    value = None
    for write in bundle.writes:
        if isinstance(write, kind) and write.verb == "set":
            value = getattr(write, "value", None)
    return value


def _ending(log: RunLog, epoch: int) -> CallEnding | None:
    located = epoch_at(log, epoch)
    if located is None:
        return None
    ending = CallEnding(outcome=located.outcome, attempts=located.attempts)
    if located.outcome not in ("replied", "failed"):
        return ending
    # A receipt anchors the epoch and the call-model bundle right after it answers; a legacy
    # epoch is anchored by its call-model bundle itself (docs/served.md#where-epochs-are-found).
    bundle = log.bundle(located.anchor_seq)
    if bundle is None or bundle.stage != "call-model":
        bundle = log.bundle(located.anchor_seq + 1)
    if bundle is None:
        return ending
    kind: type[Write] = ReplyWrite if located.outcome == "replied" else CallFailureWrite
    record = _last_set(bundle, kind)
    try:
        if not isinstance(record, Mapping):
            raise msgspec.ValidationError(f"expected an object, got {type(record).__name__}")
        if kind is ReplyWrite:
            reply = msgspec.convert(record, _Reply)
            return msgspec.structs.replace(
                ending,
                content=reply.content,
                tool_calls=reply.tool_calls,
                usage=reply.usage,
                stop_reason=reply.stop_reason,
            )
        failure = msgspec.convert(record, _Failure)
    except msgspec.ValidationError as exc:
        what = "reply" if kind is ReplyWrite else "failure"
        return msgspec.structs.replace(ending, damaged=f"the {what} record does not read: {exc}")
    return msgspec.structs.replace(
        ending, error_kind=failure.error_kind, error=failure.message, status=failure.status
    )


async def call_ending(store: Store, found: AgentCall) -> CallEnding:
    """How the call ``found`` ended, read from its run's log (one read)."""
    epoch = found.epoch
    ending = await store.read_run(found.run.run_id, lambda log: _ending(log, epoch))
    # The call was located in this log a moment ago, and a run's log only grows.
    return ending if ending is not None else CallEnding(outcome="in-flight", attempts=0)
