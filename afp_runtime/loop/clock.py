"""The system clock: wall time and anyio's own deadlines."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

import anyio


class SystemClock:
    """The real clock (epoch milliseconds; anyio sleeps and cancel scopes)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)

    def fail_after(self, seconds: float) -> Any:
        return _FailAfter(seconds)

    def move_on_after(self, seconds: float) -> Any:
        return anyio.move_on_after(seconds)


class _FailAfter:
    """``anyio.fail_after`` as one cancel scope with a deadline: every tool call enters one, and
    anyio's version stacks two generator context managers around the same scope."""

    __slots__ = ("_scope", "_seconds")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._scope: anyio.CancelScope | None = None

    def __enter__(self) -> anyio.CancelScope:
        scope = anyio.CancelScope(deadline=anyio.current_time() + self._seconds)
        self._scope = scope
        return scope.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        scope = self._scope
        assert scope is not None
        swallowed = bool(scope.__exit__(exc_type, exc, traceback))
        if scope.cancelled_caught and anyio.current_time() >= scope.deadline:
            # The deadline cancelled the body (not an outer scope): the caller sees TimeoutError.
            raise TimeoutError from None
        return swallowed
