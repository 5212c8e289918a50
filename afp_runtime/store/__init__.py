"""Store: the CheckpointStore port and its embedded SQLite implementation."""

from afp_runtime.store.base import CheckpointStore
from afp_runtime.store.sqlite.leases import AgentClaim, LeaseRenewal
from afp_runtime.store.sqlite.migrations import SCHEMA_VERSION
from afp_runtime.store.sqlite.rows import AgentRow, InboxRow, RunRow, StoredBundle
from afp_runtime.store.sqlite.runlog import SqliteRunLog
from afp_runtime.store.sqlite.store import (
    Ack,
    JournalEntry,
    LoadedConversation,
    SqliteStore,
)

__all__ = [
    "Ack",
    "AgentClaim",
    "AgentRow",
    "CheckpointStore",
    "InboxRow",
    "JournalEntry",
    "LeaseRenewal",
    "LoadedConversation",
    "RunRow",
    "SCHEMA_VERSION",
    "SqliteRunLog",
    "SqliteStore",
    "StoredBundle",
]
