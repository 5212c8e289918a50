"""The values the store port reads and answers with (agents, runs, inbox messages, bundles,
acknowledgements, the tool journal, leases and claims): frozen, backend-neutral."""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.messages import Cost, Message, Usage
from afp_runtime.records import AnyWrite, ConversationState


class DefinitionSummary(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """What the store keeps of the definition an agent was last registered with (a host's
    start, a run of ``afp run`` or the embedded store; docs/storage.md#definition-summaries),
    so doors that do not run the agent still show it.

    Attributes:
        model: the model id sent on the wire.
        provider: the adapter's provider name.
        tool_names: the agent's tools in declaration order (wire ``toolNames``).
        max_iterations: the step budget (wire ``maxIterations``).
        durability: ``sync``, ``iteration`` or ``turn``.
        window_strategy: the window strategy's name, absent without one (wire
            ``windowStrategy``).
        time_zone: the agent's configured zone (time layer), absent without one.
    """

    model: str
    provider: str
    tool_names: tuple[str, ...]
    max_iterations: int
    durability: str
    window_strategy: str | None = None
    time_zone: str | None = None


class AgentRow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """An agent and a summary of its conversation.

    Attributes:
        definition: the definition summary it was last registered with; None in a store made
            before schema 15 (SQLite; 6 on Postgres) until a host or run registers it again,
            and for a stored summary that no longer decodes.
    """

    agent_id: str
    created_at_ms: int
    turn: int
    model_calls: int
    messages: int
    usage_totals: Usage
    status: str
    definition: DefinitionSummary | None = None


class RunRow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One run of a turn.

    Attributes:
        answer: the final answer's text, once the run answered (runs committed before schema
            version 11 have none here; their commit log holds it).
        error_kind: why the run stopped held or stalled (wire ``errorKind``).
        error: the same in words.
        cost: what the run's model calls cost, once it ended, for an agent with pricing or
            budgets (docs/cost.md#figures).
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
    cost: Cost | None = None


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
    """A committed bundle as read back: typed writes (``records/writes.py``), the ``history``
    value still the ``ListRef`` it was committed as."""

    run_id: str
    seq: int
    stage: str
    runtime_stage_id: str
    iteration: int
    committed_at_ms: int
    writes: list[AnyWrite]


class LoadedConversation(msgspec.Struct, frozen=True, kw_only=True):
    """A conversation as a run restores it: the checkpoint and the resolved history."""

    state: ConversationState
    history: tuple[Message, ...]
    fingerprints: tuple[str, ...]


class Ack(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The acknowledgement of a durably accepted inbox message."""

    message_id: str
    accepted_at_ms: int
    position: int
    duplicate: bool = False


class JournalEntry(msgspec.Struct, frozen=True, kw_only=True):
    """What the journal knows of one tool call of a turn."""

    started: bool
    finished: bytes | None


class AgentClaim(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Who holds an agent, as one read of its row and its claimant's lease row.

    Attributes:
        agent_id: the agent.
        host_id: the claiming host, None when the agent was never claimed or was released.
        lease_epoch: the lease epoch the claim was made under (wire ``leaseEpoch``).
        live: the claimant's lease row still carries that epoch and has not expired, so no
            other host may claim the agent now.
    """

    agent_id: str
    host_id: str | None
    lease_epoch: int | None
    live: bool


class LeaseRenewal(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The result of one renewal period.

    Attributes:
        renewed: this host's row still carried its epoch and was extended; False means the
            lease was lost (someone raised the epoch), and nothing was written.
        taken_over: hosts whose expired lease this period took over (their epoch raised by 1).
    """

    renewed: bool
    taken_over: tuple[str, ...] = ()


class ScheduleEntry(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What ``put_schedule`` writes of one schedule (docs/host.md#schedules).

    Attributes:
        name: the schedule's name, unique per agent (the sender is ``schedule:NAME``).
        definition: the ``afp.schedule`` value in its wire form (the store keeps it as given;
            the app layer checks it).
        source: ``declared`` (TOML or Python), ``api``, ``cli``, ``python``, ``inspector``
            or ``model``.
        anchor_ms: when the schedule was set; interval forms count from it (wire ``anchorMs``).
        last_due_ms: the latest due instant handled (delivered or skipped), the anchor on a
            fresh schedule (wire ``lastDueMs``).
        next_due_ms: the next due instant, None when there is none (a finished once schedule,
            wire ``nextDueMs``).
        paused: a paused schedule is never due.
    """

    name: str
    definition: dict[str, Any]
    source: str
    anchor_ms: int
    last_due_ms: int
    next_due_ms: int | None = None
    paused: bool = False


class ScheduleRow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One stored schedule of an agent, as ``ScheduleEntry`` plus what the store keeps.

    Attributes:
        revision: counts every change of the row (a put, a delivery); a delivery is written
            only while the row still has the revision it was planned on.
        delivered: due instants delivered so far (skipped ones not counted).
        created_at_ms / updated_at_ms: when the row was first written and last changed.
    """

    agent_id: str
    name: str
    definition: dict[str, Any]
    source: str
    anchor_ms: int
    last_due_ms: int
    revision: int
    delivered: int
    created_at_ms: int
    updated_at_ms: int
    next_due_ms: int | None = None
    paused: bool = False


class ScheduleDelivered(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What one delivering commit wrote: an ack per due instant delivered (``due_ms`` order),
    and the row after it."""

    acks: tuple[tuple[int, Ack], ...]
    row: ScheduleRow
