"""Loop: stages, runs and iterations of a standing agent's turns, and the events they emit."""

from afp_runtime.loop.agent import AgentDriver, dismiss_turn
from afp_runtime.loop.checkins import (
    ANSWER_LIMIT,
    abandon_question,
    answer_question,
    check_message_time,
    validate_answer,
)
from afp_runtime.loop.clock import SystemClock
from afp_runtime.loop.config import (
    AgentConfig,
    ConfigFile,
    HostConfig,
    ModelConfig,
    ToolConfig,
    WindowConfig,
    build_definition,
    build_window,
    load_agents,
    load_config,
    read_config,
)
from afp_runtime.loop.definition import Agent, Durability, TurnFailure
from afp_runtime.loop.events import Emitter, Event, EventRecorder, EventSink
from afp_runtime.loop.folded import (
    FoldedConversation,
    load_folded_conversation,
    load_folded_spans,
    resolve_span,
)
from afp_runtime.loop.hooks import LoopHooks
from afp_runtime.loop.ids import IdFactory, SequentialIds, TimeOrderedIds
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.portable import (
    PortableCheckpoint,
    check_history,
    export_checkpoint,
    import_checkpoint,
    parse_checkpoint,
    validate_ledger,
)
from afp_runtime.loop.route import decide_route, unique_call_ids
from afp_runtime.loop.run import Run

__all__ = [
    "ANSWER_LIMIT",
    "Agent",
    "AgentConfig",
    "AgentDriver",
    "CommittedReply",
    "ConfigFile",
    "Durability",
    "Emitter",
    "Event",
    "EventRecorder",
    "EventSink",
    "FoldedConversation",
    "HostConfig",
    "IdFactory",
    "LoopHooks",
    "ModelConfig",
    "PortableCheckpoint",
    "Run",
    "RunOutcome",
    "SequentialIds",
    "SystemClock",
    "TimeOrderedIds",
    "ToolConfig",
    "TurnFailure",
    "WindowConfig",
    "abandon_question",
    "answer_question",
    "build_definition",
    "build_window",
    "check_history",
    "check_message_time",
    "decide_route",
    "dismiss_turn",
    "export_checkpoint",
    "import_checkpoint",
    "load_agents",
    "load_config",
    "load_folded_conversation",
    "load_folded_spans",
    "parse_checkpoint",
    "read_config",
    "resolve_span",
    "unique_call_ids",
    "validate_answer",
    "validate_ledger",
]
