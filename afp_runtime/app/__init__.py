"""The application layer: each use case of the runtime written once over the store port, for
every door (the Python ``Store``, the CLI, the API, the inspector, the scenario runner) to call
and only render (docs/architecture.md#the-application-layer).

The reads: a message's outcome, a call by agent-wide number and the diff of any two calls,
served views, epochs, diffs, receipts and exports, conform, folds and originals, recall (a
search of what left a window), findings. The writes: posting (``post``), answering and
abandoning a question (``answer``, ``abandon``),
dismissing a held turn (``dismiss``), and an agent driven without a host (``LocalAgent``,
``drive``), with the clock and ids a door starts them with.

The doors reach the values they render through this package (or ``records``), never through
``loop``, ``served``, ``window`` or a module below ``store``.
"""

from __future__ import annotations

import typing as _typing

from afp_runtime._lazy import lazy_names as _lazy_names

# Each use case loads at first use (docs/python.md#import-cost): a read command of ``afp`` loads
# the reads it calls, never the loop.
if _typing.TYPE_CHECKING:
    from afp_runtime.app.calls import (
        AgentCall,
        CallDiff,
        CallSide,
        agent_call,
        call_among,
        call_diff,
        no_call,
    )
    from afp_runtime.app.conformance import Encoders, builtin_encoder, conform
    from afp_runtime.app.folds import Originals, fold, fold_summary, folded, originals, stored_folds
    from afp_runtime.app.ledger import findings, ledger_fold
    from afp_runtime.app.local import Driven, LocalAgent, drive
    from afp_runtime.app.outcome import (
        MessageOutcome,
        answer_of,
        final_answer,
        message_outcome,
        message_outcomes,
    )
    from afp_runtime.app.posting import post
    from afp_runtime.app.questions import AnswerStatus, abandon, answer, answer_status
    from afp_runtime.app.reasons import REASONS, reason_text, reasons_for
    from afp_runtime.app.recalling import recall
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
    from afp_runtime.app.schedules import (
        ScheduleView,
        deliver_schedules,
        due_text,
        list_schedules,
        pause_schedule,
        remove_schedule,
        resume_schedule,
        set_schedule,
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

_LAZY = {
    "AgentCall": "afp_runtime.app.calls",
    "AnswerStatus": "afp_runtime.app.questions",
    "CallDiff": "afp_runtime.app.calls",
    "CallSide": "afp_runtime.app.calls",
    "BodyEncoder": "afp_runtime.served",
    "ConformanceReport": "afp_runtime.served",
    "Driven": "afp_runtime.app.local",
    "Encoders": "afp_runtime.app.conformance",
    "EpochEntry": "afp_runtime.served",
    "Event": "afp_runtime.loop",
    "EventRecorder": "afp_runtime.loop",
    "EventSink": "afp_runtime.loop",
    "ExportedRun": "afp_runtime.app.runs",
    "FoldedSpan": "afp_runtime.window",
    "IdFactory": "afp_runtime.loop",
    "LedgerFold": "afp_runtime.findings",
    "LocalAgent": "afp_runtime.app.local",
    "LoopHooks": "afp_runtime.loop",
    "MessageOutcome": "afp_runtime.app.outcome",
    "Originals": "afp_runtime.app.folds",
    "OutputError": "afp_runtime.loop",
    "Receipt": "afp_runtime.served",
    "RunOutcome": "afp_runtime.loop",
    "REASONS": "afp_runtime.app.reasons",
    "RunSource": "afp_runtime.app.runs",
    "ScheduleView": "afp_runtime.app.schedules",
    "SequentialIds": "afp_runtime.loop",
    "ServedView": "afp_runtime.served",
    "StoredRun": "afp_runtime.app.runs",
    "SystemClock": "afp_runtime.loop",
    "TimeOrderedIds": "afp_runtime.loop",
    "ViewDiff": "afp_runtime.served",
    "abandon": "afp_runtime.app.questions",
    "agent_call": "afp_runtime.app.calls",
    "all_served_views": "afp_runtime.app.runs",
    "answer": "afp_runtime.app.questions",
    "answer_of": "afp_runtime.app.outcome",
    "answer_status": "afp_runtime.app.questions",
    "builtin_encoder": "afp_runtime.app.conformance",
    "call_among": "afp_runtime.app.calls",
    "call_diff": "afp_runtime.app.calls",
    "conform": "afp_runtime.app.conformance",
    "deliver_schedules": "afp_runtime.app.schedules",
    "dismiss": "afp_runtime.app.turns",
    "drive": "afp_runtime.app.local",
    "due_text": "afp_runtime.app.schedules",
    "encode_served": "afp_runtime.served",
    "epoch_list": "afp_runtime.app.runs",
    "epoch_listing": "afp_runtime.app.runs",
    "epoch_receipt": "afp_runtime.app.runs",
    "export": "afp_runtime.app.runs",
    "exported_run": "afp_runtime.app.runs",
    "final_answer": "afp_runtime.app.outcome",
    "findings": "afp_runtime.app.ledger",
    "fold": "afp_runtime.app.folds",
    "fold_summary": "afp_runtime.app.folds",
    "folded": "afp_runtime.app.folds",
    "ledger_fold": "afp_runtime.app.ledger",
    "list_schedules": "afp_runtime.app.schedules",
    "message_outcome": "afp_runtime.app.outcome",
    "message_outcomes": "afp_runtime.app.outcome",
    "no_call": "afp_runtime.app.calls",
    "no_epoch": "afp_runtime.app.runs",
    "originals": "afp_runtime.app.folds",
    "pause_schedule": "afp_runtime.app.schedules",
    "post": "afp_runtime.app.posting",
    "reason_text": "afp_runtime.app.reasons",
    "recall": "afp_runtime.app.recalling",
    "reasons_for": "afp_runtime.app.reasons",
    "remove_schedule": "afp_runtime.app.schedules",
    "resume_schedule": "afp_runtime.app.schedules",
    "served_page": "afp_runtime.app.runs",
    "served_view": "afp_runtime.app.runs",
    "set_schedule": "afp_runtime.app.schedules",
    "stored_folds": "afp_runtime.app.folds",
    "view_diff": "afp_runtime.app.runs",
}

__getattr__ = _lazy_names("afp_runtime.app", _LAZY, globals())

__all__ = [
    "AgentCall",
    "AnswerStatus",
    "BodyEncoder",
    "CallDiff",
    "CallSide",
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
    "REASONS",
    "Receipt",
    "RunOutcome",
    "RunSource",
    "ScheduleView",
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
    "call_diff",
    "conform",
    "deliver_schedules",
    "dismiss",
    "drive",
    "due_text",
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
    "list_schedules",
    "message_outcome",
    "message_outcomes",
    "no_call",
    "no_epoch",
    "originals",
    "reason_text",
    "reasons_for",
    "pause_schedule",
    "post",
    "recall",
    "remove_schedule",
    "resume_schedule",
    "served_page",
    "served_view",
    "set_schedule",
    "stored_folds",
    "view_diff",
]
