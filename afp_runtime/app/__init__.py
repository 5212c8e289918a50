"""The application layer: each use case of the runtime written once over the store port, for
every door (the Python ``Store``, the CLI, the API, the inspector, the scenario runner) to call
and only render (docs/architecture.md#the-application-layer).

The reads: a message's outcome, a call by agent-wide number, served views, epochs, diffs,
receipts and exports, conform, folds and originals, findings. The writes: posting (``post``),
answering and abandoning a question (``answer``, ``abandon``), dismissing a held turn
(``dismiss``), and an agent driven without a host (``LocalAgent``, ``drive``), with the clock
and ids a door starts them with.

The doors reach the values they render through this package (or ``records``), never through
``loop``, ``served``, ``window`` or a module below ``store``.
"""

from afp_runtime.app.calls import AgentCall, agent_call, call_among
from afp_runtime.app.conform import Encoders, builtin_encoder, conform
from afp_runtime.app.findings import findings, ledger_fold
from afp_runtime.app.folds import Originals, fold, fold_summary, folded, originals, stored_folds
from afp_runtime.app.local import Driven, LocalAgent, drive
from afp_runtime.app.outcome import (
    MessageOutcome,
    answer_of,
    final_answer,
    message_outcome,
    message_outcomes,
)
from afp_runtime.app.questions import AnswerStatus, abandon, answer, answer_status
from afp_runtime.app.runs import (
    ExportedRun,
    RunSource,
    StoredRun,
    all_served_views,
    epoch_list,
    epoch_listing,
    epoch_receipt,
    export,
    exported_run,
    no_epoch,
    served_page,
    served_view,
    view_diff,
)
from afp_runtime.app.turns import dismiss
from afp_runtime.findings import LedgerFold
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

# A door's post (``afp send``) is the host's and a driver's: one posting path, whatever holds the
# agent (docs/host.md#a-message-reaches-its-host).
from afp_runtime.loop import post_message as post
from afp_runtime.served import (
    BodyEncoder,
    ConformanceReport,
    EpochEntry,
    Receipt,
    ServedView,
    ViewDiff,
    encode_served,
)
from afp_runtime.window import FoldedSpan

__all__ = [
    "AgentCall",
    "AnswerStatus",
    "BodyEncoder",
    "ConformanceReport",
    "Driven",
    "Encoders",
    "EpochEntry",
    "Event",
    "EventRecorder",
    "EventSink",
    "ExportedRun",
    "FoldedSpan",
    "IdFactory",
    "LedgerFold",
    "LocalAgent",
    "LoopHooks",
    "MessageOutcome",
    "Originals",
    "OutputError",
    "Receipt",
    "RunOutcome",
    "RunSource",
    "SequentialIds",
    "ServedView",
    "StoredRun",
    "SystemClock",
    "TimeOrderedIds",
    "ViewDiff",
    "abandon",
    "agent_call",
    "all_served_views",
    "answer",
    "answer_of",
    "answer_status",
    "builtin_encoder",
    "call_among",
    "conform",
    "dismiss",
    "drive",
    "encode_served",
    "epoch_list",
    "epoch_listing",
    "epoch_receipt",
    "export",
    "exported_run",
    "final_answer",
    "findings",
    "fold",
    "fold_summary",
    "folded",
    "ledger_fold",
    "message_outcome",
    "message_outcomes",
    "no_epoch",
    "originals",
    "post",
    "served_page",
    "served_view",
    "stored_folds",
    "view_diff",
]
