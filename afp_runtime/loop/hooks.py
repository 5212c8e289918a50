"""Named points in the loop where a test or an offline scenario may stop the host.

A hook that raises a ``BaseException`` there simulates the process dying at that point: the
loop commits nothing more, and a fresh driver on the same store recovers from what was
committed. The default hooks do nothing.
"""

from __future__ import annotations


class LoopHooks:
    """No-op hooks; subclass and override the points you need."""

    def after_stage(self, stage: str, iteration: int) -> None:
        """A stage ended; under ``sync`` its bundle is committed, otherwise it may be pending."""

    def after_tool_finished(self, tool_call_id: str, iteration: int) -> None:
        """A tool call returned (under ``sync`` its ``finished`` journal row is committed)."""
