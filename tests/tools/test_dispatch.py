"""Batch dispatch: planning, grouping, running, observations and ordering."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from afp_runtime.errors import ConfigError
from afp_runtime.messages import ToolCall
from afp_runtime.tools import (
    NO_OUTPUT,
    PlannedCall,
    Tool,
    ToolContext,
    ToolOutcome,
    dispatch_groups,
    plan_batch,
    run_batch,
)

OPEN = {"type": "object", "properties": {}}
Fn = Callable[[Any, ToolContext], Any]


def declare(name: str, fn: Fn, **options: Any) -> Tool:
    return Tool(name, f"The {name} tool.", options.pop("schema", OPEN), fn, **options)


def call(name: str, call_id: str | None = None, **args: Any) -> ToolCall:
    return ToolCall(id=call_id or f"call-{name}", name=name, args=args)


def contexts(clock: Any, on_progress: Any = None) -> Callable[[PlannedCall], ToolContext]:
    def context_for(item: PlannedCall) -> ToolContext:
        return ToolContext(
            tool_call_id=item.call.id,
            tool_name=item.call.name,
            agent_id="ops",
            run_id="run-1",
            turn=1,
            iteration=1,
            clock=clock,
            on_progress=on_progress,
        )

    return context_for


async def run(
    clock: Any,
    calls: Sequence[ToolCall],
    tools: Sequence[Tool],
    *,
    autojump: bool = True,
    **options: Any,
) -> tuple[ToolOutcome, ...]:
    planned = plan_batch(calls, {t.name: t for t in tools})
    if not autojump:
        return await run_batch(planned, context_for=contexts(clock), clock=clock, **options)
    async with clock.autojump():
        return await run_batch(planned, context_for=contexts(clock), clock=clock, **options)


def returning(value: Any) -> Fn:
    async def fn(args: Mapping[str, Any], ctx: ToolContext) -> Any:
        return value

    return fn


class Recorder:
    """Records tool starts and ends with the virtual time, and the hook calls."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.events: list[tuple[str, str]] = []
        self.finished: list[tuple[str, int]] = []
        self.ran: list[str] = []

    def sleeper(self, seconds: float) -> Fn:
        async def fn(args: Mapping[str, Any], ctx: ToolContext) -> str:
            self.ran.append(ctx.tool_call_id)
            self.events.append(("start", ctx.tool_call_id))
            await ctx.clock.sleep(seconds)
            self.events.append(("end", ctx.tool_call_id))
            return f"{ctx.tool_call_id} slept {seconds}"

        return fn

    async def on_finished(self, outcome: ToolOutcome, index: int) -> None:
        self.finished.append((outcome.tool_call_id, index))


class TestPlanning:
    async def test_unknown_tool_names_the_available_tools(self, clock: Any) -> None:
        """A call to an unknown name gets unknown-tool naming every available tool, not run."""
        tools = {"ping": declare("ping", returning("x")), "dig": declare("dig", returning("y"))}
        (planned,) = plan_batch([call("nmap")], tools)
        assert not planned.runnable
        outcome = planned.outcome
        assert outcome is not None
        assert outcome.status == "unknown-tool"
        assert outcome.not_dispatched
        assert '"nmap"' in outcome.content
        assert "dig, ping" in outcome.content

    async def test_args_text_is_invalid_args_and_not_run(self, clock: Any) -> None:
        """Arguments that did not parse (argsText `{oops`) give invalid-args, not run."""
        recorder = Recorder(clock)
        bad = ToolCall(id="c1", name="ping", args_text="{oops")
        (outcome,) = await run(clock, [bad], [declare("ping", recorder.sleeper(0))])
        assert outcome.status == "invalid-args"
        assert outcome.not_dispatched
        assert outcome.duration_ms is None
        assert "JSON object" in outcome.content
        assert recorder.ran == []

    async def test_schema_problems_are_invalid_args_naming_each_path(self, clock: Any) -> None:
        """Arguments failing the schema give invalid-args naming each failing path; not run."""
        recorder = Recorder(clock)
        schema = {
            "type": "object",
            "properties": {"host": {"type": "string"}, "port": {"type": "integer"}},
            "required": ["host", "port"],
        }
        ping = declare("ping", recorder.sleeper(0), schema=schema)
        (outcome,) = await run(clock, [call("ping", host=3)], [ping])
        assert outcome.status == "invalid-args"
        assert "host: expected string, got integer 3" in outcome.content
        assert "port: required property missing" in outcome.content
        assert recorder.ran == []

    async def test_struct_tool_receives_the_decoded_struct(self, clock: Any) -> None:
        """A from_struct tool receives its arguments decoded into the struct."""

        class Target(msgspec.Struct, rename="camel"):
            host_name: str
            port: int = 22

        async def connect(args: Target, ctx: ToolContext) -> str:
            return f"{args.host_name}:{args.port}"

        tool = Tool.from_struct("connect", "Connect.", Target, connect)
        (outcome,) = await run(clock, [call("connect", hostName="db")], [tool])
        assert (outcome.status, outcome.content) == ("ok", "db:22")

    async def test_struct_decoding_failure_is_invalid_args(self, clock: Any) -> None:
        """A value the schema subset lets through but the struct refuses gives invalid-args."""

        class Choice(msgspec.Struct):
            pick: int | str

        tool = Tool.from_struct("choose", "Choose.", Choice, returning("chosen"))
        (outcome,) = await run(clock, [call("choose", pick=[1])], [tool])
        assert outcome.status == "invalid-args"
        assert "pick:" in outcome.content

    async def test_tool_gets_a_private_copy_of_the_arguments(self, clock: Any) -> None:
        """A tool that edits its arguments does not edit the recorded call."""

        async def meddle(args: dict[str, Any], ctx: ToolContext) -> str:
            args["hosts"].append("evil")
            return "done"

        original = call("meddle", hosts=["a"])
        await run(clock, [original], [declare("meddle", meddle)])
        assert original.args == {"hosts": ["a"]}

    async def test_arguments_json_cannot_hold_are_invalid(self, clock: Any) -> None:
        """A call built in code with non-JSON argument values gives invalid-args, not run."""
        recorder = Recorder(clock)
        odd = ToolCall(id="c1", name="ping", args={"when": object()})
        (outcome,) = await run(clock, [odd], [declare("ping", recorder.sleeper(0))])
        assert outcome.status == "invalid-args"
        assert "not JSON" in outcome.content
        assert recorder.ran == []

    async def test_message_carries_the_marker(self, clock: Any) -> None:
        """An outcome's message is a tool message answering the call, marked when not run."""
        (planned,) = plan_batch([call("nope", "c9")], {})
        assert planned.outcome is not None
        message = planned.outcome.message()
        assert (message.role, message.tool_call_id, message.tool_name) == ("tool", "c9", "nope")
        assert message.not_dispatched
        assert message.content == planned.outcome.content
        assert "No tools are available" in message.content


class TestOutcome:
    def test_not_dispatched_follows_the_status(self) -> None:
        """not_dispatched is derived from the status whatever value is passed in."""
        declined = ToolOutcome(
            tool_call_id="c", tool_name="t", status="declined", content="x", result_chars=1
        )
        ran = ToolOutcome(
            tool_call_id="c",
            tool_name="t",
            status="error",
            content="x",
            result_chars=1,
            not_dispatched=True,
        )
        assert declined.not_dispatched
        assert not ran.not_dispatched

    def test_wire_names_are_camel_case_and_defaults_omitted(self) -> None:
        """An outcome encodes with camelCase names and without default values."""
        outcome = ToolOutcome(
            tool_call_id="c", tool_name="t", status="refused", content="no", result_chars=2
        )
        assert msgspec.json.decode(msgspec.json.encode(outcome)) == {
            "toolCallId": "c",
            "toolName": "t",
            "status": "refused",
            "content": "no",
            "resultChars": 2,
            "notDispatched": True,
        }


class TestObservations:
    async def test_raising_tool_gives_an_error_observation(
        self, clock: Any, logs: list[dict[str, Any]]
    ) -> None:
        """A raising tool gives `error` naming tool, ValueError and message, never a traceback."""

        async def route(args: Mapping[str, Any], ctx: ToolContext) -> str:
            raise ValueError("no route to host 10.0.0.9")

        (outcome,) = await run(clock, [call("route")], [declare("route", route)])
        assert outcome.status == "error"
        assert not outcome.not_dispatched
        assert '"route"' in outcome.content
        assert "ValueError" in outcome.content
        assert "no route" in outcome.content
        assert "Traceback" not in outcome.content
        (entry,) = [e for e in logs if e["event"] == "tool.failed"]
        assert isinstance(entry["exc_info"], ValueError)
        assert entry["log_level"] == "warning"

    async def test_error_message_is_cut_to_2000_code_points(self, clock: Any) -> None:
        """An exception message longer than 2,000 code points is cut in the observation."""

        async def loud(args: Mapping[str, Any], ctx: ToolContext) -> str:
            raise RuntimeError("é" * 2_500)

        (outcome,) = await run(clock, [call("loud")], [declare("loud", loud)])
        assert "é" * 2_000 in outcome.content
        assert "é" * 2_001 not in outcome.content

    async def test_tool_own_timeout_error_is_an_error(self, clock: Any) -> None:
        """A TimeoutError raised by the tool itself is an error, not the dispatcher's timeout."""

        async def upstream(args: Mapping[str, Any], ctx: ToolContext) -> str:
            raise TimeoutError("upstream slow")

        (outcome,) = await run(clock, [call("upstream")], [declare("upstream", upstream)])
        assert outcome.status == "error"
        assert "TimeoutError: upstream slow" in outcome.content

    async def test_timeout_on_the_virtual_clock(self, clock: Any) -> None:
        """A tool sleeping 1 s of virtual time under a 0.05 s limit times out without waiting."""
        recorder = Recorder(clock)
        slow = declare("slow", recorder.sleeper(1.0), timeout_s=0.05)
        real_start = time.monotonic()
        (outcome,) = await run(clock, [call("slow")], [slow])
        assert time.monotonic() - real_start < 0.5
        assert outcome.status == "timeout"
        assert not outcome.not_dispatched
        assert outcome.duration_ms == 50
        assert "0.05 s" in outcome.content
        assert "unknown" in outcome.content
        assert recorder.events == [("start", "call-slow")]

    async def test_duration_is_measured_on_the_clock(self, clock: Any) -> None:
        """duration_ms is the virtual time the call took."""
        recorder = Recorder(clock)
        (outcome,) = await run(clock, [call("nap")], [declare("nap", recorder.sleeper(2.5))])
        assert (outcome.status, outcome.duration_ms) == ("ok", 2_500)

    async def test_long_result_is_truncated(self, clock: Any) -> None:
        """A 10,000-code-point result under a 1,000 cap keeps its first 1,000 plus a note."""
        text = "🙂" + "abcdefghij" * 999 + "xyzxyzxyz"
        assert len(text) == 10_000
        tool = declare("big", returning(text), max_result_chars=1_000)
        (outcome,) = await run(clock, [call("big")], [tool])
        assert outcome.status == "ok"
        assert outcome.truncated
        assert outcome.result_chars == 10_000
        assert outcome.content.startswith(text[:1_000])
        assert not outcome.content.startswith(text[:1_001])
        assert "10,000" in outcome.content[1_000:]

    async def test_result_at_the_cap_is_kept_whole(self, clock: Any) -> None:
        """A result exactly max_result_chars long is not cut."""
        tool = declare("fit", returning("🙂" * 10), max_result_chars=10)
        (outcome,) = await run(clock, [call("fit")], [tool])
        assert (outcome.content, outcome.truncated, outcome.result_chars) == ("🙂" * 10, False, 10)

    async def test_none_result_gives_the_no_output_note(self, clock: Any) -> None:
        """A tool returning None gives an ok observation saying it produced no output."""
        (outcome,) = await run(clock, [call("quiet")], [declare("quiet", returning(None))])
        assert (outcome.status, outcome.content) == ("ok", NO_OUTPUT)

    async def test_dict_result_is_json_text(self, clock: Any) -> None:
        """A dict result becomes its JSON text, non-ASCII kept as is."""
        value = {"host": "db", "up": True, "load": [0.5, 1], "note": "café", "none": None}
        (outcome,) = await run(clock, [call("stat")], [declare("stat", returning(value))])
        assert outcome.status == "ok"
        assert outcome.content == '{"host":"db","up":true,"load":[0.5,1],"note":"café","none":null}'

    async def test_struct_result_is_json_text(self, clock: Any) -> None:
        """A msgspec Struct result is encoded by msgspec."""

        class Reading(msgspec.Struct):
            value: int

        (outcome,) = await run(clock, [call("read")], [declare("read", returning(Reading(7)))])
        assert (outcome.status, outcome.content) == ("ok", '{"value":7}')

    @pytest.mark.parametrize(
        ("value", "type_name"),
        [
            (b"\x00\x01", "bytes"),
            ({"blob": bytearray(b"x")}, "bytearray"),
            (float("nan"), "float"),
            ([1.0, float("inf")], "float"),
            (object(), "object"),
            ("bad \ud800 text", "str"),
        ],
    )
    async def test_unencodable_results(self, clock: Any, value: Any, type_name: str) -> None:
        """bytes, NaN, infinities, lone surrogates and plain objects give `unencodable`."""
        (outcome,) = await run(clock, [call("odd")], [declare("odd", returning(value))])
        assert outcome.status == "unencodable"
        assert not outcome.not_dispatched
        assert type_name in outcome.content
        assert outcome.message().content == outcome.content


class TestGrouping:
    def test_groups_follow_parallel_runs_and_barriers(self) -> None:
        """Consecutive parallel-safe calls group; a serial call stands alone; unrun calls vanish."""
        par = declare("par", returning("p"), parallel_safe=True)
        ser = declare("ser", returning("s"))
        tools = {"par": par, "ser": ser}
        calls = [
            call("par", "p1"),
            call("par", "p2"),
            call("ser", "s1"),
            call("ser", "s2"),
            call("par", "p3"),
            call("nope", "u1"),
            call("par", "p4"),
        ]
        groups = dispatch_groups(plan_batch(calls, tools))
        assert [[p.call.id for p in g] for g in groups] == [
            ["p1", "p2"],
            ["s1"],
            ["s2"],
            ["p3", "p4"],
        ]


class TestRunning:
    async def test_concurrent_calls_finish_in_completion_order(self, clock: Any) -> None:
        """Parallel a, b, c finishing b, c, a are reported b, c, a and returned a, b, c."""
        recorder = Recorder(clock)
        tools = [
            declare("a", recorder.sleeper(3), parallel_safe=True),
            declare("b", recorder.sleeper(1), parallel_safe=True),
            declare("c", recorder.sleeper(2), parallel_safe=True),
        ]
        calls = [call("a"), call("b"), call("c")]
        outcomes = await run(clock, calls, tools, on_call_finished=recorder.on_finished)
        assert [o.tool_call_id for o in outcomes] == ["call-a", "call-b", "call-c"]
        assert [o.status for o in outcomes] == ["ok", "ok", "ok"]
        assert recorder.finished == [("call-b", 1), ("call-c", 2), ("call-a", 0)]
        assert [kind for kind, _ in recorder.events[:3]] == ["start", "start", "start"]

    async def test_serial_call_is_a_barrier(self, clock: Any) -> None:
        """In [parallel a1, serial b1, parallel a2], b1 starts after a1 ends and a2 after b1."""
        recorder = Recorder(clock)
        tools = [
            declare("a", recorder.sleeper(1), parallel_safe=True),
            declare("b", recorder.sleeper(1)),
        ]
        calls = [call("a", "a1"), call("b", "b1"), call("a", "a2")]
        await run(clock, calls, tools)
        assert recorder.events == [
            ("start", "a1"),
            ("end", "a1"),
            ("start", "b1"),
            ("end", "b1"),
            ("start", "a2"),
            ("end", "a2"),
        ]

    async def test_max_concurrent_bounds_a_group(self, clock: Any) -> None:
        """No more than max_concurrent calls of a group run at once."""
        running = 0
        peak = 0

        async def busy(args: Mapping[str, Any], ctx: ToolContext) -> str:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await ctx.clock.sleep(1)
            running -= 1
            return "ok"

        tool = declare("busy", busy, parallel_safe=True)
        calls = [call("busy", f"c{i}") for i in range(5)]
        start = clock.now_ms()
        outcomes = await run(clock, calls, [tool], max_concurrent=2)
        assert peak == 2
        assert clock.now_ms() - start == 3_000
        assert [o.status for o in outcomes] == ["ok"] * 5

    async def test_bad_max_concurrent_is_refused(self, clock: Any) -> None:
        """max_concurrent must be an int >= 1."""
        with pytest.raises(ConfigError):
            await run(clock, [], [], autojump=False, max_concurrent=0)

    async def test_group_start_is_awaited_before_its_calls(self, clock: Any) -> None:
        """on_group_start receives each group before any call of that group runs."""
        recorder = Recorder(clock)

        async def on_group_start(group: list[PlannedCall]) -> None:
            recorder.events.append(("group", ",".join(p.call.id for p in group)))

        tools = [
            declare("a", recorder.sleeper(1), parallel_safe=True),
            declare("b", recorder.sleeper(1)),
        ]
        calls = [call("a", "a1"), call("a", "a2"), call("b", "b1")]
        await run(clock, calls, tools, on_group_start=on_group_start)
        assert recorder.events[0] == ("group", "a1,a2")
        assert recorder.events.index(("group", "b1")) == recorder.events.index(("end", "a2")) + 1
        assert recorder.events[-2:] == [("start", "b1"), ("end", "b1")]

    async def test_call_started_reports_index_size_and_concurrency(self, clock: Any) -> None:
        """on_call_started gets each call's position, the batch size and whether it is grouped."""
        seen: list[tuple[str, int, int, bool]] = []

        def on_call_started(item: PlannedCall, index: int, size: int, concurrent: bool) -> None:
            seen.append((item.call.id, index, size, concurrent))

        tools = [
            declare("p", returning("p"), parallel_safe=True),
            declare("s", returning("s")),
        ]
        calls = [call("s", "s1"), call("x", "x1"), call("p", "p1"), call("p", "p2")]
        await run(clock, calls, tools, on_call_started=on_call_started)
        assert sorted(seen) == [("p1", 2, 4, True), ("p2", 3, 4, True), ("s1", 0, 4, False)]

    async def test_pre_decided_outcomes_keep_their_place(self, clock: Any) -> None:
        """Unknown and invalid calls keep their place in the result and never reach the hooks."""
        recorder = Recorder(clock)
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        tools = [declare("t", recorder.sleeper(1), schema=schema)]
        calls = [call("zzz", "u"), call("t", "ok1"), call("t", "bad", n="x")]
        outcomes = await run(clock, calls, tools, on_call_finished=recorder.on_finished)
        assert [(o.tool_call_id, o.status) for o in outcomes] == [
            ("u", "unknown-tool"),
            ("ok1", "ok"),
            ("bad", "invalid-args"),
        ]
        assert recorder.finished == [("ok1", 1)]

    async def test_sync_tool_runs_in_a_worker_thread(self, clock: Any) -> None:
        """A plain def tool runs off the event-loop thread and its progress reaches the loop."""
        loop_thread = threading.get_ident()
        progress: list[tuple[Any, int]] = []

        def on_progress(payload: Any) -> None:
            progress.append((payload, threading.get_ident()))

        def blocking(args: Mapping[str, Any], ctx: ToolContext) -> dict[str, int]:
            time.sleep(0.001)  # would fail the test on the event loop (blockbuster)
            ctx.progress("half")
            return {"thread": threading.get_ident()}

        tool = declare("blocking", blocking)
        planned = plan_batch([call("blocking")], {"blocking": tool})
        (outcome,) = await run_batch(planned, context_for=contexts(clock, on_progress), clock=clock)
        assert outcome.status == "ok"
        assert msgspec.json.decode(outcome.content)["thread"] != loop_thread
        assert progress == [("half", loop_thread)]

    async def test_sync_tool_timeout_discards_its_result(self, clock: Any) -> None:
        """A sync tool past its limit times out at once; its thread's late result is dropped."""
        release = threading.Event()

        def stuck(args: Mapping[str, Any], ctx: ToolContext) -> str:
            release.wait(10)
            return "late"

        tool = declare("stuck", stuck, timeout_s=1)
        planned = plan_batch([call("stuck")], {"stuck": tool})
        returned: list[tuple[ToolOutcome, ...]] = []

        async def batch() -> None:
            returned.append(await run_batch(planned, context_for=contexts(clock), clock=clock))

        try:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(batch)
                await anyio.wait_all_tasks_blocked()  # the call now waits for its thread
                clock.advance(1)
        finally:
            release.set()
        ((outcome,),) = returned
        assert (outcome.status, outcome.duration_ms) == ("timeout", 1_000)
        assert "late" not in outcome.content

    async def test_hook_failure_propagates_unwrapped(self, clock: Any) -> None:
        """An exception raised by a hook in a concurrent group comes out as itself."""

        failures: list[int] = []

        async def on_finished(outcome: ToolOutcome, index: int) -> None:
            if not failures:
                failures.append(index)
                raise LookupError("store is gone")

        tool = declare("p", returning("p"), parallel_safe=True)
        calls = [call("p", "1"), call("p", "2")]
        with pytest.raises(LookupError, match="store is gone"):
            await run(clock, calls, [tool], autojump=False, on_call_finished=on_finished)

    async def test_cancellation_propagates(self, clock: Any) -> None:
        """Cancelling the batch (shutdown) cancels the running tool and returns no outcomes."""
        started = anyio.Event()
        finished: list[ToolOutcome] = []
        returned: list[Any] = []

        async def forever(args: Mapping[str, Any], ctx: ToolContext) -> str:
            started.set()
            await anyio.sleep_forever()
            return "never"

        async def on_finished(outcome: ToolOutcome, index: int) -> None:
            finished.append(outcome)

        planned = plan_batch([call("forever")], {"forever": declare("forever", forever)})

        async def batch() -> None:
            returned.append(
                await run_batch(
                    planned,
                    context_for=contexts(clock),
                    clock=clock,
                    on_call_finished=on_finished,
                )
            )

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(batch)
            await started.wait()
            task_group.cancel_scope.cancel()
        assert task_group.cancel_scope.cancelled_caught
        assert (finished, returned) == ([], [])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sleeps=st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=8),
    parallel=st.lists(st.booleans(), min_size=8, max_size=8),
    limit=st.integers(min_value=1, max_value=4),
)
@example(sleeps=[3, 1, 2], parallel=[True] * 8, limit=4)
async def test_outcomes_are_in_call_order_whatever_the_completion_order(
    make_clock: Any, sleeps: list[int], parallel: list[bool], limit: int
) -> None:
    """run_batch returns exactly one outcome per call, in call order, however calls finish."""
    clock = make_clock()
    recorder = Recorder(clock)
    tools = []
    calls = []
    for index, seconds in enumerate(sleeps):
        name = f"t{index}"
        tools.append(declare(name, recorder.sleeper(seconds), parallel_safe=parallel[index]))
        calls.append(call(name))
    outcomes = await run(
        clock, calls, tools, max_concurrent=limit, on_call_finished=recorder.on_finished
    )
    assert [o.tool_call_id for o in outcomes] == [c.id for c in calls]
    assert [o.status for o in outcomes] == ["ok"] * len(calls)
    assert sorted(index for _, index in recorder.finished) == list(range(len(calls)))
