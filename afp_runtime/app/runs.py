"""What a run's model calls were sent, read from its log: the epochs list, one epoch's entry,
served views, the diff between two epochs, receipts and exports
(docs/architecture.md#the-application-layer).

A ``RunSource`` is one run's log: a stored run (``StoredRun``: read through the store's
run-log reader, off the event loop) or a run export read back (``exported_run``). The served
code these call is synchronous over a ``RunLog``; every function here runs it through the
source, so no door touches a log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from afp_runtime.errors import NotFound
from afp_runtime.records import RunLog
from afp_runtime.served import (
    EpochEntry,
    Receipt,
    ServedView,
    ViewDiff,
    diff_views,
    epoch_at,
    epoch_entries,
    epoch_entry,
    epochs,
    export_run,
    load_export,
    receipt_at,
    served_at,
    served_views,
    view_of,
)
from afp_runtime.store import Store

T = TypeVar("T")


class RunSource(Protocol):
    """One run's log, read by synchronous served code."""

    @property
    def run_id(self) -> str:
        """The run the log holds."""
        ...

    async def read(self, work: Callable[[RunLog], T]) -> T:
        """``work`` over the run's log (off the event loop where the log is on disk)."""
        ...


class StoredRun:
    """A run of a store, read through ``Store.read_run``.

    Raises (from every read):
        NotFound: the store has no such run.
    """

    def __init__(self, store: Store, run_id: str) -> None:
        self._store = store
        self._run_id = run_id

    @property
    def run_id(self) -> str:
        return self._run_id

    async def read(self, work: Callable[[RunLog], T]) -> T:
        return await self._store.read_run(self._run_id, work)


class ExportedRun:
    """A run export (``afp export``) read back into memory; reads run at once, in place."""

    def __init__(self, log: RunLog) -> None:
        self._log = log

    @property
    def run_id(self) -> str:
        return self._log.run_id

    async def read(self, work: Callable[[RunLog], T]) -> T:
        return work(self._log)


def exported_run(data: bytes) -> ExportedRun:
    """An export's bytes as a run source.

    Raises:
        InvalidValue: the bytes are not a run export (names the field).
    """
    return ExportedRun(load_export(data))


def no_epoch(run_id: str, epoch: int) -> NotFound:
    """The error of an epoch number that names no model call of the run."""
    return NotFound(f"run {run_id!r} has no epoch {epoch}", what="epoch", value=epoch)


async def epoch_list(
    source: RunSource, *, start: int = 0, limit: int | None = None
) -> tuple[list[EpochEntry], int]:
    """The listing entries of the run's epochs ``start..start+limit`` (every one from ``start``
    when ``limit`` is None) and how many epochs the run has."""

    def read(log: RunLog) -> tuple[list[EpochEntry], int]:
        size = len(epochs(log)) if limit is None else limit
        return epoch_entries(log, start=start, limit=size)

    return await source.read(read)


async def epoch_listing(source: RunSource, epoch: int) -> EpochEntry | None:
    """One epoch's listing entry, or None when the run has no such epoch."""

    def read(log: RunLog) -> EpochEntry | None:
        location = epoch_at(log, epoch)
        return None if location is None else epoch_entry(log, location, view_of(location, log))

    return await source.read(read)


async def served_view(source: RunSource, epoch: int) -> ServedView | None:
    """Exactly what the model was sent at one epoch, rebuilt from the log; None when the run
    has no such epoch."""
    return await source.read(lambda log: served_at(log, epoch))


async def all_served_views(source: RunSource) -> tuple[ServedView, ...]:
    """Every epoch's view in commit order."""
    return await source.read(served_views)


async def served_page(
    source: RunSource, *, from_epoch: int = 1, start: int = 0, limit: int
) -> tuple[list[ServedView], int]:
    """The views of epochs numbered ``from_epoch`` or more, ``start..start+limit`` of them, and
    how many such epochs there are."""

    def read(log: RunLog) -> tuple[list[ServedView], int]:
        located = [loc for loc in epochs(log) if loc.epoch >= from_epoch]
        return [view_of(loc, log) for loc in located[start : start + limit]], len(located)

    return await source.read(read)


async def view_diff(source: RunSource, before: int, after: int) -> ViewDiff:
    """What changed in what the model was sent from epoch ``before`` to epoch ``after`` of the
    run: messages that left and came, system text, tools.

    Raises:
        NotFound: the run has no such epoch (names the first missing).
    """
    pair = await source.read(lambda log: (served_at(log, before), served_at(log, after)))
    first, second = pair
    if first is None or second is None:
        raise no_epoch(source.run_id, before if first is None else after)
    return diff_views(first, second)


async def epoch_receipt(source: RunSource, epoch: int) -> tuple[bool, Receipt | None]:
    """Whether the run has the epoch, and its accepted receipt (None when it has none, or one
    stored in a shape that is refused)."""
    return await source.read(lambda log: (epoch_at(log, epoch) is not None, receipt_at(log, epoch)))


async def export(source: RunSource, *, from_seq: int = 0) -> bytes:
    """The run's log from ``from_seq`` on, bodies inlined, as a run export's JSON bytes.

    Raises:
        InvalidValue: ``from_seq`` is not a non-negative ``int``.
    """
    return await source.read(lambda log: export_run(log, from_seq=from_seq))
