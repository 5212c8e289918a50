"""Each layer package is a curated surface with a sorted ``__all__``
(docs/architecture.md#layers).

A layer's ``__init__`` exports what other layers and users import from it, pinned below; every
other name stays in the module that defines it, where tests may reach it. Layer packages are
found on disk (every folder of ``afp_runtime`` with an ``__init__.py``), so a new layer is
checked as soon as it exists.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

import afp_runtime

SOURCE_ROOT = Path(next(iter(afp_runtime.__path__))).resolve()

# Each layer's surface: a name joins or leaves ``__all__`` on purpose, here.
SURFACES: dict[str, list[str]] = {
    "_embed": ["AgentRef", "Store", "TurnEvents", "TurnResult", "TurnStatus", "open"],
    "agents": [
        "AGENT_ID",
        "ANSWER_LIMIT",
        "Agent",
        "AgentConfig",
        "ConfigFile",
        "HostConfig",
        "ModelConfig",
        "PROVIDERS",
        "PortableCheckpoint",
        "ToolConfig",
        "WINDOW_KINDS",
        "WindowConfig",
        "abandon_question",
        "answer_question",
        "build_definition",
        "build_model",
        "build_window",
        "check_history",
        "export_checkpoint",
        "import_checkpoint",
        "load_agents",
        "load_config",
        "parse_checkpoint",
        "read_config",
        "validate_answer",
        "validate_ledger",
    ],
    "api": [
        "ApiServer",
        "ConnectionLimits",
        "DEFAULT_HOST",
        "DEFAULT_KEEPALIVE_S",
        "DEFAULT_MAX_BODY_BYTES",
        "DEFAULT_MAX_STREAMS",
        "DEFAULT_PORT",
        "MAX_BODY_CEILING",
        "MIN_TOKEN_CHARS",
        "check_binding",
        "check_token",
        "create_app",
        "is_loopback",
        "open_listener",
        "serve_until_stopped",
    ],
    "app": [
        "AgentCall",
        "AnswerStatus",
        "BodyEncoder",
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
        "Receipt",
        "RunOutcome",
        "RunSource",
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
        "conform",
        "dismiss",
        "drive",
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
        "message_outcome",
        "message_outcomes",
        "no_epoch",
        "originals",
        "post",
        "served_page",
        "served_view",
        "stored_folds",
        "view_diff",
    ],
    "cli": ["main"],
    "cost": [
        "Budget",
        "CallCost",
        "Cost",
        "Price",
        "UnknownReason",
        "check_budgets",
        "check_pricing",
        "cost_text",
        "cost_wire",
        "crossed",
        "over",
        "price_call",
        "utc_day",
    ],
    "extensions": [
        "Ask",
        "At",
        "Dispatch",
        "Event",
        "Extension",
        "Filed",
        "Piece",
        "RunExtension",
        "RunStart",
        "SeedInput",
        "Seeded",
        "Settled",
    ],
    "findings": [
        "AnswerAsk",
        "Assertion",
        "BasisRow",
        "ConflictRow",
        "DEFAULT_FACT_LIMIT",
        "DeclaredOn",
        "EMPTY_FOLD",
        "FINDINGS_ARG",
        "FindingsConfig",
        "FindingsExtension",
        "ForeignRow",
        "KeepLedgerFacts",
        "LedgerFold",
        "LedgerRow",
        "ServeMode",
        "StandingRow",
        "Subject",
        "WitnessRef",
        "fold_ledger",
        "register_row_kind",
        "resolve_fact_limit",
        "rows_from_wire",
        "rows_to_wire",
        "validate_findings_config",
        "validate_rows",
    ],
    "host": [
        "AgentNotHosted",
        "AgentProfile",
        "DEFAULT_RING_SIZE",
        "DEFAULT_SUBSCRIBER_BUFFER",
        "Delivered",
        "EventBus",
        "GapReason",
        "Host",
        "HostState",
        "HostStopping",
        "HostWatch",
        "StoreCheck",
        "StoreCheckFailed",
        "StreamGap",
        "Subscription",
    ],
    "loop": [
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
    ],
    "mcp": [
        "McpServer",
        "McpToolOptions",
        "McpTools",
        "checked_servers",
        "http",
        "sessions_open",
        "stdio",
    ],
    "messages": [
        "Cost",
        "MAX_TOKEN_COUNT",
        "Message",
        "ModelParams",
        "ModelReply",
        "ModelRequest",
        "Role",
        "StopReason",
        "ToolCall",
        "ToolChoice",
        "ToolSchema",
        "Usage",
        "assistant",
        "canonical_json",
        "chars",
        "fingerprint",
        "message_body",
        "message_from_body",
        "salt",
        "salted",
        "sha256_hex",
        "tool_result",
        "user",
    ],
    "models": [
        "AnthropicModel",
        "Attempt",
        "EncodedRequest",
        "ExtractiveSummarizer",
        "Model",
        "OpenAICompatModel",
        "RetryPolicy",
        "ScriptEntry",
        "ScriptHandler",
        "ScriptedModel",
        "TokenSink",
        "backoff_s",
        "encoder_for",
        "send_with_retries",
    ],
    "permissions": [
        "DECISIONS",
        "Decision",
        "GateFn",
        "PermissionRow",
        "Permissions",
        "PermissionsExtension",
        "ROW_KIND",
        "Rule",
        "Verdict",
        "check_rules",
        "matches",
        "validate_permission_row",
    ],
    "records": [
        "AgentIdWrite",
        "Anchor",
        "AnyWrite",
        "BudgetExceeded",
        "BudgetExhausted",
        "CallCostWrite",
        "CallFailureWrite",
        "Clock",
        "CommitBundle",
        "CompactionsWrite",
        "ConversationState",
        "CostFigures",
        "CostSpent",
        "DayCostFigures",
        "DaySpend",
        "DefinitionWrite",
        "EVENT_TYPES",
        "Event",
        "EventPayload",
        "FinalAnswerWrite",
        "FinalValueWrite",
        "FindingsDeclared",
        "FindingsLedgerWrite",
        "FindingsStanding",
        "FoldedSpansWrite",
        "ForcedToolWrite",
        "HaltedWrite",
        "HistoryWrite",
        "HostDamagedEvent",
        "HostStartedEvent",
        "HostStoppingEvent",
        "IgnoredToolCallsWrite",
        "InboxAccepted",
        "InboxStatus",
        "InboxUpdate",
        "Item",
        "IterationEnded",
        "IterationStarted",
        "IterationWrite",
        "JournalRow",
        "JournalState",
        "LeaseLostEvent",
        "ListRef",
        "MAX_RANGES",
        "MESSAGE_LIST_KEYS",
        "MaxIterationsWrite",
        "MessageRef",
        "ModelEnded",
        "ModelFailed",
        "ModelRetry",
        "ModelStarted",
        "ModelWrite",
        "OpenTurn",
        "OutputErrorWrite",
        "OutputInvalid",
        "OutputRetryWrite",
        "Payload",
        "PendingBatch",
        "PendingBatchWrite",
        "PriorVisitRef",
        "ProviderWrite",
        "QuestionKind",
        "QuestionRow",
        "QuestionStatus",
        "ReceiptMinted",
        "ReceiptWrite",
        "RecoveredFromWrite",
        "ReplyWrite",
        "RequestOnlyWrite",
        "RouteDecided",
        "RunEnd",
        "RunEnded",
        "RunIdWrite",
        "RunKind",
        "RunKindWrite",
        "RunLog",
        "RunStart",
        "RunStarted",
        "RunStatus",
        "RunUsageWrite",
        "STAGES",
        "ServedToolsWrite",
        "StoppedEarlyWrite",
        "StoreFault",
        "StoredFoldedSpan",
        "SubstitutionsWrite",
        "SummarizerCostWrite",
        "SystemPiecesWrite",
        "ToolEnded",
        "ToolProgress",
        "ToolResultsWrite",
        "ToolStarted",
        "TurnEnded",
        "TurnHeld",
        "TurnPaused",
        "TurnStalled",
        "TurnStarted",
        "TurnStatus",
        "TurnWrite",
        "Txn",
        "UNKNOWN",
        "Unknown",
        "UserMessageWrite",
        "Verb",
        "WRITE_TYPES",
        "WindowBudgetPressure",
        "WindowEvicted",
        "WindowRecorded",
        "WrapUpAskedWrite",
        "Write",
        "crashed_at_ms",
        "decode_event",
        "parse_runtime_stage_id",
        "runtime_stage_id",
        "write_of",
        "writes_from_wire",
    ],
    "scenario": [
        "AGENT_ID",
        "ModelCall",
        "RESULT_FORMAT",
        "RunSummary",
        "SCENARIO_FORMAT",
        "Scenario",
        "ScenarioResult",
        "StepResult",
        "SummarizerCall",
        "ToolExecution",
        "check_scenario",
        "decode_scenario",
        "encode_result",
        "run_scenario",
    ],
    "served": [
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
    ],
    "store": [
        "Ack",
        "AgentClaim",
        "AgentDump",
        "AgentRow",
        "BACKENDS",
        "Backend",
        "CheckpointStore",
        "CopyCounts",
        "HealthStore",
        "InboxRow",
        "JournalEntry",
        "LeaseRenewal",
        "LeaseStore",
        "LoadedConversation",
        "MovingStore",
        "RunRow",
        "Store",
        "StoredBundle",
        "agents_to_copy",
        "backend_name",
        "check_owner",
        "copy_agents",
        "open_store",
        "shown_location",
        "sqlite_path",
    ],
    "telemetry": ["Telemetry", "TelemetryConfig", "TelemetrySink"],
    "testing": ["FakeClock", "answer", "call", "capture_logs", "tool_reply"],
    "time": [
        "AnswerProblem",
        "Assume",
        "Bound",
        "BoundsForm",
        "DayForm",
        "JoinedForm",
        "LookbackForm",
        "MessageTime",
        "ObjectForm",
        "ObjectKeys",
        "Period",
        "TIME_ROW_KINDS",
        "TimeConfig",
        "TimeExtension",
        "TimePolicy",
        "TimeReader",
        "ZoneArgument",
        "judge_answer",
        "message_time_from_wire",
        "period_from_wire",
        "time_config_from_wire",
        "validate_time_row",
    ],
    "tools": [
        "ARGS_NOT_JSON",
        "ARGS_NOT_OBJECT",
        "AskedSpan",
        "CallFinishedHook",
        "CallStartedHook",
        "ContextFactory",
        "ERROR_MESSAGE_LIMIT",
        "GroupStartHook",
        "JSON_TYPES",
        "NOT_DISPATCHED_STATUSES",
        "NO_OUTPUT",
        "PROBLEM_LIMIT",
        "PersonAsked",
        "PlannedCall",
        "ProgressSink",
        "QUESTION_LIMIT",
        "REPEATED_CALL_PREFIX",
        "RESERVED_ARGUMENTS",
        "SUPPORTED",
        "Tool",
        "ToolClock",
        "ToolContext",
        "ToolFn",
        "ToolOutcome",
        "ToolStatus",
        "ToolTime",
        "approval_prompt",
        "check_schema",
        "declined_text",
        "dispatch_groups",
        "error_text",
        "format_path",
        "halted_text",
        "interrupted_text",
        "invalid_args_text",
        "no_reply_text",
        "not_dispatched_text",
        "observe_batch",
        "parse_docstring",
        "permission_ask_text",
        "permission_denied_text",
        "person_reply_text",
        "plan_batch",
        "plan_call",
        "refused_text",
        "repeat_key",
        "repeated_call_note",
        "run_batch",
        "schema_for",
        "timeout_text",
        "tool",
        "truncation_note",
        "unencodable_text",
        "unknown_tool_text",
        "unrun_outcome",
        "validate_args",
    ],
    "window": [
        "Billing",
        "BudgetPressure",
        "CustomRecord",
        "DroppedStanding",
        "Eviction",
        "FoldedSpan",
        "MessageOrigin",
        "PriorVisit",
        "Rebase",
        "Spend",
        "Standing",
        "Summarizer",
        "Turn",
        "TurnStanding",
        "VisitOutcome",
        "WindowResult",
        "WindowStrategy",
        "WindowVisit",
        "call_names",
        "drop_oldest_span",
        "record_to_wire",
        "sliding_window",
        "summarize_oldest",
        "texts",
        "token_budget",
        "tool_name_of",
        "traits_of",
        "validate_keep_last_tool_results",
        "validate_strategy",
        "visit_window",
    ],
}

# Layers whose surfaces had grown to everything they define (issue 35) are held to this many
# names: a new export there means another one goes back to its module.
CAPPED = ("findings", "served", "window")
CAP = 30

LAYER_PACKAGES = sorted(
    folder.name
    for folder in SOURCE_ROOT.iterdir()
    if folder.is_dir() and (folder / "__init__.py").is_file()
)


@pytest.fixture(name="package", params=LAYER_PACKAGES)
def fixture_package(request: pytest.FixtureRequest) -> ModuleType:
    """One layer package, imported."""
    return importlib.import_module(f"afp_runtime.{request.param}")


def _exported(package: ModuleType) -> list[str]:
    names = getattr(package, "__all__", None)
    assert names is not None, f"{package.__name__} has no __all__"
    return list(names)


def test_layer_packages_are_found() -> None:
    """Discovery finds the layers that exist today, so the checks below are not vacuous."""
    assert {"messages", "records", "served", "models", "tools", "store", "loop"} <= set(
        LAYER_PACKAGES
    )


def test_every_layer_has_a_pinned_surface() -> None:
    """Every layer package on disk has its entry in SURFACES, and every entry is a package."""
    assert sorted(SURFACES) == LAYER_PACKAGES


def test_all_is_the_pinned_surface(package: ModuleType) -> None:
    """A layer's __all__ is exactly its pinned list, so a name is exported only on purpose."""
    names = _exported(package)
    pinned = SURFACES[package.__name__.removeprefix("afp_runtime.")]
    added = sorted(set(names) - set(pinned))
    dropped = sorted(set(pinned) - set(names))
    assert not added, f"{package.__name__}.__all__ adds names not pinned in SURFACES: {added}"
    assert not dropped, f"{package.__name__}.__all__ lacks names pinned in SURFACES: {dropped}"
    assert names == pinned, f"{package.__name__}.__all__ is not in the pinned order"


@pytest.mark.parametrize("layer", CAPPED)
def test_capped_surfaces_stay_small(layer: str) -> None:
    """window, findings and served export at most CAP names each."""
    names = _exported(importlib.import_module(f"afp_runtime.{layer}"))
    assert len(names) <= CAP, f"afp_runtime.{layer} exports {len(names)} names (cap {CAP})"


def test_all_exists(package: ModuleType) -> None:
    """Every layer package declares __all__ as a list of strings."""
    names = _exported(package)
    assert all(isinstance(name, str) for name in names), package.__name__


def test_all_is_sorted(package: ModuleType) -> None:
    """Every layer package's __all__ is in sorted() order (upper case before lower case)."""
    names = _exported(package)
    assert names == sorted(names), f"{package.__name__}.__all__ should be {sorted(names)}"


def test_all_has_no_duplicates(package: ModuleType) -> None:
    """No name appears twice in a layer package's __all__."""
    names = _exported(package)
    twice = sorted({name for name in names if names.count(name) > 1})
    assert not twice, f"{package.__name__}.__all__ repeats {twice}"


def test_every_exported_name_exists(package: ModuleType) -> None:
    """Every name in a layer package's __all__ is an attribute of the package."""
    missing = [name for name in _exported(package) if not hasattr(package, name)]
    assert not missing, f"{package.__name__}.__all__ names missing attributes {missing}"


def test_no_private_name_is_exported(package: ModuleType) -> None:
    """No layer package exports a name that starts with an underscore."""
    private = [name for name in _exported(package) if name.startswith("_")]
    assert not private, f"{package.__name__}.__all__ exports private names {private}"


def test_init_brings_in_only_its_surface(package: ModuleType) -> None:
    """A layer's __init__ imports no public name it does not list in __all__ (submodules aside),
    so nothing unlisted is reachable from the package."""
    exported = set(_exported(package))
    stray = sorted(
        name
        for name, value in vars(package).items()
        if not name.startswith("_")
        and name not in exported
        and not isinstance(value, ModuleType)
        # ``from __future__ import annotations`` leaves a feature object behind.
        and type(value).__module__ != "__future__"
    )
    assert not stray, f"{package.__name__} imports public names missing from __all__: {stray}"
