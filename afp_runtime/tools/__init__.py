"""Tools: declarations, argument validation, observation texts and batch dispatch.

This layer imports only ``afp_runtime.messages`` and ``afp_runtime.errors`` of ours; the clock
it needs is its own structural Protocol, ``ToolClock``.
"""

from afp_runtime.tools.context import ProgressSink, ToolClock, ToolContext
from afp_runtime.tools.dispatch import (
    NOT_DISPATCHED_STATUSES,
    CallFinishedHook,
    CallStartedHook,
    ContextFactory,
    GroupStartHook,
    PlannedCall,
    ToolOutcome,
    ToolStatus,
    dispatch_groups,
    plan_batch,
    plan_call,
    run_batch,
)
from afp_runtime.tools.schema import JSON_TYPES, check_schema, format_path, validate_args
from afp_runtime.tools.texts import (
    ARGS_NOT_JSON,
    ARGS_NOT_OBJECT,
    ERROR_MESSAGE_LIMIT,
    NO_OUTPUT,
    PROBLEM_LIMIT,
    declined_text,
    error_text,
    interrupted_text,
    invalid_args_text,
    not_dispatched_text,
    refused_text,
    timeout_text,
    truncation_note,
    unencodable_text,
    unknown_tool_text,
)
from afp_runtime.tools.tool import RESERVED_ARGUMENTS, Tool, ToolFn, as_tool, schema_for

__all__ = [
    "ARGS_NOT_JSON",
    "ARGS_NOT_OBJECT",
    "CallFinishedHook",
    "CallStartedHook",
    "ContextFactory",
    "ERROR_MESSAGE_LIMIT",
    "GroupStartHook",
    "JSON_TYPES",
    "NOT_DISPATCHED_STATUSES",
    "NO_OUTPUT",
    "PROBLEM_LIMIT",
    "PlannedCall",
    "ProgressSink",
    "RESERVED_ARGUMENTS",
    "Tool",
    "ToolClock",
    "ToolContext",
    "ToolFn",
    "ToolOutcome",
    "ToolStatus",
    "as_tool",
    "check_schema",
    "declined_text",
    "dispatch_groups",
    "error_text",
    "format_path",
    "interrupted_text",
    "invalid_args_text",
    "not_dispatched_text",
    "plan_batch",
    "plan_call",
    "refused_text",
    "run_batch",
    "schema_for",
    "timeout_text",
    "truncation_note",
    "unencodable_text",
    "unknown_tool_text",
    "validate_args",
]
