"""Named points in the loop where a test or an offline scenario may stop the host.

A hook that raises a ``BaseException`` there simulates the process dying at that point: the
loop commits nothing more, and a fresh driver on the same store recovers from what was
committed. The default hooks do nothing.
"""

from __future__ import annotations


class LoopHooks:
    """No-op hooks; subclass and override the points you need."""

    def stops_after(self, stage: str, iteration: int) -> bool:
        """Whether ``after_stage`` will stop the process after this stage. Under ``sync`` the
        committer then commits the stage's bundle first, so the stop lands on that bundle's
        boundary even where the bundle would share a transaction with the next ones (a store
        written by another grouping, or another mode, can end there)."""
        return False

    def after_stage(self, stage: str, iteration: int) -> None:
        """A stage handed its bundle over. Under ``sync`` it may wait for the next effect
        boundary (committed at once when ``stops_after`` says so); otherwise it may be pending."""

    def after_tool_finished(self, tool_call_id: str, iteration: int) -> None:
        """A tool call returned; under ``sync`` its ``finished`` journal row is still pending
        (it commits with the next transaction), so a stop here leaves the call ``started``."""
