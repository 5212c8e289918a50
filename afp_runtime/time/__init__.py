"""Time: the loop extension of agents with ``time`` (docs/time.md), over the period core in
``afp_runtime.periods``."""

from afp_runtime.time._loop import TimeExtension

__all__ = ["TimeExtension"]
