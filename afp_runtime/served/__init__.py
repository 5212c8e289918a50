"""Served: receipts of what each model call sent (pure; the rebuild arrives with served views)."""

from afp_runtime.served.receipt import (
    RECEIPT_VERSION,
    Basis,
    MessagesDigest,
    OmittedForAttention,
    Receipt,
    RequestOnlyDigest,
    RunningDigest,
    SystemDigest,
    ToolsDigest,
    WireDigest,
    extend_digest,
    schema_hash,
    start_digest,
    wire_digest,
)

__all__ = [
    "Basis",
    "MessagesDigest",
    "OmittedForAttention",
    "RECEIPT_VERSION",
    "Receipt",
    "RequestOnlyDigest",
    "RunningDigest",
    "SystemDigest",
    "ToolsDigest",
    "WireDigest",
    "extend_digest",
    "schema_hash",
    "start_digest",
    "wire_digest",
]
