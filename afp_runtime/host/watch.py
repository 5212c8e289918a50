"""Points where a test watches a host work (docs/host.md#watching-a-host-in-tests).

A host's workers, lease keeper and checkpointer tell a ``HostWatch`` passed as
``Host(watch=…)`` when something happened that no event or row shows: a pass began or ended, a
lease period or a periodic checkpoint finished. The default watch does nothing. Its methods are
called on the host's event loop and must return at once.
"""

from __future__ import annotations

__all__ = ["HostWatch"]


class HostWatch:
    """No-op watch points; subclass and override the ones you need."""

    def pass_started(self, agent_id: str) -> None:
        """The agent's worker began a work pass."""

    def pass_finished(self, agent_id: str) -> None:
        """The agent's worker finished a work pass (however it ended)."""

    def lease_period(self) -> None:
        """The lease keeper finished a period (a renewal and its look at the claims)."""

    def checkpointed(self) -> None:
        """A periodic checkpoint of the store's WAL finished or failed."""
