"""The scenario input format ``afp-scenario/1`` (docs/scenarios.md): strict camelCase Structs.

Every object of the format refuses unknown keys (msgspec ``forbid_unknown_fields``), so a
snake_case spelling or a typo fails with its JSON path. Any object may carry an
``extensions`` object, which is never read: only what sits under it escapes the check.

Every error names the JSON path of the bad value (``$.turns[3].history[0].toolCallId``).
Decoding and type errors are ``InvalidValue``; errors the runtime's own validation raises keep
their class (``ToolDefinitionError``, ``WindowConfigError``, ``CheckpointInvalid``…) with the
path put in front of their message.

The time layer is available (docs/time.md): ``agent.time`` is decoded as the runtime's
``TimeConfig`` (``time_config_from_wire``), a message's ``time`` as its ``MessageTime``
(``message_time_from_wire``) and a tool's ``period`` as its ``Period`` (``period_from_wire``,
then checked against the input schema when the tool is built). Their errors keep the runtime's
class (``AgentDefinitionError``, ``InvalidValue``, ``PeriodDeclarationError``) with the runtime's
field path placed under the JSON path (``$.agent.time.policy.dateOrder``,
``$.turns[2].time.window``, ``$.tools[0].period.forms[1].to.edge``). What the runtime cannot do
from a file stays refused by the runtime's own check, with its message: a time reader other
than the built-in ``"afp/english"`` (readers are code, given in Python).
Check-ins are available: ``{"pause": {"question": …}}`` tool results, ``checkIn`` tools and
``resume`` steps (docs/host.md#check-ins); a resume step answers a time question with a string (a
zone name, or a ``from/to`` range).

Decisions where docs/scenarios.md is silent:

* ``tools`` defaults to none; ``provider``, ``clock`` (all but ``zone``) and ``turns`` are
  required.
* A usage object needs ``input`` and ``output``; an error reply needs ``status`` (400..599) and
  may omit ``message``; a reply holds either ``error`` or ``content``/``toolCalls``/``usage``.
* ``call`` is accepted only with ``tool-start`` / ``tool-end``, ``iteration`` only with a stage
  name. A ``crash`` step with no ``message``/``continueFrom``/``resume`` step after it is refused
  up front; several crash steps before one step arm it in order (the next is armed once the
  previous has fired, e.g. a crash inside the recovery run).
* A result object holds exactly one of ``error``, ``text`` or ``pause``; ``delayMs`` goes with
  ``text`` only. ``pause.question`` is any string: the scripted tool hands it to
  ``ctx.ask_person`` as is, so a blank or over-long question fails the call like any tool error
  (as the runtime does), rather than being refused up front.
* A ``resume`` step holds either ``answer`` or ``"abandon": true`` (``"abandon": false`` is the
  same as leaving it out). ``answer`` is a string or a decision object ``{"decision":
  "approve" | "decline", "note"?: text}`` (unknown keys refused here); whether it fits the
  question's kind is the runtime's check when the step runs (``InvalidAnswer``, see
  ``runner.run_scenario``). ``question`` is an int >= 0.
* A message ``time`` while ``agent.time`` is null is refused up front as the runtime's
  ``TimeNotEnabled`` at ``$.turns[i].time`` (the inbox's 422 ``time-not-enabled``). A tool
  ``period`` on an agent without time is accepted and, as in the runtime, has no effect
  (docs/time.md#time-disabled).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from afp_runtime.agents import PortableCheckpoint, parse_checkpoint
from afp_runtime.cost import Budget, Price
from afp_runtime.errors import (
    AfpError,
    CheckpointInvalid,
    FindingsConfigError,
    InvalidValue,
    PeriodDeclarationError,
    TimeNotEnabled,
)
from afp_runtime.findings import FindingsConfig
from afp_runtime.permissions import Rule
from afp_runtime.records import STAGES
from afp_runtime.time import (
    Period,
    TimeConfig,
    message_time_from_wire,
    period_from_wire,
    time_config_from_wire,
)
from afp_runtime.tools import Tool, ToolFn

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
CrashPoint = Literal[
    "seed",
    "settle",
    "window",
    "context",
    "receipt",
    "call-model",
    "tool-calls",
    "wrap-up",
    "final",
    "halt",
    "output-retry",
    "send",
    "tool-start",
    "tool-end",
]


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


class ReplySpec(_Input, frozen=True, kw_only=True):
    """One scripted reply: a text and/or tool calls with usage, or an ``error``."""

    content: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] | None = None
    usage: UsageSpec | None = None
    error: ReplyErrorSpec | None = None


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


StepSpec = MessageStep | RestartStep | ContinueFromStep | CrashStep | ResumeStep


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


# -- errors ------------------------------------------------------------------------------------


def at_path(path: str, error: AfpError) -> AfpError:
    """Put ``path`` in front of an error's message (the error keeps its class)."""
    error.message = f"{path}: {error.message}"
    error.args = (error.message,)
    error.context.setdefault("field", path)
    return error


def _invalid(path: str, message: str) -> InvalidValue:
    return InvalidValue(f"{path}: {message}", field=path)


def under_path(base: str, error: AfpError, *, root: str = "") -> AfpError:
    """Put the JSON path of the runtime's ``field`` in front of an error's message: ``base``
    followed by the field path the runtime named (the error keeps its class).

    ``root`` is the runtime's name for ``base`` itself (``"period"`` for a period declaration,
    whose other fields are named relative to it, ``forms[1].to.edge``); a field equal to it
    names ``base``.
    """
    field = str(error.context.get("field", "") or "")
    if not field or field == root:
        path = base
    elif field.startswith("["):
        path = base + field
    else:
        path = f"{base}.{field}"
    error.message = f"{path}: {error.message}"
    error.args = (error.message,)
    error.context["field"] = path
    return error


_UNKNOWN = re.compile(r"Object contains unknown field `(?P<key>.*)`")


def _split_msgspec(text: str, base: str) -> tuple[str, str]:
    """msgspec's ``message - at `$.a.b``` as (``base.a.b``, message); an unknown key's path
    names the key itself."""
    head, sep, where = text.rpartition(" - at `$")
    if sep and where.endswith("`"):
        base, text = base + where[:-1], head
    unknown = _UNKNOWN.fullmatch(text)
    if unknown is not None:
        key = unknown["key"]
        return f"{base}.{key}", (
            "unknown key (keys are the camelCase names docs/scenarios.md lists; only what sits "
            "under extensions is not checked)"
        )
    return base, text


# -- decoding and checking -----------------------------------------------------------------------

_decoder = msgspec.json.Decoder(Scenario)


def decode_scenario(data: bytes | str) -> Scenario:
    """Decode a scenario file and check it whole before anything runs.

    Raises:
        InvalidValue: not JSON, an unknown key or a bad value; the message names the JSON
            path.
        TimeNotEnabled: a message step carries ``time`` while ``agent.time`` is null.
        AfpError: a tool declaration (its period included), ``agent.time``, a strategy or an
            imported conversation the runtime refuses (its own class, the path in front of its
            message).
    """
    try:
        scenario = _decoder.decode(data)
    except msgspec.ValidationError as exc:
        path, message = _split_msgspec(str(exc), "$")
        raise _invalid(path, message) from None
    except msgspec.DecodeError as exc:
        raise _invalid("$", f"the file is not valid JSON: {exc}") from None
    except FindingsConfigError as exc:
        # Checked as the findings options decode (the only struct of ours doing so there).
        raise at_path("$.agent.findings", exc) from None
    check_scenario(scenario)
    return scenario


async def _unused_tool(args: Any, ctx: Any) -> None:
    """Stands in for a scripted tool while its declaration is checked."""


def check_scenario(scenario: Scenario) -> None:
    """Check what the types alone cannot (see ``decode_scenario``)."""
    agent = scenario.agent
    time_config_of(agent)
    if agent.keep_last_tool_results is True:
        raise _invalid("$.agent.keepLastToolResults", "must be an int >= 0 or false, not true")
    _check_replies("$.provider.replies", scenario.provider.replies)
    if isinstance(scenario.strategy, SummarizeOldestSpec):
        _check_replies("$.strategy.summarizer.replies", scenario.strategy.summarizer.replies)
    names: set[str] = set()
    for index, spec in enumerate(scenario.tools):
        path = f"$.tools[{index}]"
        if spec.name in names:
            raise _invalid(f"{path}.name", f"a second tool is named {spec.name!r}")
        names.add(spec.name)
        build_tool(spec, path, _unused_tool)
        for number, result in enumerate(spec.results):
            _check_result(f"{path}.results[{number}]", result)
    _check_steps(scenario.turns, timed=agent.time is not None)


def _check_replies(path: str, replies: Sequence[ReplySpec]) -> None:
    for index, reply in enumerate(replies):
        has_reply = (reply.content, reply.tool_calls, reply.usage) != (None, None, None)
        if reply.error is not None and has_reply:
            raise _invalid(
                f"{path}[{index}]",
                "a reply holds either error or content/toolCalls/usage, not both",
            )


def _check_result(path: str, result: str | ToolResultSpec) -> None:
    if isinstance(result, str):
        return
    held = [value for value in (result.error, result.text, result.pause) if value is not None]
    if len(held) != 1:
        raise _invalid(path, 'a result object holds exactly one of "error", "text" or "pause"')
    if result.delay_ms is not None and result.text is None:
        raise _invalid(f"{path}.delayMs", 'delayMs goes with "text"')


def _check_steps(steps: Sequence[StepSpec], *, timed: bool) -> None:
    armed: list[int] = []
    for index, step in enumerate(steps):
        path = f"$.turns[{index}]"
        if isinstance(step, ResumeStep) and (step.answer is None) != step.abandon:
            raise _invalid(
                path,
                'a resume step holds either "answer" or "abandon": true'
                + (", not both" if step.abandon else ""),
            )
        if isinstance(step, MessageStep):
            message_time_of(step, path, timed=timed)
        if isinstance(step, CrashStep):
            if step.call is not None and step.after not in TOOL_POINTS:
                raise _invalid(f"{path}.call", "call goes with after = tool-start or tool-end")
            if step.iteration is not None and step.after not in STAGE_POINTS:
                raise _invalid(f"{path}.iteration", "iteration goes with a stage name in after")
            armed.append(index)
        if isinstance(step, MessageStep | ContinueFromStep | ResumeStep):
            armed = []
        if isinstance(step, ContinueFromStep):
            checkpoint_of(step, path)
    if armed:
        raise _invalid(
            f"$.turns[{armed[0]}]",
            "this crash is never reached: no message, continueFrom or resume step follows it",
        )


# -- runtime values from the format ------------------------------------------------------------


def time_config_of(agent: AgentSpec) -> TimeConfig | None:
    """The agent's ``TimeConfig`` (None: time off), decoded from ``agent.time``.

    Raises:
        AgentDefinitionError: an unknown key, a wrong type or an invalid value; the message
            starts with its path (``$.agent.time.maxAnswerRepeats``).
    """
    if agent.time is None:
        return None
    try:
        return time_config_from_wire(agent.time)
    except AfpError as exc:
        raise under_path("$.agent", exc) from None


def message_time_of(step: MessageStep, path: str, *, timed: bool) -> dict[str, Any] | None:
    """A message step's ``time``, checked as the inbox checks it (docs/time.md#the-clock-row); None
    when it has none. ``timed``: the agent has time enabled.

    Raises:
        TimeNotEnabled: the step carries ``time`` while ``agent.time`` is null.
        InvalidValue: a field of ``time`` is wrong (``$.turns[i].time.now`` …).
    """
    if step.time is None:
        return None
    if not timed:
        raise TimeNotEnabled(
            f"{path}.time: a message carries time, but agent.time is null (the inbox refuses "
            "it: time-not-enabled); set agent.time or leave the time out",
            field=f"{path}.time",
        )
    try:
        message_time_from_wire(step.time)
    except AfpError as exc:
        raise under_path(path, exc) from None
    time: dict[str, Any] = step.time
    return time


def period_of(spec: ToolSpec, path: str) -> Period | None:
    """The tool's ``Period`` (None: no period), decoded from ``tools[i].period``.

    Raises:
        PeriodDeclarationError: the declaration breaks a rule of
        docs/time.md#validation-at-definition-time; the message
            starts with its path (``$.tools[0].period.forms[1].to.edge``).
    """
    if spec.period is None:
        return None
    try:
        return period_from_wire(spec.period)
    except AfpError as exc:
        raise under_path(f"{path}.period", exc, root="period") from None


def build_tool(spec: ToolSpec, path: str, fn: ToolFn) -> Tool:
    """The runtime tool a spec declares, running ``fn``.

    ``checkIn`` maps to ``check_in=True``: a call of it pauses its batch for an approval.
    ``period`` is decoded and then checked against the input schema
    (docs/time.md#validation-at-definition-time).

    Raises:
        PeriodDeclarationError: the period is refused (named under ``$.tools[i].period``).
        ToolDefinitionError: the declaration is refused (reserved arguments, a bad schema…).
    """
    period = period_of(spec, path)
    try:
        return Tool(
            spec.name,
            spec.description,
            spec.input_schema,
            fn,
            idempotent=spec.idempotent,
            parallel_safe=spec.parallel_safe,
            timeout_s=spec.timeout_s,
            max_result_chars=spec.max_result_chars,
            check_in=spec.check_in,
            period=period,
        )
    except PeriodDeclarationError as exc:
        raise under_path(f"{path}.period", exc, root="period") from None
    except AfpError as exc:
        raise at_path(path, exc) from None


def checkpoint_of(step: ContinueFromStep, path: str) -> PortableCheckpoint:
    """The portable checkpoint a continueFrom step imports, strictly validated
    (docs/loop.md#checkpoint-validation).

    Raises:
        CheckpointInvalid: the history or a span is refused; names the path under ``path``.
    """
    raw: dict[str, Any] = {
        "version": 1,
        "agentId": AGENT_ID,
        "history": [_message_wire(message) for message in step.history],
    }
    if step.folded is not None:
        raw["folded"] = [_span_wire(span) for span in step.folded]
    try:
        return parse_checkpoint(msgspec.json.encode(raw), agent_id=AGENT_ID)
    except CheckpointInvalid as exc:
        where, message = _split_msgspec(exc.message, path)
        if where == path and not message.startswith(("history", "folded")):
            raise at_path(path, exc) from None
        raise CheckpointInvalid(
            f"{where}.{message}" if where == path else f"{where}: {message}", field=where
        ) from None


def _call_wire(call: ToolCallSpec) -> dict[str, Any]:
    wire: dict[str, Any] = {"id": call.id, "name": call.name, "args": call.args}
    if call.args_text is not None:
        wire["argsText"] = call.args_text
    return wire


def _message_wire(message: MessageSpec) -> dict[str, Any]:
    """A message spec in the portable checkpoint's wire shape (absent keys left out)."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["toolCalls"] = [_call_wire(call) for call in message.tool_calls]
    for key, value in (
        ("toolCallId", message.tool_call_id),
        ("toolName", message.tool_name),
        ("injectedBy", message.injected_by),
    ):
        if value is not None:
            wire[key] = value
    if message.not_dispatched:
        wire["notDispatched"] = True
    return wire


def _span_wire(span: FoldedSpanSpec) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "summaryFingerprint": span.summary_fingerprint,
        "runId": span.run_id,
        "iteration": span.iteration,
        "foldedAtMs": span.folded_at_ms,
        "model": span.model,
        "messageCount": span.message_count,
        "removedStageIds": list(span.removed_stage_ids),
        "retained": span.retained,
    }
    if span.messages is not None:
        wire["messages"] = [_message_wire(message) for message in span.messages]
    return wire
