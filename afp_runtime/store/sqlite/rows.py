"""Read-side row values of the SQLite store (agents, runs, inbox messages, stored bundles)."""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.messages import Usage


class AgentRow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """An agent and a summary of its conversation."""

    agent_id: str
    created_at_ms: int
    turn: int
    model_calls: int
    messages: int
    usage_totals: Usage
    status: str


class RunRow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One run of a turn.

    Attributes:
        answer: the final answer's text, once the run answered (runs committed before schema
            version 11 have none here; their commit log holds it).
        error_kind: why the run stopped held or stalled (wire ``errorKind``).
        error: the same in words.
    """

    run_id: str
    agent_id: str
    turn: int
    kind: str
    message_id: str
    status: str
    started_at_ms: int
    bundles: int
    recovered_from: str | None = None
    ended_at_ms: int | None = None
    usage: Usage | None = None
    answer: str | None = None
    error_kind: str | None = None
    error: str | None = None


class InboxRow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A person's message in an agent's durable inbox."""

    message_id: str
    agent_id: str
    position: int
    text: str
    status: str
    accepted_at_ms: int
    turn: int | None = None
    idempotency_key: str | None = None
    sender: str | None = None
    time: dict[str, Any] | None = None


class StoredBundle(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A committed bundle as read back: message-list values are still references."""

    run_id: str
    seq: int
    stage: str
    runtime_stage_id: str
    iteration: int
    committed_at_ms: int
    writes: list[dict[str, Any]]
