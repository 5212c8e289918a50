"""Batch dispatch of the tool calls of one model reply (docs/loop.md#planning-a-batch steps 2, 3, 5
and docs/loop.md#dispatch-groups-and-ordering).

Three steps, each usable on its own by the loop:

1. ``plan_batch`` decides, before anything runs, which calls can run and answers the others
   (unknown tool, unreadable or invalid arguments) with a pre-decided outcome.
2. ``dispatch_groups`` splits the runnable calls into groups: a maximal run of consecutive
   ``parallel_safe`` calls is one concurrent group, any other call a group of its own (a
   barrier). Calls with a pre-decided outcome never run, so they neither join nor split a group
   (decided here: they have no effect to order).
3. ``run_batch`` runs the groups in order and returns one outcome per call, in call order.

Not here: renaming repeated call ids, peeling reserved arguments, period decisions and approval
questions (the loop does those around these steps).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.errors import ConfigError, shown, transient_resource_error
from afp_runtime.messages import Message, ToolCall, tool_result
from afp_runtime.tools import texts
from afp_runtime.tools._decode import decode_args
from afp_runtime.tools._results import Unencodable, capped, result_text
from afp_runtime.tools.context import PersonAsked, ToolClock, ToolContext
from afp_runtime.tools.declaration import Tool
from afp_runtime.tools.schema import format_path, validate_args

log = get_logger()

ToolStatus = Literal[
    "ok",
    "error",
    "timeout",
    "invalid-args",
    "unknown-tool",
    "not-dispatched",
    "interrupted",
    "unencodable",
    "declined",
    "refused",
    "asked",
    "resource",
]

NOT_DISPATCHED_STATUSES: frozenset[str] = frozenset(
    {"unknown-tool", "invalid-args", "refused", "declined", "not-dispatched"}
)
"""The statuses whose tool function never ran; their messages carry ``not_dispatched``."""


class ToolOutcome(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """How one tool call ended, and the observation the model reads next.

    Attributes:
        tool_call_id: the call answered (wire ``toolCallId``).
        tool_name: the name the model called (wire ``toolName``).
        status: ``ok``, ``error``, ``timeout``, ``invalid-args``, ``unknown-tool``,
            ``not-dispatched``, ``interrupted``, ``unencodable``, ``declined``, ``refused``,
            or ``asked``: the tool called ``ctx.ask_person`` (never committed as a result:
            the turn pauses and the person's answer becomes the result).
        content: the observation text, as the tool message carries it (for ``asked``, the
            question).
        result_chars: code points of the observation before any cut (wire ``resultChars``);
            equal to ``len(content)`` unless ``truncated``.
        duration_ms: milliseconds the call took on the injected clock (wire ``durationMs``);
            ``None`` when the function never ran.
        truncated: the result was longer than the tool's ``max_result_chars`` and was cut.
        not_dispatched: the function never ran (wire ``notDispatched``). Derived from
            ``status`` (``NOT_DISPATCHED_STATUSES``); a value passed in is replaced.
    """

    tool_call_id: str
    tool_name: str
    status: ToolStatus
    content: str
    result_chars: int
    duration_ms: int | None = None
    truncated: bool = False
    not_dispatched: bool = False

    def __post_init__(self) -> None:
        derived = self.status in NOT_DISPATCHED_STATUSES
        if self.not_dispatched != derived:
            msgspec.structs.force_setattr(self, "not_dispatched", derived)

    def message(self) -> Message:
        """The ``tool`` message answering the call, with its ``not_dispatched`` marker."""
        return tool_result(
            self.tool_call_id, self.tool_name, self.content, not_dispatched=self.not_dispatched
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedCall:
    """One call of a batch after planning.

    Attributes:
        call: the call as the model made it.
        tool: the tool it resolved to; ``None`` for an unknown name.
        args: what ``tool.fn`` receives: a private copy of the arguments (a dict), or the
            decoded ``args_type`` Struct. ``None`` when the call will not run.
        outcome: the pre-decided outcome of a call that will not run; ``None`` when runnable.
    """

    call: ToolCall
    tool: Tool | None = None
    args: Any = None
    outcome: ToolOutcome | None = None

    @property
    def runnable(self) -> bool:
        """The call will run (no outcome was decided at planning)."""
        return self.outcome is None and self.tool is not None


GroupStartHook = Callable[[list[PlannedCall]], Awaitable[None]]
CallStartedHook = Callable[[PlannedCall, int, int, bool], None]
CallFinishedHook = Callable[[ToolOutcome, int], Awaitable[None]]
ContextFactory = Callable[[PlannedCall], ToolContext]


def unrun_outcome(call: ToolCall, status: ToolStatus, content: str) -> ToolOutcome:
    """The outcome of a call whose function did not run now (pre-decided, declined, answered
    from elsewhere): ``content`` is the observation, no duration."""
    return _ran(call, status, content, None)


def _struct_problem(error: msgspec.ValidationError) -> str:
    """msgspec's decoding message with its ``- at `$.a.b``` suffix turned into our path form."""
    text = str(error)
    head, sep, where = text.rpartition(" - at `$")
    if not sep or not where.endswith("`"):
        return f"{format_path(())}: {text}"
    path = where[:-1].removeprefix(".")
    return f"{path or format_path(())}: {head}"


def plan_call(call: ToolCall, tools: Mapping[str, Tool]) -> PlannedCall:
    """Plan one call: resolve its tool and check its arguments (docs/loop.md#planning-a-batch steps
    2, 3, 5)."""
    found = tools.get(call.name)
    if found is None:
        return PlannedCall(
            call=call,
            outcome=unrun_outcome(call, "unknown-tool", texts.unknown_tool_text(call.name, tools)),
        )
    problems: tuple[str, ...] = (texts.ARGS_NOT_OBJECT,)
    args: Any = None
    if call.args_text is None:
        problems = validate_args(found.input_schema, call.args)
        try:
            # A private deep copy: a tool that edits its arguments must not edit the recorded call.
            args = msgspec.json.decode(msgspec.json.encode(call.args))
        except (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError):
            problems = (*problems, texts.ARGS_NOT_JSON)
    if not problems and found.args_type is not None:
        try:
            args = decode_args(args, found.args_type)
        except msgspec.ValidationError as exc:
            problems = (_struct_problem(exc),)
    if problems:
        content = texts.invalid_args_text(call.name, problems)
        return PlannedCall(
            call=call, tool=found, outcome=unrun_outcome(call, "invalid-args", content)
        )
    return PlannedCall(call=call, tool=found, args=args)


def plan_batch(calls: Sequence[ToolCall], tools: Mapping[str, Tool]) -> tuple[PlannedCall, ...]:
    """Plan every call of a reply, in order, before anything runs.

    Args:
        calls: the reply's calls, ids already made unique by the loop.
        tools: the agent's tools by name.

    Returns:
        One ``PlannedCall`` per call, in call order.
    """
    return tuple(plan_call(call, tools) for call in calls)


def _group_positions(planned: Sequence[PlannedCall]) -> list[list[int]]:
    groups: list[list[int]] = []
    open_parallel = False
    for position, item in enumerate(planned):
        if not item.runnable:
            continue
        assert item.tool is not None
        if item.tool.parallel_safe and open_parallel:
            groups[-1].append(position)
        else:
            groups.append([position])
        open_parallel = item.tool.parallel_safe
    return groups


def dispatch_groups(planned: Sequence[PlannedCall]) -> list[list[PlannedCall]]:
    """Split the runnable calls into dispatch groups, in call order
    (docs/loop.md#dispatch-groups-and-ordering).

    A maximal run of consecutive ``parallel_safe`` calls forms one concurrent group; any other
    call is a group of its own. Calls that will not run are left out and do not split a run.
    """
    return [[planned[p] for p in group] for group in _group_positions(planned)]


async def run_batch(
    planned: Sequence[PlannedCall],
    *,
    context_for: ContextFactory,
    clock: ToolClock,
    max_concurrent: int = 4,
    on_group_start: GroupStartHook | None = None,
    on_call_started: CallStartedHook | None = None,
    on_call_finished: CallFinishedHook | None = None,
    prepare: Callable[[PlannedCall], PlannedCall] | None = None,
) -> tuple[ToolOutcome, ...]:
    """Run the runnable calls group after group; return one outcome per call, in call order.

    Args:
        planned: the batch as ``plan_batch`` made it.
        context_for: builds the ``ToolContext`` of a call, just before it runs.
        clock: the clock every call's ``fail_after(timeout_s)`` runs on.
        max_concurrent: most calls of a concurrent group running at once, an int >= 1.
        on_group_start: awaited with a group's calls before any of them runs (the loop commits
            their ``started`` journal rows there).
        on_call_started: called as a call starts, with the call, its position in ``planned``,
            the batch size and whether its group holds more than one call.
        on_call_finished: awaited with each outcome and the call's position as the call ends,
            in completion order, one at a time. It is not called for pre-decided outcomes.
        prepare: called with a call just before it runs (its concurrency slot taken); the plan
            it returns is what runs (the loop redraws a period argument there,
            docs/time.md#dispatch).

    A call that asks the person (``ctx.ask_person``) ends the batch: the rest of its group
    runs to completion (those calls had started), later groups never start and their calls
    come back ``not-dispatched`` (docs/loop.md#dispatch-groups-and-ordering).

    Returns:
        One outcome per entry of ``planned``, in the same order, pre-decided ones included.

    Raises:
        ConfigError: ``max_concurrent`` is not an int >= 1.
        Exception: whatever a hook raises, which ends the batch (a lone exception from a
            concurrent group is taken out of its exception group). Cancellation propagates.
    """
    _check_max_concurrent(max_concurrent)
    groups = _group_positions(planned)
    # The limiter and the finish lock only matter where calls run alongside each other: a
    # lone call (the common case) runs without them, saving their checkpoints.
    concurrent_groups = any(len(group) > 1 for group in groups)
    batch = _Batch(
        planned=planned,
        outcomes=[item.outcome for item in planned],
        context_for=context_for,
        clock=clock,
        on_call_started=on_call_started,
        on_call_finished=on_call_finished,
        prepare=prepare,
        limiter=anyio.CapacityLimiter(max_concurrent) if concurrent_groups else None,
        finish_lock=anyio.Lock() if concurrent_groups else None,
    )
    asked = False
    for group in groups:
        if asked:
            batch.not_dispatched(group)
            continue
        if on_group_start is not None:
            await on_group_start([planned[p] for p in group])
        await batch.run_group(group)
        asked = any(getattr(batch.outcomes[p], "status", None) == "asked" for p in group)
    done = [outcome for outcome in batch.outcomes if outcome is not None]
    assert len(done) == len(planned), "every call of the batch has an outcome"
    return tuple(done)


def _check_max_concurrent(max_concurrent: object) -> None:
    if (
        isinstance(max_concurrent, bool)
        or not isinstance(max_concurrent, int)
        or max_concurrent < 1
    ):
        raise ConfigError(
            "max_concurrent must be an int >= 1",
            field="max_concurrent",
            value=shown(max_concurrent),
        )


@dataclass(slots=True, kw_only=True)
class _Batch:
    """One batch in flight: its plan, the outcomes so far (by position) and its hooks."""

    planned: Sequence[PlannedCall]
    outcomes: list[ToolOutcome | None]
    context_for: ContextFactory
    clock: ToolClock
    on_call_started: CallStartedHook | None
    on_call_finished: CallFinishedHook | None
    prepare: Callable[[PlannedCall], PlannedCall] | None
    limiter: anyio.CapacityLimiter | None
    finish_lock: anyio.Lock | None

    def not_dispatched(self, group: Sequence[int]) -> None:
        """A group after a call asked the person never starts."""
        for position in group:
            call = self.planned[position].call
            content = texts.not_dispatched_text(call.name)
            self.outcomes[position] = unrun_outcome(call, "not-dispatched", content)

    async def run_group(self, group: Sequence[int]) -> None:
        """A lone call runs as it is; a concurrent group in a task group, whose lone exception
        is taken out of its exception group."""
        if len(group) == 1:
            await self._run_one(group[0], False)
            return
        try:
            async with anyio.create_task_group() as task_group:
                for position in group:
                    task_group.start_soon(self._run_one, position, True)
        except BaseExceptionGroup as group_error:
            if len(group_error.exceptions) == 1:
                raise group_error.exceptions[0] from None
            raise

    async def _start_and_run(
        self, item: PlannedCall, position: int, concurrent: bool
    ) -> ToolOutcome:
        if self.prepare is not None:
            item = self.prepare(item)
        context = self.context_for(item)
        if self.on_call_started is not None:
            self.on_call_started(item, position, len(self.planned), concurrent)
        return await _run_call(item, context, self.clock)

    async def _run_one(self, position: int, concurrent: bool) -> None:
        item = self.planned[position]
        if not concurrent:
            self.outcomes[position] = outcome = await self._start_and_run(item, position, False)
            if self.on_call_finished is not None:
                await self.on_call_finished(outcome, position)
            return
        assert self.limiter is not None and self.finish_lock is not None
        async with self.limiter:
            outcome = await self._start_and_run(item, position, True)
        self.outcomes[position] = outcome
        if self.on_call_finished is not None:
            async with self.finish_lock:
                await self.on_call_finished(outcome, position)


async def _invoke(tool: Tool, args: Any, context: ToolContext) -> Any:
    if tool.is_async:
        return await tool.fn(args, context)
    sink = context.on_progress
    if sink is not None:
        loop_sink = sink

        def from_worker(payload: Any) -> None:
            # A sync tool reports from its worker thread; its sink must run on the event loop.
            anyio.from_thread.run_sync(loop_sink, payload)

        context = dataclasses.replace(context, on_progress=from_worker)
    # A thread cannot be cancelled: on timeout or shutdown it is abandoned and its result,
    # whenever it arrives, is discarded (docs/loop.md#tool-declarations).
    return await anyio.to_thread.run_sync(
        functools.partial(tool.fn, args, context), abandon_on_cancel=True
    )


async def _run_call(item: PlannedCall, context: ToolContext, clock: ToolClock) -> ToolOutcome:
    tool, call = item.tool, item.call
    assert tool is not None
    started = clock.now_ms()
    failure: Exception | None = None
    result: Any = None
    try:
        with clock.fail_after(tool.timeout_s):
            try:
                result = await _invoke(tool, item.args, context)
            except anyio.get_cancelled_exc_class():
                raise
            except PersonAsked as ask:
                return ToolOutcome(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    status="asked",
                    content=ask.question,
                    result_chars=0,
                    duration_ms=clock.now_ms() - started,
                )
            except Exception as exc:  # the tool's own failure, its own TimeoutError included
                failure = exc
    except TimeoutError:
        log.warning(
            "tool.timeout",
            tool_name=call.name,
            tool_call_id=call.id,
            timeout_s=tool.timeout_s,
        )
        content = texts.timeout_text(call.name, tool.timeout_s)
        return _ran(call, "timeout", content, clock.now_ms() - started)
    duration = clock.now_ms() - started
    if failure is not None:
        log.warning(
            "tool.failed",
            tool_name=call.name,
            tool_call_id=call.id,
            error_type=type(failure).__name__,
            exc_info=failure,
        )
        # Out of descriptors, memory or disk: the loop stalls the turn and runs the call again
        # later instead of handing the model an error (docs/loop.md#observations).
        status: ToolStatus = "resource" if transient_resource_error(failure) else "error"
        return _ran(call, status, texts.error_text(call.name, failure), duration)
    try:
        text = result_text(result)
    except Unencodable as exc:
        log.warning(
            "tool.unencodable", tool_name=call.name, tool_call_id=call.id, type=exc.type_name
        )
        return _ran(call, "unencodable", texts.unencodable_text(call.name, exc.type_name), duration)
    content, truncated = capped(text, tool.max_result_chars)
    return ToolOutcome(
        tool_call_id=call.id,
        tool_name=call.name,
        status="ok",
        content=content,
        result_chars=len(text),
        duration_ms=duration,
        truncated=truncated,
    )


def _ran(call: ToolCall, status: ToolStatus, content: str, duration_ms: int | None) -> ToolOutcome:
    return ToolOutcome(
        tool_call_id=call.id,
        tool_name=call.name,
        status=status,
        content=content,
        result_chars=len(content),
        duration_ms=duration_ms,
    )
