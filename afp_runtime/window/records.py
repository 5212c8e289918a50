"""Window records: what every engaged visit files under ``compactions``
(docs/window.md#record-schemas).

A tagged union on ``strategy``. Fields that must always appear have no default; optional
stage keys default to UNSET and are then omitted on the wire (never ``null``). Each class lists
its fields in the order docs/window.md#record-schemas gives them.
"""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.messages import Usage
from afp_runtime.window.observations import WindowObservations
from afp_runtime.window.refusals import Refusal, Standing


class DroppedStanding(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """An evicted tool result of an armed agent and its ledger standing
    (docs/findings.md#evicted-results-and-their-standings)."""

    tool_call_id: str
    tool_name: str | msgspec.UnsetType = msgspec.UNSET
    standing: Standing | msgspec.UnsetType = msgspec.UNSET


class _Record(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    tag_field="strategy",
):
    """Base of built-in records: tagged on ``strategy``."""


class SlidingWindowRecord(_Record, frozen=True, kw_only=True, tag="sliding-window"):
    """A sliding-window visit."""

    iteration: int
    keep_recent_turns: int
    removed_stage_ids: tuple[str, ...]
    removed_message_count: int
    window_chars_before: int
    window_chars_after: int
    turns_before: int
    turns_after: int
    refusals: tuple[Refusal, ...]
    dropped_observations: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    observations: WindowObservations | msgspec.UnsetType = msgspec.UNSET
    ledger_facts: WindowObservations | msgspec.UnsetType = msgspec.UNSET
    dropped_standings: tuple[DroppedStanding, ...] | msgspec.UnsetType = msgspec.UNSET


class TokenBudgetRecord(_Record, frozen=True, kw_only=True, tag="token-budget"):
    """A token-budget visit (filed only when over budget)."""

    iteration: int
    measured_tokens: int
    threshold_tokens: float
    over_budget: bool
    keep_recent_turns: int
    removed_stage_ids: tuple[str, ...]
    removed_message_count: int
    window_chars_before: int
    window_chars_after: int
    refusals: tuple[Refusal, ...]
    dropped_observations: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    observations: WindowObservations | msgspec.UnsetType = msgspec.UNSET
    ledger_facts: WindowObservations | msgspec.UnsetType = msgspec.UNSET
    dropped_standings: tuple[DroppedStanding, ...] | msgspec.UnsetType = msgspec.UNSET


class SummarizeOldestRecord(_Record, frozen=True, kw_only=True, tag="summarize-oldest"):
    """A summarize-oldest visit (filed only when over budget)."""

    iteration: int
    measured_tokens: int
    threshold_tokens: float
    over_budget: bool
    window_chars_before: int
    removed_stage_ids: tuple[str, ...]
    removed_message_count: int
    window_chars_after: int
    summary_chars: int
    summarizer_tokens: Usage | msgspec.UnsetType = msgspec.UNSET
    summarizer_skipped: bool | msgspec.UnsetType = msgspec.UNSET
    refusals: tuple[Refusal, ...]
    dropped_observations: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    observations: WindowObservations | msgspec.UnsetType = msgspec.UNSET
    ledger_facts: WindowObservations | msgspec.UnsetType = msgspec.UNSET
    dropped_standings: tuple[DroppedStanding, ...] | msgspec.UnsetType = msgspec.UNSET


class CustomRecord(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The record of a custom strategy, or of any strategy this build does not know.

    The common fields are typed; every other key is kept losslessly in ``extra`` and written
    back flat beside them (``record_to_wire``), so a reader without the strategy's code keeps
    everything it read.
    """

    strategy: str
    iteration: int
    removed_stage_ids: tuple[str, ...]
    removed_message_count: int
    window_chars_before: int
    window_chars_after: int
    refusals: tuple[Refusal, ...]
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    dropped_observations: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    observations: WindowObservations | msgspec.UnsetType = msgspec.UNSET
    ledger_facts: WindowObservations | msgspec.UnsetType = msgspec.UNSET
    dropped_standings: tuple[DroppedStanding, ...] | msgspec.UnsetType = msgspec.UNSET


CUSTOM_FIELDS: frozenset[str] = frozenset(CustomRecord.__struct_encode_fields__) - {"extra"}
"""Wire names of a custom record's typed fields: its ``extra`` keys are written flat beside them,
and every other key of a record is ``extra``."""

BuiltinRecord = SlidingWindowRecord | TokenBudgetRecord | SummarizeOldestRecord
WindowRecord = SlidingWindowRecord | TokenBudgetRecord | SummarizeOldestRecord | CustomRecord
