"""The application layer (docs/architecture.md#layers): each use case written once over the
store port, returning typed values; the doors (the Python ``Store``, the CLI, the API, the
inspector, the scenario runner) only translate their input and render the result.

The write use cases: posting (``post``), answering and abandoning a question (``answer``,
``abandon``), dismissing a held turn (``dismiss``), and an agent driven without a host
(``LocalAgent``, ``drive``), with the clock and ids a door starts them with.
"""

from afp_runtime.app.local import Driven, LocalAgent, drive
from afp_runtime.app.posting import post
from afp_runtime.app.questions import AnswerStatus, abandon, answer, answer_status
from afp_runtime.app.turns import dismiss
from afp_runtime.loop import (
    Event,
    EventRecorder,
    EventSink,
    IdFactory,
    LoopHooks,
    OutputError,
    RunOutcome,
    SequentialIds,
    SystemClock,
    TimeOrderedIds,
)

__all__ = [
    "AnswerStatus",
    "Driven",
    "Event",
    "EventRecorder",
    "EventSink",
    "IdFactory",
    "LocalAgent",
    "LoopHooks",
    "OutputError",
    "RunOutcome",
    "SequentialIds",
    "SystemClock",
    "TimeOrderedIds",
    "abandon",
    "answer",
    "answer_status",
    "dismiss",
    "drive",
    "post",
]
