"""The scripted world around the agent: clock, ids, scripted model and tools, crash points.

It outlives every restart and crash of the host: the replies and tool results are consumed in
order across the whole scenario, the clock and the id factory only move forward, and what the
scripted model and tools received is recorded here for the result.

A simulated crash is a private ``BaseException`` raised at the armed point; the loop commits
nothing more, and the runner drops the host. A scenario error found while the loop runs (the
replies ran out) is raised as another private ``BaseException`` so no ``except Exception`` in
the loop or the window family can turn it into an observation or a refusal.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgspec

from afp_runtime.app import Event, LoopHooks, SequentialIds
from afp_runtime.errors import AfpError, ModelCallError, ScriptExhausted
from afp_runtime.messages import ModelReply, ModelRequest, ToolCall, Usage
from afp_runtime.models import StreamedReply
from afp_runtime.records import IterationStarted, ModelDelta, ReceiptMinted
from afp_runtime.scenario.format import (
    STAGE_POINTS,
    STREAM_POINT,
    CrashStep,
    ReplySpec,
    Scenario,
    SummarizeOldestSpec,
    ToolResultSpec,
)
from afp_runtime.scenario.result import (
    ErrorBody,
    ErrorView,
    FragmentView,
    ModelCall,
    ReplyView,
    RequestView,
    SummarizerCall,
    ToolExecution,
)
from afp_runtime.testing import FakeClock
from afp_runtime.tools import ToolContext, ToolFn

# Real seconds every task must stay blocked before the fake clock jumps: long enough for a
# SQLite commit in a worker thread to finish first, so the jumps do not depend on disk speed.
AUTOJUMP_THRESHOLD_S = 0.02


class Crash(BaseException):
    """The host dies here: nothing after this point runs in this process."""


class Abort(BaseException):
    """The scenario itself is wrong (e.g. its replies ran out); carries the error to raise."""

    def __init__(self, error: AfpError) -> None:
        super().__init__(str(error))
        self.error = error


class ToolError(Exception):
    """What a scripted tool raises for an ``{"error": text}`` result (or no result left)."""


def seconds(ms: int) -> float:
    """``ms`` as seconds, rounded up so the fake clock moves by at least ``ms``."""
    value = ms / 1000
    while value * 1000 < ms:
        value = math.nextafter(value, math.inf)
    return value


def model_error(status: int, message: str, *, provider: str = "scripted") -> ModelCallError:
    """A scripted HTTP failure classified as docs/loop.md#model-call-errors-and-retry does."""
    if status == 429:
        kind, retryable = "rate-limited", True
    elif status >= 500:
        kind, retryable = "server", True
    elif status in (401, 403):
        kind, retryable = "auth", False
    else:
        kind, retryable = "bad-request", False
    return ModelCallError(
        message or f"HTTP {status}",
        error_kind=kind,
        provider=provider,
        status=status,
        retryable=retryable,
    )


def _reply(spec: ReplySpec) -> ModelReply | ModelCallError:
    if spec.error is not None:
        return model_error(spec.error.status, spec.error.message)
    calls = tuple(
        ToolCall(id=c.id, name=c.name, args=dict(c.args), args_text=c.args_text)
        for c in spec.tool_calls or ()
    )
    usage = None
    if spec.usage is not None:
        u = spec.usage
        usage = Usage(
            input=u.input,
            output=u.output,
            cache_read=u.cache_read,
            cache_write=u.cache_write,
            reasoning=u.reasoning,
        )
    return ModelReply(
        content=spec.content or "",
        tool_calls=calls,
        usage=usage,
        stop_reason="tool-calls" if calls else "end",
    )


def _view(spec: ReplySpec, entry: ModelReply | ModelCallError) -> ReplyView | ErrorView:
    if spec.error is not None:
        return ErrorView(error=ErrorBody(status=spec.error.status, message=spec.error.message))
    assert isinstance(entry, ModelReply)
    return ReplyView(
        content=entry.content,
        tool_calls=entry.tool_calls,
        **({"usage": entry.usage} if entry.usage is not None else {}),
    )


class RecordingIds:
    """Sequential run and message ids (``run-1``…, ``msg-1``…) that remember every run id."""

    def __init__(self) -> None:
        self._ids = SequentialIds()
        self.runs: list[str] = []

    def run_id(self) -> str:
        run_id = self._ids.run_id()
        self.runs.append(run_id)
        return run_id

    def message_id(self) -> str:
        return self._ids.message_id()

    def question_id(self) -> str:
        return self._ids.question_id()


@dataclass
class Arm:
    """A crash step waiting for its point."""

    index: int
    spec: CrashStep
    fired: bool = False


@dataclass
class _Execution:
    turn: int
    tool: str
    call_number: int
    tool_call_id: str
    args: Any
    result: Any = None

    def frozen(self) -> ToolExecution:
        return ToolExecution(
            turn=self.turn,
            tool=self.tool,
            call_number=self.call_number,
            tool_call_id=self.tool_call_id,
            args=self.args,
            result=self.result,
        )


def _same_call(live_id: str, wanted: str) -> bool:
    """The loop renames a reused call id ``x1`` to ``x1~2``: both are the call the model sent."""
    if live_id == wanted:
        return True
    base, sep, suffix = live_id.rpartition("~")
    return bool(sep) and base == wanted and suffix.isdigit()


@dataclass
class World:
    """Everything a scenario keeps across restarts of its host."""

    scenario: Scenario
    clock: FakeClock = field(init=False)
    ids: RecordingIds = field(init=False, default_factory=RecordingIds)
    rng: random.Random = field(init=False)
    step: int = 0
    arms: list[Arm] = field(default_factory=list)
    crashed: set[str] = field(default_factory=set)
    model_calls: list[ModelCall] = field(default_factory=list)
    summarizer_calls: list[SummarizerCall] = field(default_factory=list)
    executions: list[_Execution] = field(default_factory=list)
    _replies_used: int = 0
    _summaries_used: int = 0
    _tool_calls: Counter[str] = field(default_factory=Counter)
    _receipt: tuple[str, int, int] | None = None
    _attempt: int = 0
    _visit: tuple[str, int] | None = None
    # The fragments list of the streamed send under way, which the loop's model.delta fill.
    _fragments: list[FragmentView] | None = None

    def __post_init__(self) -> None:
        clock = self.scenario.clock
        self.clock = FakeClock(clock.start_ms, autojump_threshold_s=AUTOJUMP_THRESHOLD_S)
        # The jitter source is seeded from the scenario's name: the same file, the same waits.
        digest = hashlib.sha256(self.scenario.name.encode("utf-8")).digest()
        seed = int.from_bytes(digest[:8], "big")
        self.rng = random.Random(seed)

    # -- the clock ---------------------------------------------------------------------------

    def advance(self, ms: int) -> None:
        """Move the virtual clock forward by ``ms``."""
        if ms > 0:
            self.clock.advance(seconds(ms))

    def advance_to(self, at_ms: int) -> None:
        """Move the virtual clock to ``at_ms`` (never backwards)."""
        self.advance(at_ms - self.clock.now_ms())

    # -- what the loop tells us --------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """The loop's events: which receipt a send carries, which visit a summary serves."""
        if event.run_id is None:
            return
        payload = event.payload
        if isinstance(payload, ReceiptMinted):
            self._receipt = (event.run_id, payload.epoch, payload.agent_call)
            self._attempt = 0
        elif isinstance(payload, IterationStarted):
            self._visit = (event.run_id, payload.iteration)
        elif isinstance(payload, ModelDelta) and self._fragments is not None:
            self._fragments.append(
                FragmentView(
                    text=payload.text,
                    tool_call_index=payload.tool_call_index,
                    tool_call_id=payload.tool_call_id,
                    tool_name=payload.tool_name,
                    arguments=payload.arguments,
                )
            )

    # -- crashes -----------------------------------------------------------------------------

    def _armed(self) -> Arm | None:
        return next((arm for arm in self.arms if not arm.fired), None)

    def armed_at(
        self, point: str, *, iteration: int | None = None, call_id: str | None = None
    ) -> Arm | None:
        """The next armed crash when it names this point (and this call or iteration)."""
        arm = self._armed()
        if arm is None or arm.spec.after != point:
            return None
        wanted = arm.spec
        if wanted.call is not None and (call_id is None or not _same_call(call_id, wanted.call)):
            return None
        if wanted.iteration is not None and iteration != wanted.iteration:
            return None
        return arm

    def hit(self, point: str, *, iteration: int | None = None, call_id: str | None = None) -> bool:
        """Whether the next armed crash names this point (and this call or iteration); if so
        it is spent and the live run is marked crashed."""
        arm = self.armed_at(point, iteration=iteration, call_id=call_id)
        if arm is None:
            return False
        arm.fired = True
        if self.ids.runs:
            # One run is live at a time: the one minted last.
            self.crashed.add(self.ids.runs[-1])
        return True

    def hooks(self) -> LoopHooks:
        """Loop hooks that crash at armed stage and tool-end points."""
        world = self

        class _Hooks(LoopHooks):
            def stops_after(self, stage: str, iteration: int) -> bool:
                # A stage crash point is the boundary of that stage's bundle
                # (docs/scenarios.md#crash-points).
                return (
                    stage in STAGE_POINTS and world.armed_at(stage, iteration=iteration) is not None
                )

            def after_stage(self, stage: str, iteration: int) -> None:
                if stage in STAGE_POINTS and world.hit(stage, iteration=iteration):
                    raise Crash

            def after_tool_finished(self, tool_call_id: str, iteration: int) -> None:
                if world.hit("tool-end", call_id=tool_call_id):
                    raise Crash

        return _Hooks()

    # -- the scripted models -----------------------------------------------------------------

    async def main_send(
        self, request: ModelRequest, number: int
    ) -> ModelReply | ModelCallError | StreamedReply:
        """The scripted main model: the next reply of ``provider.replies`` (streamed when it
        says so, docs/scenarios.md#streamed-replies)."""
        self.advance(self.scenario.clock.model_call_step_ms)
        assert self._receipt is not None, "a send always follows its receipt"
        run_id, epoch, agent_call = self._receipt
        self._attempt += 1
        call = ModelCall(
            seq=len(self.model_calls) + 1,
            turn=self.step,
            run_id=run_id,
            epoch=epoch,
            agent_call=agent_call,
            attempt=self._attempt,
            clock_ms=self.clock.now_ms(),
            request=RequestView.of(request),
            response=None,
        )
        if self.hit("send"):
            # The request left; the process dies before the answer: the reply stays unread.
            self.model_calls.append(call)
            raise Crash
        replies = self.scenario.provider.replies
        if self._replies_used >= len(replies):
            raise Abort(
                ScriptExhausted(
                    f"$.provider.replies: model call {call.seq} (step $.turns[{self.step}]) "
                    f"found no reply left; the scenario holds {len(replies)}",
                    field="$.provider.replies",
                )
            )
        spec = replies[self._replies_used]
        entry = _reply(spec)
        self._fragments = None
        if spec.stream is not None and isinstance(entry, ModelReply):
            return self._streamed(call, spec, entry)
        self._replies_used += 1
        self.model_calls.append(msgspec.structs.replace(call, response=_view(spec, entry)))
        return entry

    def _streamed(self, call: ModelCall, spec: ReplySpec, reply: ModelReply) -> StreamedReply:
        """The reply sent in ``spec.stream``'s fragments, each recorded as the loop emits it. An
        armed ``mid-stream`` crash the stream reaches cuts it after that many fragments: the
        send is recorded without a response and the reply stays unconsumed, as at ``send``."""
        assert spec.stream is not None
        fragments: list[FragmentView] = []
        self._fragments = fragments
        streamed = StreamedReply(reply=reply, sizes=spec.stream.sizes)
        arm = self.armed_at(STREAM_POINT)
        cut = None if arm is None else arm.spec.fragments or 1
        if cut is None or cut >= len(streamed.fragments()):
            self._replies_used += 1
            self.model_calls.append(
                msgspec.structs.replace(call, response=_view(spec, reply), fragments=fragments)
            )
            return streamed
        self.model_calls.append(msgspec.structs.replace(call, fragments=fragments))

        async def crash_at(index: int) -> None:
            if index == cut and self.hit(STREAM_POINT):
                raise Crash

        return msgspec.structs.replace(streamed, pause=crash_at)

    async def summarize(self, request: ModelRequest, number: int) -> ModelReply | ModelCallError:
        """The scripted summarizer: the next reply of ``strategy.summarizer.replies``."""
        self.advance(self.scenario.clock.model_call_step_ms)
        strategy = self.scenario.strategy
        assert isinstance(strategy, SummarizeOldestSpec)
        replies = strategy.summarizer.replies
        seq = len(self.summarizer_calls) + 1
        if self._summaries_used >= len(replies):
            raise Abort(
                ScriptExhausted(
                    f"$.strategy.summarizer.replies: summarizer call {seq} "
                    f"(step $.turns[{self.step}]) found no reply left; the scenario holds "
                    f"{len(replies)}",
                    field="$.strategy.summarizer.replies",
                )
            )
        spec = replies[self._summaries_used]
        self._summaries_used += 1
        entry = _reply(spec)
        assert self._visit is not None, "a summary is asked for during a window visit"
        run_id, iteration = self._visit
        self.summarizer_calls.append(
            SummarizerCall(
                seq=seq,
                turn=self.step,
                run_id=run_id,
                iteration=iteration,
                clock_ms=self.clock.now_ms(),
                request=RequestView.of(request),
                response=_view(spec, entry),
            )
        )
        return entry

    # -- the scripted tools ------------------------------------------------------------------

    def tool_fn(self, index: int) -> ToolFn:
        """The function of ``tools[index]``: its next scripted result, after a virtual sleep."""
        spec = self.scenario.tools[index]

        async def scripted(args: Any, ctx: ToolContext) -> str:
            self._tool_calls[spec.name] += 1
            number = self._tool_calls[spec.name]
            execution = _Execution(
                turn=self.step,
                tool=spec.name,
                call_number=number,
                tool_call_id=ctx.tool_call_id,
                args=args,
            )
            self.executions.append(execution)
            if self.hit("tool-start", call_id=ctx.tool_call_id):
                raise Crash
            result = spec.results[number - 1] if number <= len(spec.results) else None
            delay = self.scenario.clock.tool_step_ms
            if isinstance(result, ToolResultSpec) and result.delay_ms is not None:
                delay = result.delay_ms
            await ctx.clock.sleep(seconds(delay))
            if result is None:
                text = f"the scenario holds no result for call {number} of tool {spec.name!r}"
                execution.result = {"error": text}
                raise ToolError(text)
            if isinstance(result, str):
                execution.result = result
                return result
            if result.error is not None:
                execution.result = {"error": result.error}
                raise ToolError(result.error)
            if result.pause is not None:
                question = result.pause.question
                execution.result = {"pause": {"question": question}}
                try:
                    ctx.ask_person(question)
                except ValueError as exc:
                    # A blank or over-long question: the call fails like any tool error.
                    execution.result = {"error": str(exc)}
                    raise
            assert result.text is not None
            execution.result = result.text
            return result.text

        return scripted
