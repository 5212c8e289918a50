"""The custom-strategy protocol: what a strategy receives (a visit) and returns (a result).

A strategy is any object with a non-empty ``name`` and an async ``plan(visit)``; returning None
means it did not engage this visit. The stage validates every result
(docs/window.md#result-validation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal, Protocol, runtime_checkable

import msgspec

from afp_runtime.messages import Message, ModelReply, ModelRequest, Usage
from afp_runtime.window.folds import FoldedSpan
from afp_runtime.window.names import CallNames, call_names
from afp_runtime.window.observations import WindowObservations
from afp_runtime.window.plan import Guards, RemovalPlan, plan_removal
from afp_runtime.window.records import WindowRecord
from afp_runtime.window.refusals import Standing
from afp_runtime.window.turns import Turn, segment, window_chars


@runtime_checkable
class Summarizer(Protocol):
    """What summarize-oldest needs of a model: a provider name and one async send.

    Every Model adapter satisfies it as it stands; the window layer never imports ``models``.
    """

    provider: str

    async def send(self, request: ModelRequest) -> ModelReply: ...


class Billing(msgspec.Struct, frozen=True, kw_only=True):
    """Who a strategy's own model calls are billed to: the port and the model id."""

    provider: object
    model: str


class MessageOrigin(msgspec.Struct, frozen=True, kw_only=True):
    """Which stage put a window message there, and when (epoch ms)."""

    stage_id: str
    born_at_ms: int


class Eviction(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A removed pre-change index and how long the message had survived in the window."""

    index: int
    survival_ms: int


class RemovalFacts(msgspec.Struct, frozen=True, kw_only=True):
    """Origin stage ids (first appearance, deduplicated) and evictions of removed indexes."""

    removed_stage_ids: tuple[str, ...]
    evictions: tuple[Eviction, ...]


class Rebase(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """How a new window relates to the old: ``head + (one inserted message)? + tail``."""

    head_count: int
    kept_tail_count: int
    inserted_at_ms: int | msgspec.UnsetType = msgspec.UNSET


PlanAction = Literal["evict", "summarize", "none"]


class BudgetPressure(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A strategy's budget reading: cap, projection, what it did about it."""

    cap_tokens: float
    projected_tokens: int
    plan_action: PlanAction
    unit: Literal["chars", "tokens"] = "tokens"


class Spend(msgspec.Struct, frozen=True, kw_only=True):
    """A billed call a strategy made (the summarizer's)."""

    model: str
    usage: Usage


class WindowResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a strategy returns from an engaged visit (docs/window.md#what-a-result-carries)."""

    record: WindowRecord
    evictions: tuple[Eviction, ...] = ()
    window: tuple[Message, ...] | msgspec.UnsetType = msgspec.UNSET
    rebase: Rebase | msgspec.UnsetType = msgspec.UNSET
    folded: tuple[FoldedSpan, ...] = ()
    budget_pressure: BudgetPressure | None = None
    spend: Spend | None = None
    warning: str | None = None


TurnStanding = Callable[[Turn], Standing | None]


class WindowVisit:
    """What a strategy sees of one visit. It never touches state.

    Args:
        history: the pre-change window.
        measured: the usage of the previous call of this turn, or None (docs/window.md#measurement).
        iteration: the visit iteration (>= 1).
        run_id: this run's id.
        agent_model: the agent's model id.
        provider_name: the agent model port's provider name.
        now_ms: the visit instant (injected clock), epoch ms.
        guards: bound into ``plan_removal``; strategies never see them.
        origins: one origin per window message.
        turn_standing: a turn's standing, on armed agents only.
        turns: ``segment(history)`` when the caller already has it (the stage does), so a
            visit segments its window once.
        names: ``call_names(history)`` when the caller already has it, likewise.
        chars: ``window_chars(history)`` when the caller already has it, likewise.
    """

    def __init__(
        self,
        *,
        history: Sequence[Message],
        measured: Usage | None,
        iteration: int,
        run_id: str,
        agent_model: str,
        provider_name: str,
        now_ms: int,
        guards: Guards,
        origins: Sequence[MessageOrigin],
        turn_standing: TurnStanding | None = None,
        turns: tuple[Turn, ...] | None = None,
        names: CallNames | None = None,
        chars: int | None = None,
    ) -> None:
        self.history: tuple[Message, ...] = tuple(history)
        self.turns: tuple[Turn, ...] = turns if turns is not None else segment(self.history)
        self.measured = measured
        self.iteration = iteration
        self.run_id = run_id
        self.agent_model = agent_model
        self.provider_name = provider_name
        self.turn_standing = turn_standing
        self._now_ms = now_ms
        self._guards = guards
        self._origins = tuple(origins)
        self._names = names
        self._chars = chars
        # The latest plan a strategy obtained: result validation holds removals to its span.
        self.latest_plan: RemovalPlan | None = None
        # The pin blocks the stage files (docs/window.md#what-a-visit-offers): a later plan replaces
        # them only when present.
        self.captured_observations: WindowObservations | msgspec.UnsetType = msgspec.UNSET
        self.captured_ledger_facts: WindowObservations | msgspec.UnsetType = msgspec.UNSET

    def now(self) -> int:
        """The visit instant, epoch milliseconds."""
        return self._now_ms

    @property
    def call_names(self) -> CallNames:
        """The ``call_names`` index of the pre-change window, built once per visit."""
        if self._names is None:
            self._names = call_names(self.history)
        return self._names

    @property
    def window_chars(self) -> int:
        """Chars of the pre-change window (``window_chars(history)``), counted once per visit."""
        if self._chars is None:
            self._chars = window_chars(self.history)
        return self._chars

    def plan_removal(
        self,
        keep: int,
        is_existing_summary: Callable[[Turn], bool] | None = None,
        *,
        resume_after: int | None = None,
    ) -> RemovalPlan:
        """The removal plan for ``keep`` recent turns under this visit's guards; with
        ``resume_after``, the next span after that turn (docs/window.md#the-removal-plan)."""
        plan = plan_removal(
            self.turns, keep, self._guards, is_existing_summary, resume_after=resume_after
        )
        self.latest_plan = plan
        if plan.observations is not msgspec.UNSET:
            self.captured_observations = plan.observations
        if plan.ledger_facts is not msgspec.UNSET:
            self.captured_ledger_facts = plan.ledger_facts
        return plan

    def removal_facts(self, indices: Iterable[int], at_ms: int) -> RemovalFacts:
        """Origin stage ids and evictions (with survival) of removed pre-change indexes."""
        stage_ids: dict[str, None] = {}
        evictions = []
        for index in indices:
            origin = self._origins[index] if index < len(self._origins) else None
            if origin is not None:
                stage_ids.setdefault(origin.stage_id)
            survival = max(0, at_ms - origin.born_at_ms) if origin is not None else 0
            evictions.append(Eviction(index=index, survival_ms=survival))
        return RemovalFacts(removed_stage_ids=tuple(stage_ids), evictions=tuple(evictions))


class WindowStrategy(Protocol):
    """A window strategy: ``plan`` is awaited at every visit of the window stage."""

    name: str

    async def plan(self, visit: WindowVisit) -> WindowResult | None: ...
