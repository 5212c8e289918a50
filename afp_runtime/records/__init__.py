"""Records: commit bundles and the shared ports (clock, run log) as Protocols."""

from afp_runtime.records.bundle import (
    MESSAGE_LIST_KEYS,
    STAGES,
    CommitBundle,
    Verb,
    Write,
    parse_runtime_stage_id,
    runtime_stage_id,
)
from afp_runtime.records.conversation import (
    MAX_RANGES,
    ConversationState,
    ListRef,
    OpenTurn,
    PriorVisitRef,
    StoredFoldedSpan,
    TurnStatus,
)
from afp_runtime.records.ports import Clock, RunLog
from afp_runtime.records.txn import (
    InboxStatus,
    InboxUpdate,
    Item,
    JournalRow,
    JournalState,
    RunEnd,
    RunKind,
    RunStart,
    RunStatus,
    Txn,
)

__all__ = [
    "Clock",
    "CommitBundle",
    "ConversationState",
    "InboxStatus",
    "InboxUpdate",
    "Item",
    "JournalRow",
    "JournalState",
    "ListRef",
    "MAX_RANGES",
    "MESSAGE_LIST_KEYS",
    "OpenTurn",
    "PriorVisitRef",
    "RunEnd",
    "RunKind",
    "RunLog",
    "RunStart",
    "RunStatus",
    "STAGES",
    "StoredFoldedSpan",
    "TurnStatus",
    "Txn",
    "Verb",
    "Write",
    "parse_runtime_stage_id",
    "runtime_stage_id",
]
