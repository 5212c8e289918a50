"""The objects of the scenario format ``afp-scenario/1``, strict camelCase Structs
(docs/scenarios.md).

``format`` decodes a file into them and checks what the types alone cannot; the rules and the
decisions taken where docs/scenarios.md is silent are written there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from afp_runtime.cost import Budget, Price
from afp_runtime.findings import FindingsConfig
from afp_runtime.permissions import Rule
from afp_runtime.records import STAGES

SCENARIO_FORMAT = "afp-scenario/1"

AGENT_ID = "scenario"
"""The id of the one standing agent a scenario runs."""

STAGE_POINTS = STAGES
TOOL_POINTS = ("tool-start", "tool-end")

# Counts stay exact in every JSON reader (2**53 - 1, as token counts, MAX_TOKEN_COUNT); clock
# figures stay within the years instants can be written in (up to 9999-12-31, in ms).
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0, le=2**53 - 1)]
ClockMs = Annotated[int, msgspec.Meta(ge=0, le=253_402_300_799_999)]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
PositiveNumber = Annotated[int, msgspec.Meta(gt=0)] | Annotated[float, msgspec.Meta(gt=0)]
NonEmptyStr = Annotated[str, msgspec.Meta(min_length=1)]
PersonText = Annotated[str, msgspec.Meta(min_length=1, max_length=32_000)]
STREAM_POINT = "mid-stream"
# A crash step's ``after``: a stage (the one list of stages, records' STAGES), the model send,
# a point inside a streamed reply, or a tool point. The Literal is built from those tuples so the
# list is written once; the type checker sees a plain str.
CRASH_POINTS = (*STAGES, "send", STREAM_POINT, *TOOL_POINTS)
if TYPE_CHECKING:
    CrashPoint = str
else:
    CrashPoint = Literal[CRASH_POINTS]


class _Input(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Base of every object of the format: unknown keys are refused, except ``extensions``."""

    extensions: dict[str, Any] | None = None


class ClockSpec(_Input, frozen=True, kw_only=True):
    """The virtual clock: where it starts and how far each kind of work moves it (ms)."""

    start_ms: ClockMs
    model_call_step_ms: ClockMs
    tool_step_ms: ClockMs
    run_gap_ms: ClockMs
    zone: str = "UTC"  # informational only: recorded, never used as a zone


class AgentSpec(_Input, frozen=True, kw_only=True):
    """The standing agent: the camelCase names of the agent definition's options."""

    model: NonEmptyStr
    max_iterations: PositiveInt = 10
    system_prompt: str | None = None
    keep_last_tool_results: NonNegativeInt | bool = 2
    durability: Literal["sync", "iteration", "turn"] = "sync"
    wrap_up: bool = True
    repeated_call_note: bool = True
    pricing: dict[str, Price] | None = None
    budgets: list[Budget] = []
    permissions: list[Rule] | None = None
    findings: FindingsConfig | None = None
    time: Any = None  # a TimeConfig in wire form, decoded by ``time_config_of``
    schedules: list[Any] = []  # schedules in wire form, checked by ``_wait.declared_of``
    schedule_wakeup: bool = False
    recall: bool = False


class UsageSpec(_Input, frozen=True, kw_only=True):
    """Token counts a scripted reply reports."""

    input: NonNegativeInt
    output: NonNegativeInt
    cache_read: NonNegativeInt | None = None
    cache_write: NonNegativeInt | None = None
    reasoning: NonNegativeInt | None = None


class ToolCallSpec(_Input, frozen=True, kw_only=True):
    """A tool call as the scripted model sends it (``argsText``: arguments that did not parse)."""

    id: NonEmptyStr
    name: str
    args: dict[str, Any] = {}
    args_text: str | None = None


class ReplyErrorSpec(_Input, frozen=True, kw_only=True):
    """A scripted failure: the HTTP status decides its classification
    (docs/loop.md#model-call-errors-and-retry)."""

    status: Annotated[int, msgspec.Meta(ge=400, le=599)]
    message: str = ""


class StreamSpec(_Input, frozen=True, kw_only=True):
    """How a streamed reply is cut into fragments (docs/scenarios.md#streamed-replies):
    lengths in characters, used in turn and the last one repeated, for the text and then for
    each tool call's argument text."""

    sizes: Annotated[tuple[PositiveInt, ...], msgspec.Meta(min_length=1)]


class ReplySpec(_Input, frozen=True, kw_only=True):
    """One scripted reply: a text and/or tool calls with usage, or an ``error``; ``stream``
    sends it in fragments."""

    content: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] | None = None
    usage: UsageSpec | None = None
    error: ReplyErrorSpec | None = None
    stream: StreamSpec | None = None


class ProviderSpec(_Input, frozen=True, kw_only=True):
    """The scripted main model: its replies, consumed in order, one per send."""

    replies: tuple[ReplySpec, ...] = ()


class SummarizerSpec(_Input, frozen=True, kw_only=True):
    """The scripted summarizer: its replies, consumed in order, one per summarizer call."""

    replies: tuple[ReplySpec, ...] = ()


class SlidingWindowOptions(_Input, frozen=True, kw_only=True):
    """Options of ``sliding_window`` (docs/window.md#sliding-window)."""

    keep_recent_turns: PositiveInt


class TokenBudgetOptions(_Input, frozen=True, kw_only=True):
    """Options of ``token_budget`` (docs/window.md#token-budget)."""

    threshold_tokens: PositiveNumber
    keep_recent_turns: PositiveInt = 6


class SummarizeOldestOptions(_Input, frozen=True, kw_only=True):
    """Options of ``summarize_oldest`` (docs/window.md#summarize-oldest); ``model`` is the
    summarizer's id."""

    threshold_tokens: PositiveNumber
    model: NonEmptyStr
    keep_recent_turns: PositiveInt = 6
    retain: Literal["conversation", "discard"] = "conversation"


class _StrategySpec(_Input, frozen=True, kw_only=True, tag_field="kind"):
    """Base of the strategy union, tagged on ``kind``."""


class SlidingWindowSpec(_StrategySpec, frozen=True, kw_only=True, tag="slidingWindow"):
    """``{"kind": "slidingWindow", "options": {...}}``."""

    options: SlidingWindowOptions


class TokenBudgetSpec(_StrategySpec, frozen=True, kw_only=True, tag="tokenBudget"):
    """``{"kind": "tokenBudget", "options": {...}}``."""

    options: TokenBudgetOptions


class SummarizeOldestSpec(_StrategySpec, frozen=True, kw_only=True, tag="summarizeOldest"):
    """``{"kind": "summarizeOldest", "options": {...}, "summarizer": {"replies": [...]}}``."""

    options: SummarizeOldestOptions
    summarizer: SummarizerSpec


StrategySpec = SlidingWindowSpec | TokenBudgetSpec | SummarizeOldestSpec


class PauseSpec(_Input, frozen=True, kw_only=True):
    """``{"question": text}``: the scripted tool asks the person (``ctx.ask_person``)."""

    question: str


class ToolResultSpec(_Input, frozen=True, kw_only=True):
    """A scripted tool result other than a plain string: ``{"error": text}``, ``{"text": t,
    "delayMs": n}`` or ``{"pause": {"question": text}}`` (the tool asks the person, pausing
    the turn; docs/host.md#pausing-a-turn)."""

    error: str | None = None
    text: str | None = None
    delay_ms: NonNegativeInt | None = None
    pause: PauseSpec | None = None


class ToolSpec(_Input, frozen=True, kw_only=True):
    """A scripted tool: its declaration and its results, consumed in call order."""

    name: str
    input_schema: dict[str, Any]
    description: str = ""
    results: tuple[str | ToolResultSpec, ...] = ()
    idempotent: bool = False
    parallel_safe: bool = False
    check_in: bool = False
    timeout_s: PositiveNumber = 60
    max_result_chars: PositiveInt = 20_000
    period: Any = None  # a period declaration in wire form, decoded by ``period_of``


class MessageSpec(_Input, frozen=True, kw_only=True):
    """A conversation message of an imported history (the portable checkpoint's wire shape)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    not_dispatched: bool = False
    injected_by: str | None = None


class FoldedSpanSpec(_Input, frozen=True, kw_only=True):
    """A folded span of an imported conversation (docs/window.md#folded-spans; foreign ones
    welcome)."""

    summary_fingerprint: str
    run_id: str
    iteration: int
    folded_at_ms: int
    model: str
    message_count: int
    removed_stage_ids: tuple[str, ...]
    retained: Literal["conversation", "discard"]
    messages: tuple[MessageSpec, ...] | None = None


class _StepSpec(_Input, frozen=True, kw_only=True, tag_field="kind"):
    """Base of the step union, tagged on ``kind``."""


class MessageStep(_StepSpec, frozen=True, kw_only=True, tag="message"):
    """Post a person's message (with its optional ``time {now?, zone?, window?}``, docs/time.md
    docs/loop.md#what-each-stage-commits) and run until the turn is answered, paused or held."""

    message: PersonText
    time: Any = None  # checked by ``message_time_of``


class RestartStep(_StepSpec, frozen=True, kw_only=True, tag="restart"):
    """Drop every in-memory state and open the store with a fresh host; runs nothing."""


class ContinueFromStep(_StepSpec, frozen=True, kw_only=True, tag="continueFrom"):
    """Import a conversation (replacing any), then post ``message`` like a message step."""

    history: tuple[MessageSpec, ...]
    message: PersonText
    folded: tuple[FoldedSpanSpec, ...] | None = None


class CrashStep(_StepSpec, frozen=True, kw_only=True, tag="crash"):
    """Arm a simulated crash for the next message, continueFrom or resume step."""

    after: CrashPoint
    call: str | None = None
    iteration: PositiveInt | None = None
    fragments: PositiveInt | None = None  # mid-stream: how many fragments went out first


class DecisionSpec(_Input, frozen=True, kw_only=True):
    """The answer to an approval: ``{"decision": "approve" | "decline", "note"?: text}``."""

    decision: Literal["approve", "decline"]
    note: str | None = None

    def value(self) -> dict[str, Any]:
        """The answer value as the API takes it (``extensions`` left out)."""
        value: dict[str, Any] = {"decision": self.decision}
        if self.note is not None:
            value["note"] = self.note
        return value


class ResumeStep(_StepSpec, frozen=True, kw_only=True, tag="resume"):
    """Answer (or abandon) one open question of the paused turn, then run the answer run once
    the batch's last question closes (docs/host.md#answering-a-question,
    docs/host.md#abandoning-a-question).

    Attributes:
        answer: text (a tool ask; a time question: a zone name or a ``from/to`` range) or a
            decision object (an approval).
        question: the 0-based position among the open questions; the oldest when absent.
        abandon: true closes the question abandoned instead of answering it.
    """

    answer: str | DecisionSpec | None = None
    question: NonNegativeInt | None = None
    abandon: bool = False

    def value(self) -> Any:
        """The answer value handed to ``answer_question``."""
        if isinstance(self.answer, DecisionSpec):
            return self.answer.value()
        return self.answer


class WaitStep(_StepSpec, frozen=True, kw_only=True, tag="wait"):
    """Move the virtual clock on by ``days`` or ``hours``, or to the instant ``until``, delivering
    the agent's due schedules on the way and running the turns they start
    (docs/scenarios.md#wait-steps). ``down``: no host runs meanwhile (it is closed first and a
    fresh one opens at the end, which delivers what the catch-up rule says)."""

    days: Annotated[int, msgspec.Meta(ge=1, le=3_660)] | None = None
    hours: Annotated[int, msgspec.Meta(ge=1, le=87_840)] | None = None
    until: str | None = None
    down: bool = False


StepSpec = MessageStep | RestartStep | ContinueFromStep | CrashStep | ResumeStep | WaitStep


class Scenario(_Input, frozen=True, kw_only=True):
    """One scenario file (``"format": "afp-scenario/1"``)."""

    format: Literal["afp-scenario/1"]
    name: NonEmptyStr
    clock: ClockSpec
    agent: AgentSpec
    provider: ProviderSpec
    turns: tuple[StepSpec, ...]
    description: str = ""
    strategy: StrategySpec | None = None
    tools: tuple[ToolSpec, ...] = ()
