"""Served: receipts, served views rebuilt from a run's log, gaps, the conformance check (pure)."""

from afp_runtime.served.check import BodyEncoder, ConformanceReport, check
from afp_runtime.served.diff import ViewDiff, diff_views
from afp_runtime.served.export import export_run, load_export
from afp_runtime.served.locate import epoch_at, epochs
from afp_runtime.served.payloads import encode_served
from afp_runtime.served.reads import (
    EpochEntry,
    epoch_entries,
    epoch_entry,
    find_agent_call,
    folded_from_log,
)
from afp_runtime.served.receipt import (
    Receipt,
    RunningDigest,
    body_hash,
    extend_digest,
    mint_receipt,
    new_entries,
    schema_hash,
    start_digest,
    wire_digest,
)
from afp_runtime.served.view import (
    ServedView,
    receipt_at,
    served_at,
    served_views,
    view_of,
)

__all__ = [
    "BodyEncoder",
    "ConformanceReport",
    "EpochEntry",
    "Receipt",
    "RunningDigest",
    "ServedView",
    "ViewDiff",
    "body_hash",
    "check",
    "diff_views",
    "encode_served",
    "epoch_at",
    "epoch_entries",
    "epoch_entry",
    "epochs",
    "export_run",
    "extend_digest",
    "find_agent_call",
    "folded_from_log",
    "load_export",
    "mint_receipt",
    "new_entries",
    "receipt_at",
    "schema_hash",
    "served_at",
    "served_views",
    "start_digest",
    "view_of",
    "wire_digest",
]
