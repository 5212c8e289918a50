"""Grouping stage transactions by durability mode (docs/loop.md#durability-modes,
docs/architecture.md#decision-1-sync-durability-commits-each-stage).

``sync`` commits every stage bundle (and every journal row) in its own transaction; ``iteration``
commits the run's seed alone, then one transaction per iteration at its closing stage; ``turn``
commits at the end of the turn and at pauses. A transaction marked ``full`` (it precedes an effect
leaving the process) always commits at once, carrying whatever is pending with it.
"""

from __future__ import annotations

from afp_runtime.loop.hooks import LoopHooks
from afp_runtime.records import Txn
from afp_runtime.store import CheckpointStore


class Committer:
    """Commits or holds stage transactions according to the durability mode."""

    def __init__(
        self, store: CheckpointStore, durability: str, hooks: LoopHooks | None = None
    ) -> None:
        self._store = store
        self._durability = durability
        self._hooks = hooks or LoopHooks()
        self._pending: Txn | None = None

    @property
    def journals(self) -> bool:
        """Only ``sync`` journals tool calls, so only it can settle calls in flight."""
        return self._durability == "sync"

    async def stage(self, txn: Txn, *, closes: bool = False) -> None:
        """Hand over one stage's transaction; ``closes`` marks an iteration boundary."""
        if self._pending is None:
            self._pending = txn
        else:
            self._pending.absorb(txn)
        if (
            self._durability == "sync"
            or self._pending.full
            or (closes and self._durability == "iteration")
        ):
            await self.flush()
        for bundle in txn.bundles:
            self._hooks.after_stage(bundle.stage, bundle.iteration)

    async def flush(self) -> None:
        """Commit whatever is pending."""
        pending, self._pending = self._pending, None
        if pending is not None:
            await self._store.commit(pending)
