"""Fixtures for the tools tests: a virtual clock and captured structured logs.

The shared fake clock will live in ``afp_runtime/testing/_fakes.py``; until then this one
stays local.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
import structlog

_NS = 1_000_000_000
_SETTLE_STEPS = 20


@dataclass(order=True)
class _Timer:
    deadline_ns: int
    seq: int
    fire: Callable[[], None] = field(compare=False)
    fired: bool = field(default=False, compare=False)


class FakeClock:
    """Virtual time that moves only forward: by ``advance`` or, inside ``autojump()``, to the
    earliest pending deadline once every task is blocked.

    Caveat: a task waiting for a worker thread also counts as blocked, so under ``autojump`` a
    sync tool's timeout may fire while its thread is still busy; sync-tool tests use no autojump.
    """

    def __init__(self, start_ms: int = 1_767_225_600_000) -> None:
        self._now_ns = start_ms * 1_000_000
        self._timers: list[_Timer] = []
        self._seq = itertools.count()
        self._new_timer: anyio.Event | None = None

    def now_ms(self) -> int:
        """Current virtual time, epoch milliseconds."""
        return self._now_ns // 1_000_000

    def _add(self, seconds: float, fire: Callable[[], None]) -> _Timer:
        timer = _Timer(self._now_ns + max(0, round(seconds * _NS)), next(self._seq), fire)
        self._timers.append(timer)
        if self._new_timer is not None:
            self._new_timer.set()
        return timer

    def _drop(self, timer: _Timer) -> None:
        if timer in self._timers:
            self._timers.remove(timer)

    async def sleep(self, seconds: float) -> None:
        """Park until the virtual clock reaches now + ``seconds``."""
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        woken = anyio.Event()
        timer = self._add(seconds, woken.set)
        try:
            await woken.wait()
        finally:
            self._drop(timer)

    @contextmanager
    def fail_after(self, seconds: float) -> Iterator[anyio.CancelScope]:
        """Cancel the body and raise TimeoutError once ``seconds`` pass on this clock."""
        with anyio.CancelScope() as scope:
            timer = self._add(seconds, scope.cancel)
            try:
                yield scope
            finally:
                self._drop(timer)
        if timer.fired and scope.cancelled_caught:
            raise TimeoutError

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` and fire every timer now due, earliest first."""
        self._jump_to(self._now_ns + round(seconds * _NS))

    def _jump_to(self, target_ns: int) -> None:
        self._now_ns = max(self._now_ns, target_ns)
        for timer in sorted(self._timers):
            if timer.deadline_ns <= self._now_ns:
                self._timers.remove(timer)
                timer.fired = True
                timer.fire()

    @asynccontextmanager
    async def autojump(self) -> AsyncIterator[None]:
        """While open, jump to the earliest deadline whenever every other task is blocked."""
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(self._jumper)
            try:
                yield
            finally:
                task_group.cancel_scope.cancel()

    async def _jumper(self) -> None:
        while True:
            # Let woken tasks run first: wait_all_tasks_blocked sleeps 0.1 s of real time
            # whenever it finds a task still runnable.
            for _ in range(_SETTLE_STEPS):
                await anyio.lowlevel.checkpoint()
            await anyio.wait_all_tasks_blocked()
            if self._timers:
                self._jump_to(min(self._timers).deadline_ns)
                continue
            self._new_timer = anyio.Event()
            await self._new_timer.wait()
            self._new_timer = None


@pytest.fixture(name="clock")
def fixture_clock() -> FakeClock:
    """A fresh virtual clock."""
    return FakeClock()


@pytest.fixture(name="make_clock", scope="session")
def fixture_make_clock() -> type[FakeClock]:
    """The virtual clock type, for tests (hypothesis) that need a fresh clock per example."""
    return FakeClock


@pytest.fixture(name="logs", autouse=True)
def fixture_logs() -> Iterator[list[dict[str, Any]]]:
    """Structured log entries of the test, captured instead of rendered."""
    with structlog.testing.capture_logs() as entries:
        yield entries
