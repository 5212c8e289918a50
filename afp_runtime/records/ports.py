"""Shared ports as structural Protocols: the clock and the run log read interface."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

import msgspec

from afp_runtime.records.bundle import CommitBundle


class Clock(Protocol):
    """Every reader of "now" and every deadline goes through a clock
    (docs/architecture.md#decision-7-every-deadline-goes-through-the-clock)."""

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


class Unknown:
    """The value of a key that was never written (not None, not empty)."""

    _instance: Unknown | None = None

    def __new__(cls) -> Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN = Unknown()


class Anchor(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A bundle that anchors an epoch: a ``receipt`` (or, in a legacy log, a ``call-model``)."""

    seq: int
    stage: str
    iteration: int


class RunLog(Protocol):
    """Read interface over one run's commit log (docs/served.md#the-runlog-interface); synchronous
    by design.

    Message-list keys (``history``) read as tuples of ``MessageRef``; every other key reads as
    the plain JSON-like value that was written. ``value_at`` answers from per-key indexes, so
    its cost does not grow with ``seq``
    (docs/architecture.md#decision-3-served-views-read-an-index-not-a-replay). Served code calls it
    from a worker thread and never awaits.
    """

    run_id: str
    has_base: bool
    live: bool

    def anchors(self) -> tuple[Anchor, ...]:
        """Every receipt bundle and every call-model bundle, in commit order."""
        ...

    def anchor_at(self, epoch: int) -> Anchor | None:
        """The earliest receipt anchor of iteration ``epoch`` (an index lookup), or None."""
        ...

    def bundle(self, seq: int) -> CommitBundle | None:
        """The bundle at ``seq`` (message-list values as ``MessageRef`` lists), or None."""
        ...

    def bundles(self, from_seq: int = 0) -> Iterator[CommitBundle]:
        """Bundles in commit order from ``from_seq``."""
        ...

    def value_at(self, key: str, seq: int) -> Any:
        """The value of ``key`` as of bundle ``seq`` (the fold of its writes), or ``UNKNOWN``."""
        ...

    def body(self, fingerprint: str) -> bytes | None:
        """The stored canonical body of a message, or None when it is missing."""
        ...
