"""Whole turns with the time layer (docs/time.md#how-this-is-tested cases 38-50, 52, 54): a scripted
model, the durable inbox, real SQLite, the fake clock fixed at 2026-10-09T15:40:00Z (08:40 in Los
Angeles).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from afp_runtime.agents import Agent, abandon_question, answer_question
from afp_runtime.errors import TimeNotEnabled
from afp_runtime.loop import AgentDriver, Emitter
from afp_runtime.models import ScriptedModel
from afp_runtime.records import ledger_row_to_wire
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from afp_runtime.time import Period, TimeConfig
from afp_runtime.time._forms import Bound, BoundsForm, LookbackForm
from afp_runtime.time._policy import TimePolicy
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window.texts import TIME_LINE_PREFIX

from .conftest import Harness

LA = "America/Los_Angeles"
NOW_MS = 1791560400000  # 2026-10-09T15:40:00Z
EPOCH = BoundsForm(
    start=Bound(argument="start_time", as_="epoch-ms"),
    end=Bound(argument="end_time", as_="epoch-ms", edge="exclusive"),
)
SCHEMA_EPOCH = {
    "type": "object",
    "properties": {"start_time": {"type": "integer"}, "end_time": {"type": "integer"}},
}
SCHEMA_WINDOW = {"type": "object", "properties": {"window": {"type": "string"}}}


class Seen:
    """What each tool call received: its arguments and ``ctx.time``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], Any]] = []

    def tool(self, name: str, schema: dict[str, Any], period: Period) -> Tool:
        async def fn(args: Mapping[str, Any], ctx: ToolContext) -> str:
            self.calls.append((ctx.tool_call_id, dict(args), ctx.time))
            return f"{name} ok"

        return Tool(name, f"{name}.", schema, fn, period=period)


def driver_for(harness: Harness, script: list[Any], tools: list[Tool], **time: Any) -> AgentDriver:
    assert harness.store is not None
    harness.model = ScriptedModel(script)
    definition = Agent("ops", harness.model, tools=tools, time=TimeConfig(zone=LA, **time))
    return AgentDriver(
        harness.store,
        definition,
        clock=harness.clock,
        ids=harness.ids,
        emitter=Emitter([harness.recorder]),
    )


@pytest.fixture(name="harness")
async def fixture_harness(tmp_path: Any) -> Any:
    harness = Harness(tmp_path / "afp.db", FakeClock(start_ms=NOW_MS))
    await harness.open()
    yield harness
    await harness.close()


async def ledger(harness: Harness, kind: str) -> list[dict[str, Any]]:
    assert harness.store is not None
    return [ledger_row_to_wire(r) for r in await harness.store.ledger("ops", kind=kind)]


async def test_case_38_a_control_window_fills_the_call(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("activity", SCHEMA_WINDOW, Period(argument="window", accepts=("iso-range",)))
    driver = driver_for(harness, [tool_reply(call("c1", "activity")), answer("done")], [tool])
    window = {"from": "2026-10-09T14:00:00Z", "to": "2026-10-09T15:00:00Z"}
    await driver.post("any activity?", time={"window": window})
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    [(_, args, time)] = seen.calls
    assert args == {"window": "2026-10-09T14:00:00Z..2026-10-09T14:59:59Z"}
    assert time.asked.start == "2026-10-09T14:00:00Z" and time.asked.end == "2026-10-09T15:00:00Z"
    assert (time.zone, time.now) == (LA, "2026-10-09T15:40:00Z")
    [clock] = await ledger(harness, "clock")
    assert clock["nowSource"] == "inbox" and clock["window"]["source"] == "control"
    [row] = await ledger(harness, "call-window")
    assert row["how"] == "filled" and row["person"]["source"] == "control"
    assert "mention" not in row["person"]
    [dispatched] = await ledger(harness, "call")
    assert dispatched["dispatchedAt"] == time.dispatched_at


async def test_case_39_an_open_reading_asks_and_the_answer_fills(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("client_activity", SCHEMA_EPOCH, Period(forms=(EPOCH,)))
    script = [tool_reply(call("c1", "client_activity")), answer("none")]
    driver = driver_for(harness, script, [tool])
    await driver.post("any client activity in the last 2 hours?")
    [outcome] = await harness.work(driver)
    assert outcome.status == "paused"
    assert seen.calls == []
    [row] = await ledger(harness, "call-window")
    assert (row["how"], row["why"]) == ("not-filled", "open-reading")
    assert harness.store is not None
    [question] = await harness.store.questions("ops", status="open")
    assert question.kind == "time"
    assert question.detail is not None
    choices = question.detail["question"]["choices"]
    assert [c["value"] for c in choices] == ["2026-10-09T13:40:00Z/2026-10-09T15:40:00.001Z"]

    await answer_question(
        harness.store, "ops", question.question_id, choices[0]["value"], now_ms=NOW_MS
    )
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    [(_, args, _)] = seen.calls
    assert args == {"start_time": 1791553200000, "end_time": 1791560400000}
    [answered] = await ledger(harness, "time-answer")
    assert answered == {
        "kind": "time-answer",
        "turn": 1,
        "iteration": 1,
        "mention": 0,
        "from": "2026-10-09T13:40:00Z",
        "to": "2026-10-09T15:40:00.001Z",
        "zone": LA,
        "how": "confirmed",
    }
    rows = await ledger(harness, "call-window")
    assert [r["how"] for r in rows] == ["not-filled", "filled"]


async def test_case_45_a_late_answer_shifts_a_lookback(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("errors", SCHEMA_WINDOW, Period(forms=(LookbackForm(argument="window"),)))
    driver = driver_for(harness, [tool_reply(call("c1", "errors")), answer("ok")], [tool])
    await driver.post("any errors yesterday?")
    await harness.work(driver)
    assert harness.store is not None
    [question] = await harness.store.questions("ops", status="open")
    harness.clock.advance(600)  # the person answers 10 minutes later
    value = question.detail["question"]["choices"][0]["value"]  # type: ignore[index]
    await answer_question(harness.store, "ops", question.question_id, value, now_ms=NOW_MS)
    await harness.work(driver)
    [(_, args, time)] = seen.calls
    assert args == {"window": "1960m"}
    assert time.asked.start == "2026-10-08T00:00:00-07:00"
    [dispatched] = await ledger(harness, "call")
    assert dispatched["dispatchedAt"] == "2026-10-09T15:50:00Z"
    assert dispatched["drift"] == {"byMs": 600000, "outcome": "shifted"}


async def test_case_44_a_reading_every_tool_rejects_is_refused_without_a_question(
    harness: Harness,
) -> None:
    seen = Seen()
    period = Period(forms=(EPOCH,), direction="past")
    tool = seen.tool("client_activity", SCHEMA_EPOCH, period)
    driver = driver_for(
        harness,
        [tool_reply(call("c1", "client_activity")), answer("not yet")],
        [tool],
        policy=TimePolicy(date_order="MDY"),
    )
    await driver.post("client activity on 10/20/26")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    assert seen.calls == []
    [row] = await ledger(harness, "call-window")
    assert (row["how"], row["refused"]) == ("refused", "time-future")
    assert not {"asked", "form", "person"} & set(row)
    history = (await harness.store.load_conversation("ops")).history  # type: ignore[union-attr]
    assert "client_activity" in history[2].content and history[2].not_dispatched


async def test_case_54_the_time_line_ends_every_request(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("client_activity", SCHEMA_EPOCH, Period(forms=(EPOCH,)))
    driver = driver_for(harness, [tool_reply(call("c1", "client_activity")), answer("ok")], [tool])
    await driver.post("hello")
    await harness.work(driver)
    lines = [request.messages[-1].content for request in harness.model.requests]
    assert len(lines) == 2 and lines[0] == lines[1]
    assert lines[0].startswith(TIME_LINE_PREFIX)
    for part in ("Friday", "2026-10-09", "08:40", LA, "-07:00"):
        assert part in lines[0]
    schema = harness.model.requests[0].tools[0].input_schema
    assert "_timeQuote" in schema["properties"]
    assert "_timeQuote" not in tool.input_schema.get("properties", {})


async def test_case_52_time_disabled_refuses_a_message_time() -> None:
    definition = Agent("ops", ScriptedModel([answer("x")]))
    with pytest.raises(TimeNotEnabled):
        definition.check_message_time({"zone": "UTC"})
    assert definition.check_message_time(None) is None


async def test_a_time_quote_never_reaches_the_tool(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("client_activity", SCHEMA_EPOCH, Period(forms=(EPOCH,)))
    sent = call(
        "c1",
        "client_activity",
        start_time=1791558000000,
        end_time=1791560460000,
        _timeQuote="this morning",
    )
    driver = driver_for(harness, [tool_reply(sent), answer("ok")], [tool])
    await driver.post("hi")
    await harness.work(driver)
    [(_, args, _)] = seen.calls
    assert args == {"start_time": 1791558000000, "end_time": 1791560460000}
    [row] = await ledger(harness, "call-window")
    assert row["how"] == "model"


def unknown_zone_driver(harness: Harness, script: list[Any], tools: list[Tool]) -> AgentDriver:
    assert harness.store is not None
    harness.model = ScriptedModel(script)
    definition = Agent("ops", harness.model, tools=tools, time=TimeConfig())
    return AgentDriver(harness.store, definition, clock=harness.clock, ids=harness.ids)


async def test_case_50_an_unknown_zone_is_asked_first_then_the_range(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("client_activity", SCHEMA_EPOCH, Period(forms=(EPOCH,)))
    script = [tool_reply(call("c1", "client_activity")), answer("done"), answer("next")]
    driver = unknown_zone_driver(harness, script, [tool])
    assert harness.store is not None
    await driver.post("any client activity yesterday?")
    await harness.work(driver)
    [clock] = await ledger(harness, "clock")
    assert (clock["zone"], clock["zoneSource"]) == ("UTC", "unknown")
    [first] = await harness.store.questions("ops", status="open")
    assert first.detail is not None and first.detail["question"]["format"] == "zone"
    await answer_question(harness.store, "ops", first.question_id, LA, now_ms=NOW_MS)
    [paused] = await harness.work(driver)
    assert paused.status == "paused"
    [second] = await harness.store.questions("ops", status="open")
    assert second.question_id != first.question_id
    assert second.detail is not None
    choices = [c["value"] for c in second.detail["question"]["choices"]]
    assert choices == ["2026-10-08T00:00:00-07:00/2026-10-09T00:00:00-07:00"]
    await answer_question(harness.store, "ops", second.question_id, choices[0], now_ms=NOW_MS)
    [done] = await harness.work(driver)
    assert done.status == "answered"
    [(_, args, time)] = seen.calls
    assert args == {"start_time": 1791442800000, "end_time": 1791529200000}
    assert time.zone == "UTC" and time.zone_unknown
    [answered] = await ledger(harness, "time-answer")
    assert (answered["zone"], answered["how"]) == (LA, "confirmed")
    await driver.post("and today?")
    await harness.work(driver)
    clocks = await ledger(harness, "clock")
    assert (clocks[1]["zone"], clocks[1]["zoneSource"]) == (LA, "answered")


async def test_case_51_refused_answers_are_re_asked_then_unsettled(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("client_activity", SCHEMA_EPOCH, Period(forms=(EPOCH,)))
    driver = driver_for(harness, [tool_reply(call("c1", "client_activity")), answer("ok")], [tool])
    assert harness.store is not None
    await driver.post("any client activity in the last 2 hours?")
    await harness.work(driver)
    [question] = await harness.store.questions("ops", status="open")
    reasons = []
    for value in ("yesterday", "2026-10-09T08:00/2026-10-09T09:00", "x/y", "z"):
        row = await answer_question(
            harness.store, "ops", question.question_id, value, now_ms=NOW_MS
        )
        assert row is not None and row.detail is not None
        reasons.append((row.status, row.repeat, row.detail["refused"]["reason"]))
    assert reasons == [
        ("open", 1, "not-a-range"),
        ("open", 2, "no-offset"),
        ("open", 3, "not-an-instant"),
        ("unsettled", 3, "not-a-range"),
    ]
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    assert seen.calls == []
    history = (await harness.store.load_conversation("ops")).history
    assert history[2].not_dispatched and "client_activity" in history[2].content


async def test_an_abandoned_time_question_runs_nothing(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("client_activity", SCHEMA_EPOCH, Period(forms=(EPOCH,)))
    driver = driver_for(harness, [tool_reply(call("c1", "client_activity")), answer("ok")], [tool])
    assert harness.store is not None
    await driver.post("any client activity in the last 2 hours?")
    await harness.work(driver)
    [question] = await harness.store.questions("ops", status="open")
    await abandon_question(harness.store, "ops", question.question_id, now_ms=NOW_MS)
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered" and seen.calls == []
    rows = await ledger(harness, "call-window")
    assert [(r["how"], r.get("why")) for r in rows] == [("not-filled", "open-reading")]


def test_the_window_layer_knows_the_time_line_prefix() -> None:
    """The window treats the time line as authored text; the two constants must agree."""
    from afp_runtime.time import _texts

    assert _texts.TIME_LINE_PREFIX == TIME_LINE_PREFIX


async def _ask_and_answer(
    harness: Harness, driver: AgentDriver, text: str, value: str | None = None
) -> Any:
    """Post ``text``, expect one time question, answer it with ``value`` (or its first
    choice); returns the question as it was asked."""
    assert harness.store is not None
    await driver.post(text)
    [paused] = await harness.work(driver)
    assert paused.status == "paused"
    [question] = await harness.store.questions("ops", status="open")
    assert question.detail is not None
    chosen = value or question.detail["question"]["choices"][0]["value"]
    await answer_question(harness.store, "ops", question.question_id, chosen, now_ms=NOW_MS)
    [done] = await harness.work(driver)
    assert done.status == "answered"
    return question


ISO_OR_LOOKBACK = Period(argument="window", accepts=("iso-range", "signed-lookback"))


async def test_case_40_a_confirmed_span_and_a_control_window_in_an_iso_range(
    tmp_path: Any,
) -> None:
    later = Harness(tmp_path / "later.db", FakeClock(start_ms=NOW_MS + 20 * 60_000))
    await later.open()
    try:
        seen = Seen()
        tool = seen.tool("activity", SCHEMA_WINDOW, ISO_OR_LOOKBACK)
        script = [tool_reply(call("c1", "activity")), answer("ok")]
        await _ask_and_answer(later, driver_for(later, script, [tool]), "last 2 hours?")
        assert seen.calls[0][1] == {"window": "2026-10-09T14:00:00Z..2026-10-09T15:59:59Z"}
    finally:
        await later.close()


async def test_case_40_control_window_keeps_its_offset(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("activity", SCHEMA_WINDOW, ISO_OR_LOOKBACK)
    driver = driver_for(harness, [tool_reply(call("c1", "activity")), answer("ok")], [tool])
    window = {"from": "2026-10-09T08:00:00-07:00", "to": "2026-10-09T08:40:00-07:00"}
    await driver.post("this", time={"window": window})
    await harness.work(driver)
    assert seen.calls[0][1] == {"window": "2026-10-09T08:00:00-07:00..2026-10-09T08:39:59-07:00"}


async def test_case_41_an_unreadable_mention_gets_a_free_entry_question(
    harness: Harness,
) -> None:
    seen = Seen()
    tool = seen.tool("smb", SCHEMA_WINDOW, ISO_OR_LOOKBACK)
    driver = driver_for(harness, [tool_reply(call("c1", "smb")), answer("ok")], [tool])
    question = await _ask_and_answer(
        harness,
        driver,
        "any SMB errors yesterday morning?",
        "2026-10-08T06:00:00-07:00/2026-10-08T12:00:00-07:00",
    )
    assert question.detail["question"]["choices"] == []
    assert question.detail["question"]["freeEntry"] is True
    assert seen.calls[0][1] == {"window": "2026-10-08T06:00:00-07:00..2026-10-08T11:59:59-07:00"}
    [answered] = await ledger(harness, "time-answer")
    assert answered["how"] == "edited"
    latest = (await ledger(harness, "call-window"))[-1]
    assert latest["how"] == "filled"
    assert (latest["person"]["source"], latest["person"]["mention"]) == ("answered", 0)


async def test_case_42_an_unreadable_span_answered_fills_a_lookback(tmp_path: Any) -> None:
    later = Harness(tmp_path / "later.db", FakeClock(start_ms=NOW_MS + 20 * 60_000))
    await later.open()
    try:
        seen = Seen()
        period = Period(forms=(LookbackForm(argument="window", units="smhdw"),))
        tool = seen.tool("cluster", SCHEMA_WINDOW, period)
        await _ask_and_answer(
            later,
            driver_for(later, [tool_reply(call("c1", "cluster")), answer("ok")], [tool]),
            "who talked to cluster 006 since 8 AM?",
            "2026-10-09T08:00:00-07:00/2026-10-09T09:00:00-07:00",
        )
        assert seen.calls[0][1] == {"window": "1h"}
    finally:
        await later.close()


@pytest.mark.parametrize("direction", [None, "future"])
async def test_case_43_an_unmapped_abbreviation_asks_the_zone_first(
    harness: Harness, direction: str | None
) -> None:
    seen = Seen()
    period = Period(forms=(EPOCH,), direction=direction) if direction else Period(forms=(EPOCH,))
    tool = seen.tool("client_activity", SCHEMA_EPOCH, period)
    driver = driver_for(harness, [tool_reply(call("c1", "client_activity")), answer("ok")], [tool])
    assert harness.store is not None
    await driver.post("Show client activity 10/09/26 8 AM to 8:40 AM PST")
    await harness.work(driver)
    [first] = await harness.store.questions("ops", status="open")
    assert first.detail is not None and first.detail["question"]["format"] == "zone"
    await answer_question(harness.store, "ops", first.question_id, LA, now_ms=NOW_MS)
    await harness.work(driver)
    [second] = await harness.store.questions("ops", status="open")
    assert second.detail is not None
    choices = [c["value"] for c in second.detail["question"]["choices"]]
    expected = [
        "2026-10-09T08:00:00-07:00/2026-10-09T08:41:00-07:00",
        "2026-09-10T08:00:00-07:00/2026-09-10T08:41:00-07:00",
        "2010-09-26T08:00:00-07:00/2010-09-26T08:41:00-07:00",
    ]
    assert choices == (expected[:1] if direction else expected)
    if direction:
        return
    await answer_question(harness.store, "ops", second.question_id, choices[0], now_ms=NOW_MS)
    await harness.work(driver)
    assert seen.calls[0][1] == {"start_time": 1791558000000, "end_time": 1791560460000}


async def test_case_46_a_reading_no_form_can_hold_is_refused(harness: Harness) -> None:
    seen = Seen()
    period = Period(forms=(LookbackForm(argument="window"),), max_range="24h")
    tool = seen.tool("errors", SCHEMA_WINDOW, period)
    driver = driver_for(harness, [tool_reply(call("c1", "errors")), answer("ok")], [tool])
    await driver.post("any errors yesterday?")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered" and seen.calls == []
    [row] = await ledger(harness, "call-window")
    assert (row["how"], row["refused"]) == ("refused", "no-form-holds")


async def test_case_47_a_control_day_for_a_lookback_tool_is_refused(harness: Harness) -> None:
    seen = Seen()
    tool = seen.tool("errors", SCHEMA_WINDOW, Period(forms=(LookbackForm(argument="window"),)))
    driver = driver_for(harness, [tool_reply(call("c1", "errors")), answer("ok")], [tool])
    today = {"from": "2026-10-09T00:00:00-07:00", "to": "2026-10-10T00:00:00-07:00"}
    await driver.post("any errors?", time={"window": today})
    await harness.work(driver)
    [row] = await ledger(harness, "call-window")
    assert (row["how"], row["refused"]) == ("refused", "no-form-holds")
    assert row["asked"] == today and row["person"]["source"] == "control"


async def test_case_48_drift_redraws_a_filled_lookback(harness: Harness) -> None:
    seen = Seen()
    period = Period(forms=(LookbackForm(argument="window"), EPOCH))
    schema = {
        "type": "object",
        "properties": {**SCHEMA_WINDOW["properties"], **SCHEMA_EPOCH["properties"]},
    }
    tool = seen.tool("activity", schema, period)
    driver = driver_for(harness, [tool_reply(call("c1", "activity")), answer("ok")], [tool])
    window = {"from": "2026-10-09T14:40:00Z", "to": "2026-10-09T15:40:00Z"}
    await driver.post("show activity", time={"window": window})
    harness.clock.advance(1800)  # the turn starts 30 minutes after the message arrived
    await harness.work(driver)
    [(_, args, time)] = seen.calls
    assert args == {"start_time": 1791556800000, "end_time": 1791560400000}
    [dispatched] = await ledger(harness, "call")
    assert dispatched["drift"] == {"byMs": 1800000, "outcome": "redrawn", "form": 1}
    assert time.asked.start == "2026-10-09T14:40:00Z"
    [row] = await ledger(harness, "call-window")
    assert row["how"] == "filled" and row["form"] == 0


async def test_a_refused_call_of_a_paused_batch_stays_refused_after_the_answer(
    harness: Harness,
) -> None:
    """The answer run dispatches only what the decisions allow: a call refused before the
    pause never runs, and a call the model sent runs with its call row and ctx.time."""
    seen = Seen()
    waiting = seen.tool("client_activity", SCHEMA_EPOCH, Period(forms=(EPOCH,)))
    past = seen.tool("past", SCHEMA_EPOCH, Period(forms=(EPOCH,), direction="past"))
    sent = seen.tool("sent", SCHEMA_EPOCH, Period(forms=(EPOCH,)))
    reply = tool_reply(
        call("c1", "client_activity"),
        call("p1", "past", start_time=1791644400000, end_time=1791646860000),
        call("s1", "sent", start_time=1791558000000, end_time=1791560460000),
    )
    driver = driver_for(harness, [reply, answer("ok")], [waiting, past, sent])
    await _ask_and_answer(harness, driver, "errors in the last 2 hours?")
    ran = {call_id: time for call_id, _, time in seen.calls}
    assert set(ran) == {"c1", "s1"}
    assert ran["s1"] is not None and ran["s1"].asked is not None
    calls = {row["toolCallId"] for row in await ledger(harness, "call")}
    assert calls == {"c1", "s1"}
    history = (await harness.store.load_conversation("ops")).history  # type: ignore[union-attr]
    refused = next(m for m in history if m.tool_call_id == "p1")
    assert refused.not_dispatched and "past" in refused.content


class BrokenReader:
    """A model-kind reader whose output is not shaped {mentions: [...]}."""

    id = "test/broken"
    version = "1"
    locale = "en-US"
    kind = "model"

    def read(self, text: str) -> Any:
        return {"x": 1}


async def test_host_case_38_a_broken_time_reader_holds_the_turn(harness: Harness) -> None:
    """docs/host.md case 38 (and docs/time.md#readers): the turn is held with errorKind time-reader
    and never retried automatically."""
    assert harness.store is not None
    harness.model = ScriptedModel([answer("never")])
    definition = Agent("ops", harness.model, time=TimeConfig(zone=LA, reader=BrokenReader()))
    driver = AgentDriver(harness.store, definition, clock=harness.clock, ids=harness.ids)
    await driver.post("any errors yesterday?")
    [outcome] = await harness.work(driver)
    assert (outcome.status, outcome.error_kind) == ("held", "time-reader")
    harness.clock.advance(86_400)
    assert await harness.work(driver) == []
    assert harness.model.calls == 0


async def test_after_a_zone_answer_no_question_when_every_reading_is_rejected(
    harness: Harness,
) -> None:
    """docs/time.md#question-shapes: readings exist but the waiting tool rejects each one: no range
    question; the call is refused with the first reading's code and the model answers."""
    seen = Seen()
    tool = seen.tool("client_activity", SCHEMA_EPOCH, Period(forms=(EPOCH,), direction="past"))
    script = [tool_reply(call("c1", "client_activity")), answer("cannot")]
    driver = unknown_zone_driver(harness, script, [tool])
    assert harness.store is not None
    await driver.post("any client activity tomorrow?")
    await harness.work(driver)
    [zone] = await harness.store.questions("ops", status="open")
    await answer_question(harness.store, "ops", zone.question_id, LA, now_ms=NOW_MS)
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered" and seen.calls == []
    assert await harness.store.questions("ops", status="open") == []
    rows = await ledger(harness, "call-window")
    assert (rows[-1]["how"], rows[-1]["refused"]) == ("refused", "time-future")
