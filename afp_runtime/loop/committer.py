"""Grouping stage transactions by durability mode (docs/loop.md#durability-modes,
docs/architecture.md#decision-1-sync-durability-commits-at-effect-boundaries).

``sync`` keeps every bundle separate in the commit log but groups the bundles between two effects
into one transaction: the run's seed alone when the run asks for it (``durable``; a driver's later
initial runs do not, docs/loop.md#crash-loops); the pre-call bundles (with the previous iteration's
closing bundle and ``finished`` journal rows) when the receipt is handed over; the reply with the
first dispatch group's ``started`` rows. ``iteration`` commits the seed alone, then one
transaction per iteration at its closing stage; ``turn`` commits at the end of the turn and at
pauses. A transaction marked ``full`` (it precedes an effect leaving the process) always commits
at once, carrying whatever is pending with it.

A commit that fails because the store is away hands its ``finished`` journal rows to the
``KeptResults`` given, so a result of a call that ran outlives the failed transaction
(docs/loop.md#results-kept-through-a-store-outage).
"""

from __future__ import annotations

import anyio

from afp_runtime.errors import StoreUnavailable
from afp_runtime.loop.hooks import LoopHooks
from afp_runtime.loop.kept import KeptResults
from afp_runtime.records import Txn
from afp_runtime.store import CheckpointStore


class Committer:
    """Commits or holds stage transactions according to the durability mode."""

    def __init__(
        self,
        store: CheckpointStore,
        durability: str,
        hooks: LoopHooks | None = None,
        kept: KeptResults | None = None,
    ) -> None:
        self._store = store
        self._durability = durability
        self._hooks = hooks or LoopHooks()
        self._kept = kept
        self._pending: Txn | None = None
        # Hooks that never stop the process need not be asked after every stage.
        self._may_stop = type(self._hooks).stops_after is not LoopHooks.stops_after
        self._sync = durability == "sync"

    @property
    def journals(self) -> bool:
        """Only ``sync`` journals tool calls, so only it can settle calls in flight."""
        return self._durability == "sync"

    async def stage(self, txn: Txn, *, closes: bool = False, durable: bool = False) -> None:
        """Hand over one stage's transaction (or journal rows).

        ``closes`` marks an iteration boundary (``iteration`` commits there); ``durable`` marks
        a point ``sync`` commits at: the receipt, before its request leaves, and the seed of a run
        whose death before its first effect must count as a recovery.
        """
        pending = self._pending
        if pending is None:
            self._pending = pending = txn
        else:
            pending.absorb(txn)
        if (
            pending.full
            or (self._sync and (durable or self._stops_after(txn)))
            or (closes and self._durability == "iteration")
        ):
            await self.flush()
        for bundle in txn.bundles:
            self._hooks.after_stage(bundle.stage, bundle.iteration)

    def _stops_after(self, txn: Txn) -> bool:
        if not self._may_stop:
            return False
        return any(self._hooks.stops_after(b.stage, b.iteration) for b in txn.bundles)

    async def before_effect(self) -> None:
        """An effect other than the model request is about to leave the process (a summarizer
        call): under ``sync`` what is pending commits first, so the call cannot lose it."""
        if self._durability == "sync":
            await self.flush()

    async def cut_off(self, txn: Txn) -> None:
        """The run is cut off (a shutdown): commit ``txn`` now. Under ``sync`` it carries what is
        pending, so results of calls that ran are not lost; the other modes drop it, as a crash
        would."""
        if self._durability == "sync" and self._pending is not None:
            self._pending.absorb(txn)
            txn = self._pending
        self._pending = None
        await self._commit(txn)

    async def salvage(self) -> None:
        """The run failed with an error: under ``sync`` what was handed over still commits (each
        bundle is whole), as it did when every stage committed alone."""
        if self._durability == "sync":
            with anyio.CancelScope(shield=True):
                await self.flush()

    async def flush(self) -> None:
        """Commit whatever is pending."""
        pending, self._pending = self._pending, None
        if pending is not None:
            await self._commit(pending)

    async def _commit(self, txn: Txn) -> None:
        try:
            await self._store.commit(txn)
        except StoreUnavailable:
            # The transaction is lost, but the calls whose results it carried did run.
            if self._kept is not None:
                self._kept.keep(txn.journal)
            raise
