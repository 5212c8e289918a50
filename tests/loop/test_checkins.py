"""Check-ins (docs/host.md#check-ins): a tool asks the person, or a check_in tool waits for
approval; the turn pauses durably, survives restarts, and an answer run settles the batch.

docs/loop.md#how-this-is-tested cases 6, 20, 21, 22, 23, plus crashes of the answer run, the pause
as a commit point in every durability mode, messages queued while paused, and the pause timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from afp_runtime.agents import Agent, abandon_question, answer_question, validate_answer
from afp_runtime.errors import InvalidAnswer, QuestionClosed
from afp_runtime.loop import AgentDriver, Emitter
from afp_runtime.models import ScriptedModel
from afp_runtime.records import ToolStarted, TurnEnded, TurnPaused
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext

from .conftest import Harness
from .test_recovery import committed_stage, stage_ids


async def ask_which_host(args: Mapping[str, Any], ctx: ToolContext) -> Any:
    ctx.ask_person("which host?")


def writes(bundle: Any) -> dict[str, Any]:
    return {w["key"]: w["value"] for w in bundle.writes}


async def answer_open(harness: Harness, value: Any) -> None:
    [question] = await harness.store.questions("ops", status="open")
    await answer_question(
        harness.store, "ops", question.question_id, value, now_ms=harness.clock.now_ms()
    )


async def test_case_20_pause_survives_a_restart_and_the_answer_completes_the_turn(
    harness: Harness,
) -> None:
    script = [tool_reply(call("c1", "beta_tool")), answer("using db-1")]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host})
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert (outcome.run_id, outcome.status) == ("run-1", "paused")

    bundles = await harness.store.bundles("run-1")
    assert stage_ids(bundles)[-1] == "tool-calls#5"
    pause = writes(bundles[-1])
    assert pause["pendingBatch"] == {"questionIds": ["q-1"], "toolCallIds": ["c1"]}
    assert "iteration" not in pause  # the iteration stays open until the answer's settle
    [question] = await harness.store.questions("ops")
    assert (question.kind, question.prompt, question.status) == ("tool-ask", "which host?", "open")
    assert question.tool_call_ids == ("c1",) and question.run_id == "run-1"
    state = await harness.store.conversation_state("ops")
    assert state.open_turn.status == "paused"
    [run] = await harness.store.runs("ops")
    assert run.status == "paused"
    [row] = await harness.store.inbox("ops")
    assert row.status == "paused"
    assert harness.recorder.payloads(TurnPaused) == [
        TurnPaused(question_ids=["q-1"], kinds=["tool-ask"])
    ]

    # Nothing waits in memory: a fresh process answers and finishes the turn.
    await harness.restart()
    driver = harness.driver(script[1:], behaviour={"beta_tool": ask_which_host})
    assert await harness.work(driver) == []  # still waiting for the person
    await answer_open(harness, "db-1")
    [outcome] = await harness.work(driver)
    assert (outcome.run_id, outcome.kind, outcome.status) == ("run-2", "answer", "answered")
    bundles = await harness.store.bundles("run-2")
    assert stage_ids(bundles)[:3] == ["seed#0", "settle#1", "window#2"]
    assert writes(bundles[0])["iteration"] == 1
    assert "recoveredFrom" not in writes(bundles[0])  # an answer run recovers nothing
    settle = writes(bundles[1])
    assert settle["iteration"] == 2
    assert settle["toolResults"][0]["status"] == "ok"
    history = (await harness.store.load_conversation("ops")).history
    tool_message = history[2]
    assert tool_message.role == "tool" and tool_message.tool_call_id == "c1"
    assert "which host?" in tool_message.content and "db-1" in tool_message.content
    assert "replied" in tool_message.content and not tool_message.not_dispatched
    assert harness.invocations["c1"] == 1
    receipts = [writes(b)["receipt"] for b in bundles if "receipt" in writes(b)]
    assert receipts[0]["basis"]["epoch"] == 2
    assert (await harness.store.questions("ops"))[0].status == "answered"
    assert (await harness.store.inbox("ops"))[0].status == "answered"


async def test_case_21_calls_after_the_asking_one_are_not_dispatched(harness: Harness) -> None:
    script = [tool_reply(call("ask", "beta_tool"), call("x", "alpha_tool")), answer("ok")]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host})
    await driver.post("go")
    await harness.work(driver)
    [question] = await harness.store.questions("ops")
    assert question.tool_call_ids == ("ask",)
    pause = writes((await harness.store.bundles("run-1"))[-1])
    assert pause["pendingBatch"]["toolCallIds"] == ["ask", "x"]
    await answer_open(harness, "db-1")
    await harness.work(driver)
    assert harness.invocations["x"] == 0
    history = (await harness.store.load_conversation("ops")).history
    by_call = {m.tool_call_id: m for m in history if m.role == "tool"}
    assert by_call["x"].not_dispatched and "was not run" in by_call["x"].content
    assert [m.tool_call_id for m in history if m.role == "tool"] == ["ask", "x"]
    settle = writes((await harness.store.bundles("run-2"))[1])
    assert [r["status"] for r in settle["toolResults"]] == ["ok", "not-dispatched"]


async def test_results_produced_before_the_ask_are_committed_with_the_pause(
    harness: Harness,
) -> None:
    """[alpha a, beta ask, alpha b]: a's result is in the pause bundle; ask and b follow."""
    script = [
        tool_reply(call("a", "alpha_tool"), call("ask", "beta_tool"), call("b", "alpha_tool")),
        answer("ok"),
    ]
    driver = harness.driver(script, behaviour={"ask": ask_which_host})
    await driver.post("go")
    await harness.work(driver)
    pause = writes((await harness.store.bundles("run-1"))[-1])
    assert [r["toolCallId"] for r in pause["toolResults"]] == ["a"]
    assert pause["pendingBatch"]["toolCallIds"] == ["ask", "b"]
    history = (await harness.store.load_conversation("ops")).history
    assert [m.role for m in history] == ["user", "assistant", "tool"]
    await answer_open(harness, "db-1")
    await harness.work(driver)
    history = (await harness.store.load_conversation("ops")).history
    assert [m.tool_call_id for m in history if m.role == "tool"] == ["a", "ask", "b"]
    assert harness.invocations == {"a": 1, "ask": 1}


def approval_driver(harness: Harness, script: list[Any], **options: Any) -> AgentDriver:
    assert harness.store is not None

    async def deploy(args: Mapping[str, Any], ctx: ToolContext) -> str:
        harness.invocations[ctx.tool_call_id] += 1
        return f"deployed {args.get('service')}"

    async def look(args: Mapping[str, Any], ctx: ToolContext) -> str:
        harness.invocations[ctx.tool_call_id] += 1
        return "looked"

    schema = {"type": "object", "properties": {"service": {"type": "string"}}}
    harness.model = ScriptedModel(script)
    definition = Agent(
        "ops",
        harness.model,
        tools=[
            Tool("deploy", "Deploy.", schema, deploy, check_in=True),
            Tool("look", "Look.", {"type": "object", "properties": {}}, look),
        ],
        **options,
    )
    return AgentDriver(
        harness.store,
        definition,
        clock=harness.clock,
        ids=harness.ids,
        emitter=Emitter([harness.recorder]),
    )


@pytest.mark.parametrize("decision", ["approve", "decline"])
async def test_case_22_approval_pauses_before_any_dispatch(harness: Harness, decision: str) -> None:
    script = [
        tool_reply(call("d1", "deploy", service="api"), call("l1", "look")),
        answer("done"),
    ]
    driver = approval_driver(harness, script)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "paused"
    assert harness.recorder.of_type(ToolStarted) == []
    assert harness.invocations == {}
    [question] = await harness.store.questions("ops")
    assert question.kind == "approval" and question.tool_call_ids == ("d1",)
    assert "deploy" in question.prompt and '"service":"api"' in question.prompt
    pause = writes((await harness.store.bundles("run-1"))[-1])
    assert pause["pendingBatch"]["toolCallIds"] == ["d1", "l1"]
    assert "toolResults" not in pause

    with pytest.raises(InvalidAnswer) as caught:
        await answer_open(harness, "yes please")
    assert caught.value.reason == "not-a-decision"
    await answer_open(harness, {"decision": decision})
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    settle = writes((await harness.store.bundles("run-2"))[1])
    statuses = {r["toolCallId"]: r["status"] for r in settle["toolResults"]}
    history = (await harness.store.load_conversation("ops")).history
    deploy_message = next(m for m in history if m.tool_call_id == "d1")
    if decision == "approve":
        assert statuses == {"d1": "ok", "l1": "ok"}
        assert harness.invocations == {"d1": 1, "l1": 1}
        assert deploy_message.content == "deployed api"
    else:
        assert statuses == {"d1": "declined", "l1": "ok"}
        assert harness.invocations == {"l1": 1}
        assert deploy_message.not_dispatched and "declined" in deploy_message.content


async def test_case_23_abandon_answers_with_a_no_reply_note(harness: Harness) -> None:
    script = [tool_reply(call("c1", "beta_tool")), answer("carrying on")]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host})
    await driver.post("go")
    await harness.work(driver)
    [question] = await harness.store.questions("ops")
    await abandon_question(
        harness.store, "ops", question.question_id, now_ms=harness.clock.now_ms()
    )
    [outcome] = await harness.work(driver)
    assert (outcome.kind, outcome.status, outcome.final_answer) == (
        "answer",
        "answered",
        "carrying on",
    )
    history = (await harness.store.load_conversation("ops")).history
    assert "did not reply" in history[2].content
    assert not history[2].not_dispatched
    assert (await harness.store.questions("ops"))[0].status == "abandoned"
    with pytest.raises(QuestionClosed):
        await answer_open_by_id(harness, question.question_id, "late")


async def answer_open_by_id(harness: Harness, question_id: str, value: Any) -> None:
    await answer_question(harness.store, "ops", question_id, value, now_ms=0)


async def test_case_6_the_budget_counts_across_the_pause(harness: Harness) -> None:
    """max_iterations=3; the ask at iteration 2; the answer run's settle closes iteration 2,
    its first call is iteration 3, and a tool-calling reply there routes to wrap-up."""
    script = [
        tool_reply(call("a1", "alpha_tool")),
        tool_reply(call("ask", "beta_tool")),
        tool_reply(call("a2", "alpha_tool")),
        answer("wrapped"),
    ]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host}, max_iterations=3)
    await driver.post("go")
    await harness.work(driver)
    pause = (await harness.store.bundles("run-1"))[-1]
    assert pause.iteration == 2
    await answer_open(harness, "db-1")
    [outcome] = await harness.work(driver)
    stages = stage_ids(await harness.store.bundles("run-2"))
    assert stages[:2] == ["seed#0", "settle#1"]
    assert "wrap-up#6" in stages
    assert harness.invocations["a2"] == 0
    assert outcome.final_answer == "wrapped"
    assert len(harness.model.bodies) == 4  # 3 ordinary calls in the turn, then the wrap-up


async def test_a_crash_of_the_answer_run_settles_the_batch_again(harness: Harness) -> None:
    """The answer run dies after its seed: the pending batch is still on the checkpoint, so
    the recovery settles it with the person's answer (nothing asked again)."""
    script = [tool_reply(call("c1", "beta_tool")), answer("ok")]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host})
    await driver.post("go")
    await harness.work(driver)
    await answer_open(harness, "db-1")
    harness.store.crash_after = committed_stage("seed")
    await harness.crash(driver)
    await harness.restart()
    driver = harness.driver(script[1:], behaviour={"beta_tool": ask_which_host})
    [outcome] = await harness.work(driver)
    assert (outcome.run_id, outcome.kind, outcome.status) == ("run-3", "recovery", "answered")
    bundles = await harness.store.bundles("run-3")
    assert stage_ids(bundles)[:2] == ["seed#0", "settle#1"]
    history = (await harness.store.load_conversation("ops")).history
    assert "db-1" in history[2].content
    assert harness.invocations["c1"] == 1


async def test_an_approved_call_cut_off_in_the_answer_run_is_settled_by_the_journal(
    harness: Harness,
) -> None:
    """Approved, dispatched, and the process dies before the settle commits: the approved
    non-idempotent call is answered interrupted, never run twice."""
    driver = approval_driver(
        harness, [tool_reply(call("d1", "deploy", service="api")), answer("ok")]
    )
    await driver.post("go")
    await harness.work(driver)
    await answer_open(harness, {"decision": "approve"})
    harness.store.crash_after = lambda txn: any(r.state == "started" for r in txn.journal)
    await harness.crash(driver)
    await harness.restart()
    driver = approval_driver(harness, [answer("ok")])
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    settle = writes((await harness.store.bundles(outcome.run_id))[1])
    assert settle["toolResults"][0]["status"] == "interrupted"
    assert settle["toolResults"][0]["settled"] == "note"
    assert harness.invocations["d1"] == 0


@pytest.mark.parametrize("durability", ["iteration", "turn"])
async def test_a_pause_is_a_commit_point_in_every_durability_mode(
    harness: Harness, durability: str
) -> None:
    script = [tool_reply(call("c1", "beta_tool")), answer("ok")]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host}, durability=durability)
    await driver.post("go")
    await harness.work(driver)
    await harness.restart()
    assert len(await harness.store.questions("ops", status="open")) == 1
    assert (await harness.store.conversation_state("ops")).open_turn.status == "paused"
    driver = harness.driver(
        script[1:], behaviour={"beta_tool": ask_which_host}, durability=durability
    )
    await answer_open(harness, "db-1")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"


async def test_messages_while_paused_are_queued_and_start_after_the_answer(
    harness: Harness,
) -> None:
    script = [tool_reply(call("c1", "beta_tool")), answer("first"), answer("second")]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host})
    await driver.post("go")
    await harness.work(driver)
    ack = await driver.post("and then?")
    assert await harness.work(driver) == []
    statuses = {r.message_id: r.status for r in await harness.store.inbox("ops")}
    assert statuses[ack.message_id] == "queued"
    await answer_open(harness, "db-1")
    outcomes = await harness.work(driver)
    assert [(o.kind, o.final_answer) for o in outcomes] == [
        ("answer", "first"),
        ("initial", "second"),
    ]


async def test_the_pause_timeout_abandons_open_questions(harness: Harness) -> None:
    script = [tool_reply(call("c1", "beta_tool")), answer("ok")]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host}, pause_timeout_s=600)
    await driver.post("go")
    await harness.work(driver)
    harness.clock.advance(599)
    assert await harness.work(driver) == []
    harness.clock.advance(1)
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    assert (await harness.store.questions("ops"))[0].status == "abandoned"


async def test_ask_person_from_a_sync_tool_pauses_too(harness: Harness) -> None:
    assert harness.store is not None

    def sync_ask(args: Mapping[str, Any], ctx: ToolContext) -> str:
        ctx.ask_person("sure?")

    harness.model = ScriptedModel([tool_reply(call("s1", "asker")), answer("ok")])
    definition = Agent(
        "ops", harness.model, tools=[Tool("asker", "Asks.", {"type": "object"}, sync_ask)]
    )
    driver = AgentDriver(harness.store, definition, clock=harness.clock, ids=harness.ids)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "paused"
    [question] = await harness.store.questions("ops")
    assert question.prompt == "sure?"


async def test_a_tool_catching_exception_cannot_swallow_the_pause(harness: Harness) -> None:
    async def greedy(args: Mapping[str, Any], ctx: ToolContext) -> str:
        try:
            ctx.ask_person("really?")
        except Exception:
            return "swallowed"

    driver = harness.driver(
        [tool_reply(call("c1", "beta_tool")), answer("ok")], behaviour={"beta_tool": greedy}
    )
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "paused"


async def test_an_invalid_question_is_a_tool_error_not_a_pause(harness: Harness) -> None:
    async def empty(args: Mapping[str, Any], ctx: ToolContext) -> str:
        ctx.ask_person("   ")

    driver = harness.driver(
        [tool_reply(call("c1", "beta_tool")), answer("ok")], behaviour={"beta_tool": empty}
    )
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    history = (await harness.store.load_conversation("ops")).history
    assert "ValueError" in history[2].content


async def test_turn_ended_reports_the_whole_turn_across_a_pause(harness: Harness) -> None:
    """docs/host.md#event-catalogue: per-turn figures on turn.ended, the paused run's epoch and
    usage included."""
    from afp_runtime.messages import Usage

    script = [
        tool_reply(call("c1", "beta_tool"), usage=Usage(input=10, output=1)),
        answer("done", usage=Usage(input=20, output=2)),
    ]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host})
    await driver.post("go")
    await harness.work(driver)
    harness.clock.advance(90)
    await answer_open(harness, "db-1")
    await harness.work(driver)
    [ended] = harness.recorder.payloads(TurnEnded)
    assert ended.epochs == 2
    assert ended.usage == Usage(input=30, output=3)
    assert ended.duration_ms >= 90_000


async def test_results_after_the_asking_call_keep_call_order(harness: Harness) -> None:
    """[ask, gamma (unknown tool)]: gamma's result is decided at planning but committed after
    the asking call's, with the answer (docs/loop.md#dispatch-groups-and-ordering)."""
    script = [tool_reply(call("ask", "beta_tool"), call("x", "gamma")), answer("ok")]
    driver = harness.driver(script, behaviour={"beta_tool": ask_which_host})
    await driver.post("go")
    await harness.work(driver)
    pause = writes((await harness.store.bundles("run-1"))[-1])
    assert "toolResults" not in pause
    assert pause["pendingBatch"]["toolCallIds"] == ["ask", "x"]
    await answer_open(harness, "db-1")
    await harness.work(driver)
    history = (await harness.store.load_conversation("ops")).history
    tools = [m for m in history if m.role == "tool"]
    assert [m.tool_call_id for m in tools] == ["ask", "x"]
    assert "No tool named" in tools[1].content


@pytest.mark.parametrize(
    ("kind", "value", "named"),
    [
        ("tool-ask", None, "not null"),
        ("tool-ask", {"decision": "approve"}, 'not {"decision":"approve"}'),
        ("approval", ["approve"], 'not ["approve"]'),
        ("approval", {"decision": None}, "not null"),
    ],
)
def test_a_refused_answer_names_the_value_as_the_client_sent_it(
    kind: str, value: Any, named: str
) -> None:
    """Answers arrive as JSON, so a refusal names the value in JSON (``null``, an object), not
    in Python's spelling (``None``, ``{'decision': ...}``)."""
    with pytest.raises(InvalidAnswer) as caught:
        validate_answer(kind, value)
    assert named in caught.value.message and "None" not in caught.value.message
