"""Loop: stages, runs and iterations of a standing agent's turns, and the events they emit."""

from afp_runtime.loop.agent import AgentDriver, dismiss_turn, resumable_turn
from afp_runtime.loop.clock import SystemClock
from afp_runtime.loop.definition import Definition, Durability, TurnFailure
from afp_runtime.loop.events import Emitter, Event, EventRecorder, EventSink
from afp_runtime.loop.folded import (
    FoldedConversation,
    load_folded_conversation,
    load_folded_spans,
    resolve_span,
    stored_span,
)
from afp_runtime.loop.hooks import LoopHooks
from afp_runtime.loop.ids import IdFactory, SequentialIds, TimeOrderedIds
from afp_runtime.loop.kept import KeptResults
from afp_runtime.loop.outcomes import CommittedReply, RunOutcome
from afp_runtime.loop.output import OutputError, OutputSpec
from afp_runtime.loop.posting import post_message
from afp_runtime.loop.route import decide_route, unique_call_ids
from afp_runtime.loop.run import Run

__all__ = [
    "AgentDriver",
    "CommittedReply",
    "Definition",
    "Durability",
    "Emitter",
    "Event",
    "EventRecorder",
    "EventSink",
    "FoldedConversation",
    "IdFactory",
    "KeptResults",
    "LoopHooks",
    "OutputError",
    "OutputSpec",
    "Run",
    "RunOutcome",
    "SequentialIds",
    "SystemClock",
    "TimeOrderedIds",
    "TurnFailure",
    "decide_route",
    "dismiss_turn",
    "load_folded_conversation",
    "load_folded_spans",
    "post_message",
    "resolve_span",
    "resumable_turn",
    "stored_span",
    "unique_call_ids",
]
