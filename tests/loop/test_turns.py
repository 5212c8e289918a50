"""Turns end to end on a real store: stage order and ids, routes, budget, usage, continuing."""

from __future__ import annotations

import msgspec

from afp_runtime.messages import Usage
from afp_runtime.records import BudgetExhausted, ModelEnded, ToolEnded, ToolStarted, TurnEnded
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.window.texts import WRAP_UP_TEXT

from .conftest import Harness


def stage_ids(bundles: list) -> list[str]:
    return [b.runtime_stage_id for b in bundles]


async def test_stage_order_and_ids(harness: Harness) -> None:
    """One tool call then an answer commits seed#0 … final#10 with seq equal to the index."""
    driver = harness.driver([tool_reply(call("c1", "alpha_tool")), answer("done")])
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    bundles = await harness.store.bundles(outcome.run_id)
    assert stage_ids(bundles) == [
        "seed#0",
        "window#1",
        "context#2",
        "receipt#3",
        "call-model#4",
        "tool-calls#5",
        "window#6",
        "context#7",
        "receipt#8",
        "call-model#9",
        "final#10",
    ]
    assert [b.seq for b in bundles] == list(range(11))
    receipt = next(w["value"] for w in bundles[3].writes if w["key"] == "receipt")
    assert receipt["callRuntimeStageId"] == "call-model#4"
    history = (await harness.store.load_conversation("ops")).history
    assert [(m.role, m.content) for m in history] == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", "alpha_tool did c1"),
        ("assistant", "done"),
    ]
    assert history[1].tool_calls[0].id == "c1" and history[2].tool_call_id == "c1"
    [ended] = harness.recorder.of_type(TurnEnded)
    assert isinstance(ended.payload, TurnEnded) and ended.payload.status == "answered"
    assert ended.payload.iterations == 2 and ended.payload.epochs == 2


async def test_window_stage_is_a_no_op(harness: Harness) -> None:
    """Without a strategy the window bundles carry no writes."""
    driver = harness.driver([tool_reply(call("c1", "alpha_tool")), answer("done")])
    await driver.post("go")
    [outcome] = await harness.work(driver)
    bundles = await harness.store.bundles(outcome.run_id)
    windows = [b for b in bundles if b.stage == "window"]
    assert len(windows) == 2 and all(b.writes == [] for b in windows)


async def test_wrap_up_when_budget_runs_out(harness: Harness) -> None:
    """At max_iterations with calls pending, one more call is made with tools withheld."""
    replies = [tool_reply(call(f"a{i}", "alpha_tool")) for i in range(2)] + [answer("best I can")]
    driver = harness.driver(replies, max_iterations=2)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    bundles = await harness.store.bundles(outcome.run_id)
    assert stage_ids(bundles)[9:] == [
        "call-model#9",
        "wrap-up#10",
        "window#11",
        "context#12",
        "receipt#13",
        "call-model#14",
        "final#15",
    ]
    assert harness.model.calls == 3
    third = harness.model.requests[2]
    assert third.tools == ()
    assert third.messages[-1].content == WRAP_UP_TEXT
    wrap = {w["key"]: w["value"] for w in bundles[10].writes}
    assert wrap["stoppedEarly"] == {
        "reason": "max-iterations",
        "iteration": 2,
        "pendingToolCalls": 1,
        "answerWasEmpty": True,
        "wrappedUp": True,
    }
    history = (await harness.store.load_conversation("ops")).history
    assert all(m.content != WRAP_UP_TEXT for m in history)
    assert not any(c.id == "a1" for m in history for c in m.tool_calls)
    [exhausted] = harness.recorder.of_type(BudgetExhausted)
    assert isinstance(exhausted.payload, BudgetExhausted)
    assert exhausted.payload.action == "wrap-up"
    receipt = next(w["value"] for w in bundles[13].writes if w["key"] == "receipt")
    assert receipt["tools"]["withheld"] == "wrap-up"


async def test_wrap_up_disabled_cuts_short(harness: Harness) -> None:
    """With wrap_up=False the turn ends with the reply's text right after the last call."""
    replies = [
        tool_reply(call("a0", "alpha_tool")),
        tool_reply(call("a1", "alpha_tool"), content="partial"),
    ]
    driver = harness.driver(replies, max_iterations=2, wrap_up=False)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    bundles = await harness.store.bundles(outcome.run_id)
    assert stage_ids(bundles)[-2:] == ["call-model#9", "final#10"]
    assert outcome.final_answer == "partial"
    assert harness.model.calls == 2
    [exhausted] = harness.recorder.of_type(BudgetExhausted)
    assert isinstance(exhausted.payload, BudgetExhausted)
    assert exhausted.payload.action == "cut-short"


async def test_tool_calls_on_the_wrap_up_call_are_ignored(harness: Harness) -> None:
    """Calls on the wrap-up call are recorded on final and never dispatched."""
    replies = [
        tool_reply(call("a0", "alpha_tool")),
        tool_reply(call("a1", "alpha_tool")),
        tool_reply(call("a2", "alpha_tool"), content="stop"),
    ]
    driver = harness.driver(replies, max_iterations=2)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    final = (await harness.store.bundles(outcome.run_id))[-1]
    writes = {w["key"]: w["value"] for w in final.writes}
    assert writes["ignoredToolCalls"] == [{"toolCallId": "a2", "toolName": "alpha_tool"}]
    assert "a2" not in harness.invocations
    started = [p.tool_call_id for p in harness.recorder.payloads(ToolStarted)]
    assert started == ["a0"]


async def test_tool_error_becomes_an_observation(harness: Harness) -> None:
    """A raising tool gives an error observation and the loop makes the next call."""

    async def boom(args: object, ctx: object) -> str:
        raise ValueError("no route")

    driver = harness.driver(
        [tool_reply(call("b1", "beta_tool")), answer("sorry")], behaviour={"beta_tool": boom}
    )
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.final_answer == "sorry"
    tool_message = harness.model.requests[1].messages[-1]
    assert "beta_tool" in tool_message.content and "ValueError" in tool_message.content
    assert "no route" in tool_message.content and "Traceback" not in tool_message.content
    [ended] = harness.recorder.of_type(ToolEnded)
    assert isinstance(ended.payload, ToolEnded) and ended.payload.status == "error"


async def test_unknown_tool_and_bad_args_are_not_dispatched(harness: Harness) -> None:
    """Unknown names and unparseable args become observations marked not_dispatched."""
    bad = msgspec.structs.replace(call("v", "alpha_tool"), args_text="{oops")
    driver = harness.driver(
        [tool_reply(call("u", "gamma"), bad, call("w", "alpha_tool")), answer("ok")]
    )
    await driver.post("go")
    await harness.work(driver)
    history = (await harness.store.load_conversation("ops")).history
    results = {m.tool_call_id: m for m in history if m.role == "tool"}
    assert results["u"].not_dispatched and "alpha_tool" in results["u"].content
    assert results["v"].not_dispatched
    assert not results["w"].not_dispatched
    assert history[1].tool_calls[1].args_text == "{oops"
    assert dict(harness.invocations) == {"w": 1}


async def test_usage_per_call_and_per_run(harness: Harness) -> None:
    """Usage is reported per call, summed per run and added to the lifetime totals."""
    driver = harness.driver(
        [
            tool_reply(call("c1", "alpha_tool"), usage=Usage(input=100, output=7)),
            answer("done", usage=Usage(input=180, output=12)),
        ]
    )
    await driver.post("go")
    [outcome] = await harness.work(driver)
    ended = harness.recorder.payloads(ModelEnded)
    assert [msgspec.to_builtins(p.usage) for p in ended] == [
        {"input": 100, "output": 7},
        {"input": 180, "output": 12},
    ]
    assert outcome.usage == Usage(input=280, output=19)
    state = await harness.store.conversation_state("ops")
    assert state.usage_totals == Usage(input=280, output=19) and state.model_calls == 2


async def test_second_message_continues_the_conversation(harness: Harness) -> None:
    """A second message starts turn 2 at iteration 1 with turn 1's messages in history."""
    driver = harness.driver([tool_reply(call("c1", "alpha_tool")), answer("done"), answer("more")])
    await driver.post("go")
    await driver.post("and now?")
    first, second = await harness.work(driver)
    assert (first.run_id, second.run_id) == ("run-1", "run-2")
    assert second.turn == 2
    seed = (await harness.store.bundles("run-2"))[0]
    writes = {w["key"]: w["value"] for w in seed.writes}
    assert writes["turn"] == 2 and writes["iteration"] == 1
    assert harness.model.requests[2].messages[-1].content == "and now?"
    assert len(harness.model.requests[2].messages) == 5


async def test_conversation_continues_from_a_fresh_process(harness: Harness) -> None:
    """After reopening the store, the next turn re-sends everything committed before."""
    driver = harness.driver([answer("one")])
    await driver.post("first")
    await harness.work(driver)
    await harness.restart()
    driver = harness.driver([answer("two")])
    await driver.post("second")
    [outcome] = await harness.work(driver)
    assert outcome.turn == 2
    sent = harness.model.requests[0].messages
    assert [(m.role, m.content) for m in sent] == [
        ("user", "first"),
        ("assistant", "one"),
        ("user", "second"),
    ]


async def test_duplicate_tool_call_ids_are_renamed(harness: Harness) -> None:
    """A call id reused in a later turn is renamed consistently in the call and its result."""
    driver = harness.driver(
        [
            tool_reply(call("c1", "alpha_tool")),
            answer("a"),
            tool_reply(call("c1", "alpha_tool")),
            answer("b"),
        ]
    )
    await driver.post("one")
    await driver.post("two")
    await harness.work(driver)
    history = (await harness.store.load_conversation("ops")).history
    call_ids = [c.id for m in history for c in m.tool_calls]
    result_ids = [m.tool_call_id for m in history if m.role == "tool"]
    assert call_ids == ["c1", "c1~2"] and result_ids == ["c1", "c1~2"]


async def test_calls_without_an_id_are_named_by_the_runtime(harness: Harness) -> None:
    """A reply whose calls carry empty ids (a model that sent none) gets ``call``, ``call~2``…
    in the calls and their results, and the turn answers instead of failing on every run."""
    driver = harness.driver(
        [tool_reply(call("", "alpha_tool"), call("", "alpha_tool")), answer("done")]
    )
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered" and outcome.final_answer == "done"
    history = (await harness.store.load_conversation("ops")).history
    call_ids = [c.id for m in history for c in m.tool_calls]
    result_ids = [m.tool_call_id for m in history if m.role == "tool"]
    assert call_ids == ["call", "call~2"] and result_ids == ["call", "call~2"]


async def test_a_nul_in_a_call_id_becomes_a_replacement_character(harness: Harness) -> None:
    """A call id holding U+0000 (which Postgres text cannot key the tool journal by) is
    planned as the same id with U+FFFD, in the call and its result, and the turn answers."""
    driver = harness.driver([tool_reply(call("c\x001", "alpha_tool")), answer("done")])
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    history = (await harness.store.load_conversation("ops")).history
    call_ids = [c.id for m in history for c in m.tool_calls]
    result_ids = [m.tool_call_id for m in history if m.role == "tool"]
    assert call_ids == ["c\ufffd1"] and result_ids == ["c\ufffd1"]
