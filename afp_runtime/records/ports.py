"""Shared ports as structural Protocols: the clock and the run log read interface."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from afp_runtime.messages import Message
from afp_runtime.records.bundle import CommitBundle


class Clock(Protocol):
    """Every reader of "now" and every deadline goes through a clock (ARCHITECTURE ruling 7)."""

    def now_ms(self) -> int:
        """Current time, epoch milliseconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep on this clock."""
        ...

    def fail_after(self, seconds: float) -> AbstractContextManager[Any]:
        """A cancel scope raising TimeoutError when ``seconds`` pass on this clock."""
        ...

    def move_on_after(self, seconds: float) -> AbstractContextManager[Any]:
        """A cancel scope that silently ends when ``seconds`` pass on this clock."""
        ...


class RunLog(Protocol):
    """Read interface over one run's commit log (served.md §1.3)."""

    run_id: str

    def bundle(self, seq: int) -> CommitBundle | None:
        """The bundle at ``seq``, or None."""
        ...

    def bundles(self, from_seq: int = 0) -> Iterator[CommitBundle]:
        """Bundles in commit order from ``from_seq``."""
        ...

    def value_at(self, key: str, seq: int) -> Any:
        """The value of ``key`` as of bundle ``seq``; raises KeyError when never written."""
        ...

    def messages_at(self, key: str, seq: int) -> tuple[Message, ...]:
        """A message-list key as of bundle ``seq``, resolved with markers."""
        ...
