"""The fakes of ``afp_runtime.testing``: a virtual clock, scripted-model helpers, log capture.

The fake clock only moves forward: by an explicit ``advance()``, or — inside
``FakeClock.autojump()`` — to the earliest pending deadline once every task is blocked
(docs/architecture.md#decision-7-every-deadline-goes-through-the-clock). So a test simulates weeks
without waiting.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import anyio.lowlevel
import structlog

from afp_runtime.messages import ModelReply, ToolCall, Usage


class _Deadline:
    def __init__(self, at_ms: float, fire: Callable[[], None]) -> None:
        self.at_ms = at_ms
        self.fire = fire
        self.live = True


class _VirtualScope:
    """A cancel scope whose deadline is on the fake clock."""

    def __init__(self, clock: FakeClock, seconds: float, *, raise_timeout: bool) -> None:
        self._clock = clock
        self._seconds = seconds
        self._raise = raise_timeout
        self._fired = False
        self._scope = anyio.CancelScope()
        self._deadline: _Deadline | None = None

    @property
    def cancel_called(self) -> bool:
        return self._scope.cancel_called

    def _fire(self) -> None:
        self._fired = True
        self._scope.cancel()

    def __enter__(self) -> _VirtualScope:
        self._scope.__enter__()
        self._deadline = self._clock._schedule(self._seconds, self._fire)
        return self

    def __exit__(self, *exc: Any) -> bool:
        assert self._deadline is not None
        self._deadline.live = False
        suppressed = bool(self._scope.__exit__(*exc))
        if self._fired and self._scope.cancelled_caught and self._raise:
            raise TimeoutError
        return suppressed


class FakeClock:
    """A virtual clock implementing the Clock port.

    Args:
        start_ms: the virtual time at start, epoch milliseconds.
        autojump_threshold_s: real seconds every task must stay blocked before ``autojump``
            jumps; it lets work in worker threads (SQLite, sync tools) finish first.
    """

    def __init__(self, start_ms: int = 1_750_000_000_000, *, autojump_threshold_s: float = 0.005):
        self._now_ms = float(start_ms)
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._counter = itertools.count()
        self._threshold = autojump_threshold_s
        self._changed = 0

    def now_ms(self) -> int:
        return int(self._now_ms)

    def _schedule(self, seconds: float, fire: Callable[[], None]) -> _Deadline:
        deadline = _Deadline(self._now_ms + seconds * 1000, fire)
        heapq.heappush(self._heap, (deadline.at_ms, next(self._counter), deadline))
        self._changed += 1
        return deadline

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        event = anyio.Event()
        deadline = self._schedule(seconds, event.set)
        try:
            await event.wait()
        finally:
            deadline.live = False

    def fail_after(self, seconds: float) -> _VirtualScope:
        return _VirtualScope(self, seconds, raise_timeout=True)

    def move_on_after(self, seconds: float) -> _VirtualScope:
        return _VirtualScope(self, seconds, raise_timeout=False)

    def advance(self, seconds: float) -> None:
        """Move the clock forward, firing every deadline passed on the way, in order."""
        target = self._now_ms + seconds * 1000
        while self._heap and self._heap[0][0] <= target:
            at_ms, _, deadline = heapq.heappop(self._heap)
            self._now_ms = max(self._now_ms, at_ms)
            if deadline.live:
                deadline.live = False
                deadline.fire()
        self._now_ms = max(self._now_ms, target)
        self._changed += 1

    def _next_live(self) -> float | None:
        while self._heap and not self._heap[0][2].live:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    @asynccontextmanager
    async def autojump(self) -> AsyncIterator[FakeClock]:
        """Within this block, jump to the earliest deadline whenever every task is blocked."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._jumper)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()

    async def _jumper(self) -> None:
        while True:
            await anyio.wait_all_tasks_blocked()
            seen = self._changed
            await anyio.sleep(self._threshold)
            await anyio.wait_all_tasks_blocked()
            upcoming = self._next_live()
            if upcoming is None or seen != self._changed:
                continue
            self.advance(max(0.0, (upcoming - self._now_ms) / 1000))


def call(call_id: str, name: str, **args: Any) -> ToolCall:
    """A tool call for a script."""
    return ToolCall(id=call_id, name=name, args=args)


def tool_reply(*calls: ToolCall, content: str = "", usage: Usage | None = None) -> ModelReply:
    """A scripted reply that calls tools."""
    return ModelReply(content=content, tool_calls=calls, usage=usage, stop_reason="tool-calls")


def answer(content: str, *, usage: Usage | None = None) -> ModelReply:
    """A scripted final answer."""
    return ModelReply(content=content, usage=usage, stop_reason="end")


@contextmanager
def capture_logs() -> Iterator[list[MutableMapping[str, Any]]]:
    """Capture structlog entries (event names and keys) for assertions."""
    with structlog.testing.capture_logs() as entries:
        yield entries
