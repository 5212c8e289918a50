"""The loop's extension port (docs/loop.md#extensions): what an extension (time, findings) may
add to a run, at named points of a turn and an iteration.

An agent's extensions each give the run one ``RunExtension`` at its start. The stages call every
extension at each hook, in the agent's order, through one visible loop; a hook gets values and
returns values (rows to file, request pieces, decided calls, questions, events) and never touches
the run. An agent with no extensions runs the stages with nothing to call.

``RunExtension`` answers every hook with "nothing to add"; an extension overrides the hooks it
uses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from afp_runtime.messages import Message, ToolCall, ToolSchema
from afp_runtime.records import Clock, EventPayload, LedgerRow, QuestionRow, RunKind
from afp_runtime.tools import PlannedCall, Tool, ToolOutcome
from afp_runtime.window import TurnStanding, VisitOutcome

Ask = tuple[str, str, tuple[str, ...], dict[str, Any] | None]
"""A question a pause asks: kind, prompt, the calls waiting on it, kind-specific detail."""

Event = EventPayload
"""An event an extension reports: its typed payload (the run adds the envelope)."""

Piece = dict[str, str]
"""A system piece: ``slot``, ``source`` and ``text``."""


@dataclass(frozen=True)
class At:
    """Where in the turn a hook is called."""

    turn: int
    iteration: int


@dataclass(frozen=True)
class RunStart:
    """What an extension knows of its run from the start."""

    agent_id: str
    run_id: str
    kind: RunKind
    tools_by_name: Mapping[str, Tool]
    clock: Clock
    offload: Callable[..., Awaitable[Any]]
    """Run a blocking function (``offload(fn, *args)``) in a worker thread, off the event
    loop."""
    store: Any = None
    """The run's store, for an extension whose calls write beside the run (``scheduleWakeup``
    sets schedules through it); typed loosely since extensions sit below the store port."""


@dataclass(frozen=True)
class SeedInput:
    """The seed of a run, as an extension sees it."""

    turn: int
    text: str | None
    ledger: Sequence[LedgerRow]  # typed (docs/storage.md#typed-ledger-rows)
    message_time: Mapping[str, Any] | None
    accepted_at_ms: int
    answered_questions: Callable[[], Awaitable[Sequence[QuestionRow]]]


@dataclass(frozen=True)
class Seeded:
    """What an extension files at seed, or why the turn cannot go on (held)."""

    rows: Sequence[Mapping[str, Any]] = ()
    hold: tuple[str, str] | None = None
    """``(error_kind, error)`` when the turn must be held."""


@dataclass(frozen=True)
class Filed:
    """Rows an extension files from the model's words, and the events reporting them."""

    rows: Sequence[Any] = ()
    events: Sequence[Event] = ()


@dataclass(frozen=True)
class Settled:
    """An extension's part in settling a paused batch: calls it decided again, or the questions
    the batch asks again (the batch then pauses once more, keeping ``kept_question_ids``)."""

    planned: Mapping[str, PlannedCall] = field(default_factory=dict)
    asks: Sequence[Ask] = ()
    kept_question_ids: tuple[str, ...] = ()


class Dispatch(Protocol):
    """An extension's part in dispatching one batch."""

    def prepare(self, plan: PlannedCall) -> PlannedCall:
        """The call as it is handed to its tool (read once, at hand-over)."""
        ...

    def context(self, tool_call_id: str) -> Mapping[str, Any]:
        """Fields of the call's ``ToolContext`` this extension fills."""
        ...


class RunExtension:
    """One extension's part in one run. Hooks are listed in the order a turn reaches them; each
    answers "nothing to add" here, and an extension overrides the hooks it uses."""

    schemas_vary = False
    """Whether served tool schemas change between calls of a run (no caching of their hashes)."""

    async def seed(self, seed: SeedInput) -> Seeded:
        """Run seed: read the ledger once; rows to file in the seed's transaction."""
        return Seeded()

    def serve(
        self, pieces: list[Piece], messages: tuple[Message, ...]
    ) -> tuple[list[Piece], tuple[Message, ...]]:
        """Request decoration: the system pieces and the window as served."""
        return pieces, messages

    def serve_tools(
        self, tools: Sequence[Tool], schemas: tuple[ToolSchema, ...], history: Sequence[Message]
    ) -> tuple[ToolSchema, ...]:
        """Request decoration: the tool schemas as served."""
        return schemas

    def request_lines(self) -> list[Piece]:
        """Request decoration: request-only lines after the window (``role``, ``reason``,
        ``text``)."""
        return []

    def turn_standing(self) -> TurnStanding | None:
        """The window visit's standing of a turn's results (a pin), when the extension has one."""
        return None

    def after_visit(self, outcome: VisitOutcome) -> VisitOutcome:
        """The window visit's outcome, with what the extension adds to its record."""
        return outcome

    def peel(
        self, calls: Sequence[ToolCall], at: At, history: Sequence[Message]
    ) -> tuple[tuple[ToolCall, ...], Filed]:
        """Before planning a batch: the calls as tools see them, and what their reserved
        arguments file."""
        return tuple(calls), Filed()

    def strip(self, call: ToolCall) -> ToolCall:
        """A call as tools see it, filing nothing (calls of a paused batch, approval prompts)."""
        return call

    async def decide(
        self, planned: Sequence[PlannedCall], at: At
    ) -> tuple[list[PlannedCall], list[Ask]]:
        """Per-call decision: the batch as it will run, and the questions it must ask first."""
        return list(planned), []

    def halts(self) -> tuple[str, str] | None:
        """After the per-call decision: ``(error kind, words)`` when the batch's decisions halt
        the turn (docs/permissions.md#halt); nothing of the batch then runs."""
        return None

    def dispatching(self) -> Dispatch | None:
        """Dispatch context: this extension's part in handing the batch's calls over."""
        return None

    def observed(self, outcome: ToolOutcome) -> ToolOutcome:
        """A call's outcome as the model will read it."""
        return outcome

    async def settle(
        self, calls: Sequence[ToolCall], questions: Sequence[QuestionRow], at: At
    ) -> Settled:
        """Settle: the paused batch's calls this extension decides again from closed questions."""
        return Settled()

    def answer(self, content: str, at: At, history: Sequence[Message]) -> tuple[str, Filed]:
        """Turn end: the answer as delivered, and what it files."""
        return content, Filed()

    def take_rows(self) -> list[dict[str, Any]]:
        """Rows filed since the last bundle that carried rows, handed over once."""
        return []


class Extension(Protocol):
    """What an agent definition holds for one extension."""

    name: str
    """The option's name (``time``, ``findings``): its key in the definition's fingerprint."""

    def shape(self) -> Any:
        """What joins the definition's fingerprint under ``name``."""
        ...

    def start(self, run: RunStart) -> RunExtension:
        """The extension's part in a new run."""
        ...
