"""Fakes for tests, demos and scenarios: a virtual clock, scripted-model helpers, log capture
(``_fakes``); and the store conformance suite for store backends (``store_conformance``, imported
on its own: ``import afp_runtime.testing.store_conformance``)."""

from afp_runtime.testing._fakes import FakeClock, answer, call, capture_logs, tool_reply

__all__ = [
    "FakeClock",
    "answer",
    "call",
    "capture_logs",
    "tool_reply",
]
