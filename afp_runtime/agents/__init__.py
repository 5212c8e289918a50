"""Agents: definitions with their options and extensions (time, findings), the TOML configs
they are read from, check-in answers and portable checkpoints (docs/python.md,
docs/config.md)."""

from afp_runtime.agents.checkins import (
    ANSWER_LIMIT,
    abandon_question,
    answer_question,
    validate_answer,
)
from afp_runtime.agents.config import (
    AgentConfig,
    ConfigFile,
    HostConfig,
    ModelConfig,
    ToolConfig,
    WindowConfig,
    build_definition,
    load_agents,
    load_config,
    read_config,
)
from afp_runtime.agents.definition import AGENT_ID, Agent
from afp_runtime.agents.portable import (
    PortableCheckpoint,
    check_history,
    export_checkpoint,
    import_checkpoint,
    parse_checkpoint,
    validate_ledger,
)
from afp_runtime.agents.registries import PROVIDERS, WINDOW_KINDS, build_model, build_window
from afp_runtime.agents.schedules import (
    SCHEDULE_SOURCES,
    DeliveredSchedule,
    deliver_due_schedules,
    schedule_entry,
    schedule_wire,
    stored_schedule,
    sync_declared,
    zones_loaded,
)

__all__ = [
    "AGENT_ID",
    "ANSWER_LIMIT",
    "Agent",
    "AgentConfig",
    "ConfigFile",
    "DeliveredSchedule",
    "HostConfig",
    "ModelConfig",
    "PROVIDERS",
    "PortableCheckpoint",
    "SCHEDULE_SOURCES",
    "ToolConfig",
    "WINDOW_KINDS",
    "WindowConfig",
    "abandon_question",
    "answer_question",
    "build_definition",
    "build_model",
    "build_window",
    "check_history",
    "deliver_due_schedules",
    "export_checkpoint",
    "import_checkpoint",
    "load_agents",
    "load_config",
    "parse_checkpoint",
    "read_config",
    "schedule_entry",
    "schedule_wire",
    "stored_schedule",
    "sync_declared",
    "validate_answer",
    "validate_ledger",
    "zones_loaded",
]
