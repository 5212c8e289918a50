"""Store: the port every door is typed against (docs/storage.md#the-store-port).

The embedded SQLite backend lives in ``afp_runtime.store.sqlite``; nothing here imports it until
``open_store`` opens a store.
"""

from afp_runtime.store.base import (
    CheckpointStore,
    HealthStore,
    LeaseStore,
    MovingStore,
    RecallStore,
    ScheduleStore,
    Store,
)
from afp_runtime.store.checks import check_owner
from afp_runtime.store.copying import agents_to_copy, copy_agents
from afp_runtime.store.dump import AgentDump, CopyCounts
from afp_runtime.store.opening import (
    BACKENDS,
    Backend,
    backend_name,
    open_store,
    shown_location,
    sqlite_path,
)
from afp_runtime.store.recall_values import RecallHit, RecallSource, within_chars
from afp_runtime.store.values import (
    Ack,
    AgentClaim,
    AgentRow,
    DefinitionSummary,
    InboxRow,
    JournalEntry,
    LeaseRenewal,
    LoadedConversation,
    RunRow,
    ScheduleDelivered,
    ScheduleEntry,
    ScheduleRow,
    StoredBundle,
)

__all__ = [
    "Ack",
    "AgentClaim",
    "AgentDump",
    "AgentRow",
    "BACKENDS",
    "Backend",
    "CheckpointStore",
    "CopyCounts",
    "DefinitionSummary",
    "HealthStore",
    "InboxRow",
    "JournalEntry",
    "LeaseRenewal",
    "LeaseStore",
    "LoadedConversation",
    "MovingStore",
    "RecallHit",
    "RecallSource",
    "RecallStore",
    "RunRow",
    "ScheduleDelivered",
    "ScheduleEntry",
    "ScheduleRow",
    "ScheduleStore",
    "Store",
    "StoredBundle",
    "agents_to_copy",
    "backend_name",
    "check_owner",
    "copy_agents",
    "open_store",
    "shown_location",
    "sqlite_path",
    "within_chars",
]
