"""Store: the port every door is typed against (docs/storage.md#the-store-port).

The embedded SQLite backend lives in ``afp_runtime.store.sqlite``; nothing here imports it until
``open_store`` opens a store.
"""

from afp_runtime.store.base import CheckpointStore, HealthStore, LeaseStore, Store
from afp_runtime.store.opening import open_store, shown_location, sqlite_path
from afp_runtime.store.values import (
    Ack,
    AgentClaim,
    AgentRow,
    InboxRow,
    JournalEntry,
    LeaseRenewal,
    LoadedConversation,
    RunRow,
    StoredBundle,
)

__all__ = [
    "Ack",
    "AgentClaim",
    "AgentRow",
    "CheckpointStore",
    "HealthStore",
    "InboxRow",
    "JournalEntry",
    "LeaseRenewal",
    "LeaseStore",
    "LoadedConversation",
    "RunRow",
    "Store",
    "StoredBundle",
    "open_store",
    "shown_location",
    "sqlite_path",
]
