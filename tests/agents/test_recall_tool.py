"""The built-in ``recall`` tool (docs/recall.md#the-recall-tool) through real runs: offered only
when switched on; a call answers the original messages that left the window verbatim, bounded,
with when and where they left, and files a ``recall`` ledger row; a refused query or range is a
named tool error and the turn goes on; the April→July scenario gives its golden on Postgres too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

import afp_runtime as afp
from afp_runtime.agents import build_definition, load_config
from afp_runtime.agents.recall_tool import HIT_CHARS, TOTAL_CHARS
from afp_runtime.errors import AgentDefinitionError
from afp_runtime.messages import Message, ModelRequest
from afp_runtime.models import ScriptedModel
from afp_runtime.scenario import encode_result, run_scenario
from afp_runtime.store.sqlite.recall import Recall
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from tests.store._postgres import FreshDatabase

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
START_MS = 1_775_120_400_000  # 2026-04-02T09:00:00Z
DAY_S = 86_400.0
HOSTILE = (
    '<script>alert("x")</script> <img src=x onerror=alert(1)> \'quoted\' "double" '
    "\x07\x1b[31m control ord-7781 " + "long " * 50
)


def tool_texts(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


def script(request: ModelRequest, number: int) -> afp.ModelReply:
    """``RECALL {json}`` calls ``recall`` with those arguments and then answers with the tool's
    text; any other message is answered ``ok``."""
    # The time layer adds its clock note as a request line: read the turn's own message.
    users = [
        n
        for n, m in enumerate(request.messages)
        if m.role == "user" and not m.content.startswith("[Clock note")
    ]
    asked = request.messages[users[-1]].content
    if not asked.startswith("RECALL "):
        return answer("ok")
    results = tool_texts(request.messages[users[-1] :])
    if results:
        return answer(results[-1])
    return tool_reply(call("r1", "recall", **json.loads(asked.removeprefix("RECALL "))))


def agent(**options: object) -> afp.Agent:
    return afp.Agent(
        "desk",
        ScriptedModel(script, model="m"),
        window=afp.sliding_window(keep_recent_turns=1),
        recall=True,
        **options,  # type: ignore[arg-type]
    )


async def ask(store: afp.Store, desk: afp.Agent, **args: object) -> str:
    result = await store.run(desk, "RECALL " + json.dumps(args))
    assert result.status == "answered" and result.answer is not None
    return result.answer


def test_the_switch_is_off_by_default_and_on_in_a_file_and_in_python(tmp_path: Path) -> None:
    """``recall = true`` and ``recall=True`` offer the tool (and change the fingerprint);
    without them there is no such tool; a tool of that name clashes; a non-bool is refused
    naming ``recall``."""
    text = '[[agents]]\nid = "desk"\nmodel = {provider = "scripted", model = "m"}\n'
    model = ScriptedModel([], model="m")
    off = build_definition(load_config(tmp_path / "a.toml", text).agents[0], model=model)
    on_file = build_definition(
        load_config(tmp_path / "b.toml", text + "recall = true\n").agents[0], model=model
    )
    on_python = afp.Agent("desk", model, recall=True)
    assert "recall" not in off.tools_by_name and "recall" not in afp.Agent("d", model).tools_by_name
    assert "recall" in on_file.tools_by_name
    schema = on_python.tools_by_name["recall"].input_schema
    assert schema["required"] == ["query"]
    assert set(schema["properties"]) == {"query", "since", "until", "limit"}
    assert (schema["properties"]["limit"]["minimum"], schema["properties"]["limit"]["maximum"]) == (
        1,
        20,
    )
    assert on_file.fingerprint() == on_python.fingerprint() != off.fingerprint()

    @afp.tool
    def recall(query: str) -> str:
        """Not the built-in."""
        return query

    with pytest.raises(AgentDefinitionError, match="recall"):
        afp.Agent("desk", model, tools=[recall], recall=True)
    with pytest.raises(AgentDefinitionError) as caught:
        afp.Agent("desk", model, recall="yes")  # type: ignore[arg-type]
    assert caught.value.context["field"] == "recall"


async def test_a_dropped_message_comes_back_verbatim_with_its_row(tmp_path: Path) -> None:
    """A person's message with markup, quotes and control characters is dropped by the window;
    ``recall`` answers it character for character, said when it was accepted (in the agent's
    zone and UTC), dropped by the run and stage that removed it; the row names what it
    returned."""
    clock = FakeClock(START_MS)
    desk = agent(time=afp.TimeConfig(zone="Europe/Lisbon"))
    async with afp.open(tmp_path / "afp.db", clock=clock) as store:
        said = clock.now_ms()
        await store.run(desk, HOSTILE)
        clock.advance(90 * DAY_S)
        text = await ask(store, desk, query="ord-7781 control")
        rows = await store.findings(desk, kind="recall")
    head, _, body = text.partition("\n\n")
    assert head.startswith("1 message matched 'ord-7781 control'")
    header, _, content = body.partition("\n")
    assert header.startswith("[1] 2026-04-02 10:00 Europe/Lisbon (2026-04-02 09:00 UTC); user;")
    assert "dropped from the window (run " in header
    assert content == HOSTILE
    [row] = rows
    [returned] = row["returned"]
    assert (row["kind"], row["query"], row["limit"], row["toolCallId"]) == (
        "recall",
        "ord-7781 control",
        5,
        "r1",
    )
    assert (returned["source"], returned["saidAtMs"], returned["chars"]) == (
        "drop",
        said,
        len(HOSTILE),
    )
    assert returned["stageId"].startswith("window#") and "cut" not in returned


async def test_answers_are_bounded_by_count_and_characters(tmp_path: Path) -> None:
    """Five long messages match: ``limit`` 2 answers two; the default answers as many as the
    6,000 characters hold, each cut at 2,000, saying how much was cut and how many were left
    out; the row counts the same."""
    clock = FakeClock(START_MS)
    desk = agent()
    async with afp.open(tmp_path / "afp.db", clock=clock) as store:
        for n in range(5):
            await store.run(desk, f"pallet report {n}: " + "x" * 2_500)
            clock.advance(60)
        two = await ask(store, desk, query="pallet report", limit=2)
        bounded = await ask(store, desk, query="pallet report")
        [row_two, row_all] = await store.findings(desk, kind="recall")
    assert two.startswith("2 messages matched") and "[3]" not in two
    assert len(row_two["returned"]) == 2
    kept = TOTAL_CHARS // HIT_CHARS
    assert bounded.startswith(f"{kept} messages matched 'pallet report'")
    assert "(2 more left out to keep this short)" in bounded
    first_len = len("pallet report 4: ") + 2_500
    assert bounded.count(f"[{first_len - HIT_CHARS} more characters of this message cut]") == kept
    assert [r["chars"] for r in row_all["returned"]] == [HIT_CHARS] * kept
    assert [r["cut"] for r in row_all["returned"]] == [first_len - HIT_CHARS] * kept
    assert row_all["leftOut"] == 2
    assert len(bounded) < TOTAL_CHARS + 1_000


async def test_refusals_and_no_match_are_observations_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    """A NUL in the query, a bad ``since``, an ``until`` before ``since`` are the tool's named
    errors; a ``limit`` of 50 is invalid arguments; a range that holds nothing says nothing
    matched and what was searched. Every turn is answered; only searches file rows."""
    clock = FakeClock(START_MS)
    desk = agent()
    async with afp.open(tmp_path / "afp.db", clock=clock) as store:
        await store.run(desk, "The gate code for the Lisbon warehouse is 4471.")
        clock.advance(DAY_S)
        nul = await ask(store, desk, query="gate\x00code")
        since = await ask(store, desk, query="gate code", since="next Tuesday")
        backwards = await ask(store, desk, query="gate", since="2026-04-05", until="2026-04-01")
        too_many = await ask(store, desk, query="gate", limit=50)
        # Words no earlier RECALL message holds (those left the window too).
        later = await ask(store, desk, query="warehouse 4471", since="2026-04-03")
        same_day = await ask(store, desk, query="warehouse 4471", until="2026-04-02")
        rows = await store.findings(desk, kind="recall")
    assert "failed with InvalidValue: query holds a NUL character" in nul
    assert "failed with InvalidValue: since: 'next Tuesday' is not a date" in since
    assert "failed with InvalidValue: until: '2026-04-01' is not after since" in backwards
    assert "was not run because its arguments were invalid" in too_many and "limit" in too_many
    assert later == (
        "Nothing matched 'warehouse 4471' in the messages that left your window, "
        "from 2026-04-03 00:00 UTC."
    )
    # A date for until includes that day.
    assert same_day.startswith("1 message matched 'warehouse 4471'")
    assert same_day.endswith("\nThe gate code for the Lisbon warehouse is 4471.")
    assert [(r["query"], len(r["returned"])) for r in rows] == [
        ("warehouse 4471", 0),
        ("warehouse 4471", 1),
    ]
    assert rows[0]["sinceMs"] == START_MS + 86_400_000 - 9 * 3_600_000
    assert rows[1]["untilMs"] == START_MS + 86_400_000 - 9 * 3_600_000


async def test_a_call_run_again_after_a_crash_answers_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn is cut while the search runs, before the call's result is committed; the next
    ``work()`` runs the call again (a read), which answers the same message: one committed
    row, the turn answered."""
    searching = anyio.Event()
    real_recall = Recall.recall
    cut = {"on": True}

    async def recall_then_hang(self: Any, *args: Any, **kwargs: Any) -> Any:
        hits = await real_recall(self, *args, **kwargs)
        if cut["on"]:
            searching.set()
            await anyio.sleep_forever()
        return hits

    monkeypatch.setattr(Recall, "recall", recall_then_hang)
    path = tmp_path / "afp.db"
    clock = FakeClock(START_MS)
    desk = agent()
    question = "RECALL " + json.dumps({"query": "warehouse 4471"})
    async with afp.open(path, clock=clock) as store:
        await store.run(desk, "The gate code for the Lisbon warehouse is 4471.")
        async with anyio.create_task_group() as group:
            group.start_soon(store.run, desk, question)
            await searching.wait()
            group.cancel_scope.cancel()
    cut["on"] = False
    async with afp.open(path, clock=clock) as store:
        [result] = await store.work(desk)
        rows = await store.findings(desk, kind="recall")
    assert result.status == "answered" and result.answer is not None
    assert result.answer.endswith("\nThe gate code for the Lisbon warehouse is 4471.")
    assert [(r["toolCallId"], len(r["returned"])) for r in rows] == [("r1", 1)]


async def test_the_april_july_golden_is_the_same_on_postgres(tmp_path: Path) -> None:
    """The scenario run on a fresh Postgres database gives its expected file byte for byte, as
    on SQLite."""
    data = await anyio.Path(SCENARIOS / "recall_april_july.json").read_bytes()
    expected = await anyio.Path(SCENARIOS / "recall_april_july.expected.json").read_bytes()
    on_sqlite = encode_result(await run_scenario(data, db_path=tmp_path / "afp.db"))
    async with FreshDatabase() as database:
        on_postgres = encode_result(await run_scenario(data, db_path=database.url))
    assert on_sqlite == expected
    assert on_postgres == expected
