"""The scenario result format ``afp-scenario-result/1`` (docs/scenarios.md, Output) and its encoder.

Keys are camelCase in the order docs/scenarios.md lists them. Optional keys are left out rather than
written as ``null``, except ``modelCalls[].response`` (``null`` for a send a crash cut) and
``toolExecutions[].result`` (``null`` for a call that never returned: a crash or a timeout).
``encode_result`` is deterministic: the same result gives the same bytes.
"""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.app import FoldedSpan
from afp_runtime.messages import Message, ModelRequest, ToolCall, ToolSchema, Usage

RESULT_FORMAT = "afp-scenario-result/1"


class _Output(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Base of the result objects: fields defaulting to UNSET are left out when unset."""


class RunSummary(_Output, frozen=True, kw_only=True):
    """One run a step ran: its id, kind and how it ended (``crashed`` when a crash cut it)."""

    run_id: str
    kind: str
    status: str


class DeliveryView(_Output, frozen=True, kw_only=True):
    """One due instant a ``wait`` step delivered and the turn it started
    (docs/scenarios.md#wait-steps).

    Attributes:
        schedule: the schedule's name.
        sender: the inbox message's sender, ``schedule:NAME``.
        due_ms: the due instant delivered (epoch ms); ``due``: the same, in UTC.
        delivered_at_ms: the virtual clock when it was delivered (later than ``due_ms`` for a
            catch-up).
        message_id: the inbox message.
        outcome / run_id / runs / answer: as a message step's, for the turn the message started.
        schedule_rows: ``schedule`` ledger rows the turn filed (``scheduleWakeup`` calls).
    """

    schedule: str
    sender: str
    due_ms: int
    due: str
    delivered_at_ms: int
    message_id: str
    outcome: str | msgspec.UnsetType = msgspec.UNSET
    run_id: str | msgspec.UnsetType = msgspec.UNSET
    runs: tuple[RunSummary, ...] | msgspec.UnsetType = msgspec.UNSET
    answer: str | msgspec.UnsetType = msgspec.UNSET
    schedule_rows: tuple[dict[str, Any], ...] | msgspec.UnsetType = msgspec.UNSET


class ScheduleState(_Output, frozen=True, kw_only=True):
    """One of the agent's schedules when a ``wait`` step ended."""

    name: str
    source: str
    delivered: int
    last_due_ms: int | msgspec.UnsetType = msgspec.UNSET
    next_due_ms: int | msgspec.UnsetType = msgspec.UNSET


class StepResult(_Output, frozen=True, kw_only=True):
    """One input step. ``restart`` and ``crash`` steps carry only ``index`` and ``kind``.

    Attributes:
        index: the step's 0-based position in ``turns``.
        kind: the step's kind.
        run_id: the last run the step ran (absent when it ran none).
        outcome: the turn's state when the step ended: ``answered``, ``halted``, ``paused`` or
            ``held``.
        answer_status: for ``resume`` steps, as the API answers: ``accepted``, ``re-asked``
            (a refused time answer: the question stays open, the step runs nothing) or
            ``unsettled`` (a refused time answer past ``maxAnswerRepeats``).
        runs: every run the step ran, in order.
        answer: the final answer, only when answered.
        cost: what the turn's runs cost so far, for an agent with pricing
            (docs/cost.md#figures).
        halted: ``{errorKind, error}`` of a turn a budget or a permission rule halted.
        compactions: every window record of the step's turn so far, all its runs (wire shape).
        findings_ledger: basis, standing and conflict rows the step added.
        permissions: the permission decisions the step added, when it added any
            (docs/permissions.md#decision-rows).
        time_rows: time rows the step added (``clock``, ``time-reading``, ``time-answer``,
            ``call-window``, ``call``; docs/time.md#row-kinds), oldest first.
        schedule_rows: ``schedule`` rows the step added (``scheduleWakeup`` calls), when any.
        recall_rows: ``recall`` rows the step added (``recall`` calls), when any.
        clock_ms: for ``wait`` steps, the virtual clock when the step ended.
        deliveries: for ``wait`` steps, every due instant delivered, in order, with its turn.
        schedules: for ``wait`` steps, the agent's schedules when the step ended, by name.
    """

    index: int
    kind: str
    run_id: str | msgspec.UnsetType = msgspec.UNSET
    outcome: str | msgspec.UnsetType = msgspec.UNSET
    answer_status: str | msgspec.UnsetType = msgspec.UNSET
    runs: tuple[RunSummary, ...] | msgspec.UnsetType = msgspec.UNSET
    answer: str | msgspec.UnsetType = msgspec.UNSET
    cost: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    halted: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    compactions: tuple[dict[str, Any], ...] | msgspec.UnsetType = msgspec.UNSET
    findings_ledger: tuple[dict[str, Any], ...] | msgspec.UnsetType = msgspec.UNSET
    permissions: tuple[dict[str, Any], ...] | msgspec.UnsetType = msgspec.UNSET
    time_rows: tuple[dict[str, Any], ...] | msgspec.UnsetType = msgspec.UNSET
    schedule_rows: tuple[dict[str, Any], ...] | msgspec.UnsetType = msgspec.UNSET
    recall_rows: tuple[dict[str, Any], ...] | msgspec.UnsetType = msgspec.UNSET
    clock_ms: int | msgspec.UnsetType = msgspec.UNSET
    deliveries: tuple[DeliveryView, ...] | msgspec.UnsetType = msgspec.UNSET
    schedules: tuple[ScheduleState, ...] | msgspec.UnsetType = msgspec.UNSET


class RequestView(_Output, frozen=True, kw_only=True):
    """A request as the scripted model received it (docs/loop.md#the-model-port, wire form).

    ``system`` is the composed system text; ``messages`` end with the request-only lines.
    """

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...]
    model: str

    @classmethod
    def of(cls, request: ModelRequest) -> RequestView:
        """The view of one received request."""
        return cls(
            system=request.system,
            messages=request.messages,
            tools=request.tools,
            model=request.model,
        )


class ReplyView(_Output, frozen=True, kw_only=True):
    """A scripted reply as the model answered it."""

    content: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage | msgspec.UnsetType = msgspec.UNSET


class ErrorBody(_Output, frozen=True, kw_only=True):
    """A scripted failure: HTTP status and message."""

    status: int
    message: str


class ErrorView(_Output, frozen=True, kw_only=True):
    """A scripted failure as a call's response: ``{"error": {status, message}}``."""

    error: ErrorBody


class FragmentView(_Output, frozen=True, kw_only=True):
    """One fragment of a streamed reply as the loop emitted it (a ``model.delta`` payload
    without its epoch, attempt and index, which the list and its call give)."""

    text: str | msgspec.UnsetType = msgspec.UNSET
    tool_call_index: int | msgspec.UnsetType = msgspec.UNSET
    tool_call_id: str | msgspec.UnsetType = msgspec.UNSET
    tool_name: str | msgspec.UnsetType = msgspec.UNSET
    arguments: str | msgspec.UnsetType = msgspec.UNSET


class ModelCall(_Output, frozen=True, kw_only=True):
    """One send to the main model.

    Attributes:
        seq: 1-based over the whole scenario.
        turn: the 0-based index of the input step that sent it.
        run_id: the run whose receipt the send carries.
        epoch: the receipt's epoch (the iteration).
        agent_call: the receipt's agent-wide model-call number.
        attempt: 1-based send of that receipt (in-stage retries count up).
        clock_ms: the virtual clock when the model answered (after ``modelCallStepMs``).
        request: what the scripted model received.
        response: the scripted reply or error; ``None`` when a ``send`` or ``mid-stream`` crash
            cut the send.
        fragments: a streamed reply's fragments in the order the loop emitted them as
            ``model.delta`` events (those before the cut, for a ``mid-stream`` crash); left out
            for a reply that is not streamed.
    """

    seq: int
    turn: int
    run_id: str
    epoch: int
    agent_call: int
    attempt: int
    clock_ms: int
    request: RequestView
    response: ReplyView | ErrorView | None
    fragments: list[FragmentView] | msgspec.UnsetType = msgspec.UNSET


class SummarizerCall(_Output, frozen=True, kw_only=True):
    """One summarizer send (never retried, docs/window.md#summarize-oldest)."""

    seq: int
    turn: int
    run_id: str
    iteration: int
    clock_ms: int
    request: RequestView
    response: ReplyView | ErrorView


class ToolExecution(_Output, frozen=True, kw_only=True):
    """One execution of a scripted tool function.

    ``call_number`` counts the tool's executions (1-based), which is also the position of the
    scripted result it took. ``result`` is the text it returned, ``{"error": text}`` when it
    raised, ``{"pause": {"question": text}}`` when it asked the person (``ctx.ask_person``), or
    ``None`` when it never returned (a crash, or cancelled at its time limit).
    """

    turn: int
    tool: str
    call_number: int
    tool_call_id: str
    args: dict[str, Any]
    result: Any


class ScenarioResult(_Output, frozen=True, kw_only=True):
    """The result of one scenario (``"format": "afp-scenario-result/1"``)."""

    format: str
    name: str
    turns: tuple[StepResult, ...]
    model_calls: tuple[ModelCall, ...]
    summarizer_calls: tuple[SummarizerCall, ...]
    tool_executions: tuple[ToolExecution, ...]
    folded: tuple[FoldedSpan, ...]
    served: tuple[dict[str, Any], ...]


def encode_result(result: ScenarioResult) -> bytes:
    """The result as indented JSON with a final newline: the same result, the same bytes."""
    return msgspec.json.format(msgspec.json.encode(result), indent=2) + b"\n"
