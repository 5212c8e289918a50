"""The store as a host's drivers see it when telemetry is on: every commit timed and counted
(docs/telemetry.md#metrics); everything else passes through unchanged."""

from __future__ import annotations

import time
from typing import Any

from afp_runtime.records import Txn
from afp_runtime.store import Store
from afp_runtime.telemetry import TelemetrySink

__all__ = ["TimedCommits"]


class TimedCommits:
    """Delegates to ``store``; ``commit`` reports its wall-clock latency to ``sink`` (set once
    telemetry has started). Wall time, not the host's clock: it measures the disk."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.sink: TelemetrySink | None = None

    async def commit(self, txn: Txn) -> None:
        """Commit ``txn`` through the store, timed."""
        started = time.perf_counter()
        ok = False
        try:
            await self._store.commit(txn)
            ok = True
        finally:
            if self.sink is not None:
                self.sink.committed(time.perf_counter() - started, ok=ok)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)
