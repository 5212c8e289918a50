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
  name. A ``crash`` step with no ``message``/``continueFrom``/``resume``/``wait`` step after it
  is refused up front; several crash steps before one step arm it in order (the next is armed
  once the previous has fired, e.g. a crash inside the recovery run).
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
from typing import Any

import msgspec

from afp_runtime.agents import PortableCheckpoint, parse_checkpoint
from afp_runtime.errors import (
    AfpError,
    CheckpointInvalid,
    FindingsConfigError,
    InvalidValue,
    PeriodDeclarationError,
    TimeNotEnabled,
)
from afp_runtime.scenario._specs import (
    AGENT_ID,
    SCENARIO_FORMAT,
    STAGE_POINTS,
    STREAM_POINT,
    TOOL_POINTS,
    AgentSpec,
    ClockSpec,
    ContinueFromStep,
    CrashPoint,
    CrashStep,
    DecisionSpec,
    FoldedSpanSpec,
    MessageSpec,
    MessageStep,
    PauseSpec,
    ProviderSpec,
    ReplyErrorSpec,
    ReplySpec,
    RestartStep,
    ResumeStep,
    Scenario,
    SlidingWindowOptions,
    SlidingWindowSpec,
    StepSpec,
    StrategySpec,
    StreamSpec,
    SummarizeOldestOptions,
    SummarizeOldestSpec,
    SummarizerSpec,
    TokenBudgetOptions,
    TokenBudgetSpec,
    ToolCallSpec,
    ToolResultSpec,
    ToolSpec,
    UsageSpec,
    WaitStep,
)
from afp_runtime.scenario._wait import check_wait, declared_of
from afp_runtime.time import (
    Period,
    TimeConfig,
    message_time_from_wire,
    period_from_wire,
    time_config_from_wire,
)
from afp_runtime.tools import Tool, ToolFn

# The format's objects are written in ``_specs``; this module is where the rest of the package
# takes them from, with the checks.
__all__ = [
    "AGENT_ID",
    "AgentSpec",
    "ClockSpec",
    "ContinueFromStep",
    "CrashPoint",
    "CrashStep",
    "DecisionSpec",
    "FoldedSpanSpec",
    "MessageSpec",
    "MessageStep",
    "PauseSpec",
    "ProviderSpec",
    "ReplyErrorSpec",
    "ReplySpec",
    "RestartStep",
    "ResumeStep",
    "SCENARIO_FORMAT",
    "STAGE_POINTS",
    "STREAM_POINT",
    "Scenario",
    "SlidingWindowOptions",
    "SlidingWindowSpec",
    "StepSpec",
    "StrategySpec",
    "StreamSpec",
    "SummarizeOldestOptions",
    "SummarizeOldestSpec",
    "SummarizerSpec",
    "TOOL_POINTS",
    "TokenBudgetOptions",
    "TokenBudgetSpec",
    "ToolCallSpec",
    "ToolResultSpec",
    "ToolSpec",
    "UsageSpec",
    "WaitStep",
    "at_path",
    "build_tool",
    "check_scenario",
    "checkpoint_of",
    "decode_scenario",
    "message_time_of",
    "period_of",
    "time_config_of",
    "under_path",
]

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
    declared_of(agent)
    if agent.keep_last_tool_results is True:
        raise _invalid("$.agent.keepLastToolResults", "must be an int >= 0 or false, not true")
    _check_replies("$.provider.replies", scenario.provider.replies, streamed=True)
    if isinstance(scenario.strategy, SummarizeOldestSpec):
        _check_replies(
            "$.strategy.summarizer.replies", scenario.strategy.summarizer.replies, streamed=False
        )
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


def _check_replies(path: str, replies: Sequence[ReplySpec], *, streamed: bool) -> None:
    for index, reply in enumerate(replies):
        has_reply = (reply.content, reply.tool_calls, reply.usage) != (None, None, None)
        if reply.error is not None and has_reply:
            raise _invalid(
                f"{path}[{index}]",
                "a reply holds either error or content/toolCalls/usage, not both",
            )
        if reply.stream is None:
            continue
        if not streamed:
            raise _invalid(f"{path}[{index}].stream", "the summarizer's replies are not streamed")
        if reply.error is not None:
            raise _invalid(f"{path}[{index}].stream", "an error reply has nothing to stream")


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
            if step.fragments is not None and step.after != STREAM_POINT:
                raise _invalid(f"{path}.fragments", "fragments goes with after = mid-stream")
            armed.append(index)
        if isinstance(step, WaitStep):
            check_wait(step, path)
        if isinstance(step, MessageStep | ContinueFromStep | ResumeStep | WaitStep):
            armed = []
        if isinstance(step, ContinueFromStep):
            checkpoint_of(step, path)
    if armed:
        raise _invalid(
            f"$.turns[{armed[0]}]",
            "this crash is never reached: no message, continueFrom, resume or wait step follows it",
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
