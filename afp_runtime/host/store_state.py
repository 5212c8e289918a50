"""The host's view of its store's health (docs/host.md#hosts-and-a-failing-store): a fault
(cause, since) that a write refused with ``StoreUnavailable`` sets and a write that succeeds
clears, and a checkpoint that keeps failing; each logged once per change of state, not once per
failure (a full disk under load would otherwise log every refused request)."""

from __future__ import annotations

from afp_runtime._logging import get_logger
from afp_runtime.errors import StoreUnavailable
from afp_runtime.records import Clock, StoreFault

__all__ = ["CHECKPOINT_FAILURES_REPORTED", "StoreState"]

log = get_logger()

# Checkpoints in a row that did not finish before health reports it: one can fail while a
# reader holds old pages for a moment.
CHECKPOINT_FAILURES_REPORTED = 3


class StoreState:
    """The store's fault as the host last saw it.

    Args:
        clock: the host's clock (``since_ms``).
        location: the store as messages name it (passwords masked).
    """

    def __init__(self, clock: Clock, location: str) -> None:
        self.clock = clock
        self.location = location
        self.write: StoreFault | None = None
        self.checkpoint: StoreFault | None = None
        self._checkpoint_failures = 0

    @property
    def fault(self) -> StoreFault | None:
        """The fault health reports (a write fault first), None while the store is healthy."""
        return self.write or self.checkpoint

    def failed(
        self,
        exc: StoreUnavailable,
        event: str = "the store cannot be written; writes are answered store-unavailable",
        **fields: object,
    ) -> bool:
        """A read or write met ``exc``: the store is degraded. Logged (``event`` with
        ``fields``) only when that is news, a fault or a new cause; returns whether it was."""
        if self.write is not None and self.write.cause == exc.cause:
            log.debug(event, cause=exc.cause, error=str(exc), **fields)
            return False
        self.write = StoreFault(cause=exc.cause, message=str(exc), since_ms=self.clock.now_ms())
        log.warning(event, path=self.location, cause=exc.cause, error=str(exc), **fields)
        return True

    def succeeded(self) -> None:
        """A write was committed: the fault, if any, is over (logged once)."""
        if self.write is None:
            return
        fault, self.write = self.write, None
        log.warning(
            "the store is writable again",
            path=self.location,
            cause=fault.cause,
            down_ms=self.clock.now_ms() - fault.since_ms,
        )

    def checkpointed(self, why: str | None) -> None:
        """The outcome of a periodic checkpoint: None when it finished, else why not."""
        if why is None:
            self._checkpoint_failures = 0
            if self.checkpoint is not None:
                self.checkpoint = None
                log.warning("the store's WAL was checkpointed again", path=self.location)
            return
        self._checkpoint_failures += 1
        if self.checkpoint is None and self._checkpoint_failures >= CHECKPOINT_FAILURES_REPORTED:
            self.checkpoint = StoreFault(
                cause="checkpoint", message=why, since_ms=self.clock.now_ms()
            )
            log.warning(
                "the store's WAL keeps failing to checkpoint; it grows until writes are refused "
                "at its bound",
                path=self.location,
                failures=self._checkpoint_failures,
                error=why,
            )
