"""The application layer: each use case of the runtime written once over the store port, for
every door (the Python ``Store``, the CLI, the API, the inspector, the scenario runner) to call
and only render (docs/architecture.md#the-application-layer).

The doors reach the values they render through this package (or ``records``), never through
``loop``, ``served``, ``window`` or a module below ``store``.
"""

from afp_runtime.app.calls import AgentCall, agent_call, call_among
from afp_runtime.app.conform import Encoders, builtin_encoder, conform
from afp_runtime.app.findings import findings, ledger_fold
from afp_runtime.app.folds import Originals, fold, fold_summary, folded, originals, stored_folds
from afp_runtime.app.outcome import (
    MessageOutcome,
    answer_of,
    final_answer,
    message_outcome,
    message_outcomes,
)
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
from afp_runtime.findings import LedgerFold
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
    "BodyEncoder",
    "ConformanceReport",
    "Encoders",
    "EpochEntry",
    "ExportedRun",
    "FoldedSpan",
    "LedgerFold",
    "MessageOutcome",
    "Originals",
    "Receipt",
    "RunSource",
    "ServedView",
    "StoredRun",
    "ViewDiff",
    "agent_call",
    "all_served_views",
    "answer_of",
    "builtin_encoder",
    "call_among",
    "conform",
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
    "served_page",
    "served_view",
    "stored_folds",
    "view_diff",
]
