"""What the timeline shows beyond turns and calls (docs/inspector.md#timeline): the pins a
window visit held and a pin standing down, the folds of a run, the findings standings and
conflicts of a turn, and its call-window rows."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

import httpx

from afp_runtime.app import reason_text
from afp_runtime.cost import Price
from afp_runtime.findings import FindingsConfig
from afp_runtime.messages import Usage
from afp_runtime.permissions import Rule
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.time import Period, TimeConfig
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import sliding_window
from tests.api.conftest import Api, agent, serving, settle
from tests.api.test_events import collect
from tests.api.test_folded import desk
from tests.inspector.conftest import ask_until_folded

PLANTED = "<script>alert(1)</script>"
TOKEN = "s" * 40


async def _said(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return f"{ctx.tool_call_id} {PLANTED} done"


def _tool(name: str, **options: Any) -> Tool:
    return Tool(name, f"the {name} tool", {"type": "object"}, _said, **options)


def _table(page: str, css_class: str) -> str:
    found = re.search(rf'<table class="{css_class}">(.*?)</table>', page, re.S)
    assert found is not None, f"no table {css_class}"
    return found.group(1)


async def test_a_visit_shows_the_pins_it_held_and_the_pin_standing_down(api: Api) -> None:
    """Keeping one turn with two latest-result pins, the second and third visits hold the
    earlier rounds by their pins (tool, turn, size) and the fourth stands the pin down."""
    names = ["look_around", "move_left", "move_right", "move_forward"]
    script = [tool_reply(call(f"c{i}", name)) for i, name in enumerate(names, start=1)]
    definition = agent(
        [*script, answer("walked")],
        tools=[_tool(name) for name in names],
        window=sliding_window(keep_recent_turns=1),
        keep_last_tool_results=2,
    )
    async with api.running(definition) as (host, client):
        await host.post("ops", "explore")
        await settle(host)
        page = (await client.get("/agents/ops")).text
    rows = re.findall(r'<tr class="visit">(.*?)</tr>', _table(page, "visits"), re.S)
    pins = [re.search(r'<td class="pins">(.*?)</td>', row, re.S).group(1) for row in rows]  # type: ignore[union-attr]
    downs = [re.search(r'<td class="stand-down">(.*?)</td>', row, re.S).group(1) for row in rows]  # type: ignore[union-attr]
    assert len(rows) == 4
    assert re.search(r"latest result look_around \(turn 1, \d+ chars\)", pins[1])
    assert "latest result move_left" in pins[2] and "latest result look_around" in pins[2]
    assert downs[:3] == ["", "", ""] and downs[3] == "latest result pin stood down"
    assert pins[3] == ""


async def test_a_run_that_folded_links_each_fold_from_the_timeline(api: Api) -> None:
    """An agent folding under summarize-oldest shows, under the run that folded, each fold's
    size and a link to it by its fingerprint."""
    async with api.running(desk("keep", "conversation")) as (host, client):
        spans = await ask_until_folded(host)
        page = (await client.get("/agents/keep")).text
    assert spans
    markers = re.findall(r'<li class="fold-marker" data-fold="([0-9a-f]{64})">', page)
    assert sorted(markers) == sorted(s.summary_fingerprint for s in spans)
    span = spans[0]
    assert f'href="/agents/keep/folds/{span.summary_fingerprint[:12]}"' in page
    assert f"Folded {span.message_count} messages at iteration {span.iteration}" in page


def _fact(call_id: str, value: str) -> dict[str, Any]:
    assertion = {"subject": {"kind": "host", "id": "db-1"}, "predicate": "status", "value": value}
    return {"toolCallId": call_id, "standing": "fact", "assertions": [assertion]}


async def test_a_turn_shows_its_findings_standings_and_conflicts(api: Api) -> None:
    """An armed agent that declares two results facts with different values for the same key:
    the turn lists both standings with their assertions and the conflict between them."""
    script = [
        tool_reply(call("r1", "alpha_tool")),
        tool_reply(
            call("r2", "alpha_tool", _findings={"basis": "direct", "previous": [_fact("r1", "up")]})
        ),
        tool_reply(
            call(
                "r3", "alpha_tool", _findings={"basis": "direct", "previous": [_fact("r2", "down")]}
            )
        ),
        answer("db-1 flaps"),
    ]
    async with api.running(agent(script, findings=FindingsConfig())) as (host, client):
        await host.post("ops", "is db-1 up?")
        await settle(host)
        page = (await client.get("/agents/ops")).text
    standings = _table(page, "standings")
    assert re.findall(r'<tr data-standing="([^"]+)">', standings) == ["r1", "r2"]
    assert standings.count('class="standing standing-fact">fact') == 2
    conflict = re.search(r'<p class="conflict">(.*?)</p>', page, re.S)
    assert conflict is not None and "host/db-1/status" in conflict.group(1)
    assert "r1" in conflict.group(1) and "r2" in conflict.group(1)


async def test_a_turn_shows_the_time_window_decided_for_each_call(api: Api) -> None:
    """A tool with a period argument, called in a turn whose message carries a window: the
    turn lists the call's call-window row, how it was decided and the window asked for."""
    tool = Tool(
        "activity",
        "Activity.",
        {"type": "object", "properties": {"window": {"type": "string"}}},
        _said,
        period=Period(argument="window", accepts=("iso-range",)),
    )
    definition = agent(
        [tool_reply(call("c1", "activity")), answer("quiet")],
        tools=[tool],
        time=TimeConfig(zone="UTC"),
    )
    window = {"from": "2026-10-09T14:00:00Z", "to": "2026-10-09T15:00:00Z"}
    async with api.running(definition) as (host, client):
        await host.post("ops", "any activity?", time={"window": window})
        await settle(host)
        page = (await client.get("/agents/ops")).text
        rows = await host.reader.ledger("ops", kind="call-window")
    assert [row.how for row in rows] == ["filled"]
    table = _table(page, "call-windows")
    assert re.findall(r'<tr data-call-window="([^"]+)">', table) == ["c1"]
    assert '<td class="how">filled</td>' in table
    assert "2026-10-09T14:00:00Z → 2026-10-09T15:00:00Z" in table


async def test_a_turn_shows_its_permission_decisions_and_a_run_its_cost(api: Api) -> None:
    """A gated, priced agent: the turn lists each call's decision with its rule and reason
    (escaped), and the run its cost."""
    definition = agent(
        [
            tool_reply(call("c1", "alpha_tool"), usage=Usage(input=1000, output=10)),
            answer("done", usage=Usage(input=500, output=10)),
        ],
        permissions=[Rule(tool="alpha_tool", decision="deny", name="no-alpha", reason=PLANTED)],
        pricing={"mock": Price(input=1e-6, output=1e-5)},
    )
    async with api.running(definition) as (host, client):
        await host.post("ops", "go")
        await settle(host)
        page = (await client.get("/agents/ops")).text
    table = _table(page, "permissions")
    assert re.findall(r'<tr data-permission="([^"]+)">', table) == ["c1"]
    assert '<td class="decision decision-deny">deny</td>' in table
    assert "no-alpha" in table and PLANTED not in table
    assert "&lt;script&gt;" in table
    assert '<span class="cost">cost 0.0017</span>' in page


async def test_the_live_stream_carries_the_agents_events_as_plain_messages(api: Api) -> None:
    """``/agents/ID/live`` streams the agent's events without ``event:`` lines (so a browser
    hears each as a message), resumes after ``Last-Event-ID``, and needs the sign-in."""
    async with api.running(agent([answer("hi")]), token=TOKEN) as (host, _):
        await host.post("ops", "hello")
        await settle(host)
        last, boot = host.events.last_id, host.events.boot_id
        async with serving(api.app(host, token=TOKEN)) as url:
            async with httpx.AsyncClient(base_url=url) as anonymous:
                refused = await anonymous.get("/agents/ops/live", follow_redirects=False)
            signed = {"Authorization": f"Bearer {TOKEN}", "Last-Event-ID": f"{boot}-2"}
            async with httpx.AsyncClient(base_url=url, headers=signed) as client:
                seen = await collect(client, "/agents/ops/live", until=last)
                missing = await client.get("/agents/nobody/live")
    assert refused.status_code == 303 and refused.headers["location"] == "/login"
    assert [int(f["id"].rpartition("-")[2]) for f in seen] == list(range(3, last + 1))
    assert all("event" not in f and f["data"]["agentId"] == "ops" for f in seen)
    assert missing.status_code == 404


def _runs(page: str) -> list[tuple[str, str]]:
    """Each run's ``details`` opening tag and its summary line, in page order."""
    return re.findall(r'(<details class="run"[^>]*>)\s*<summary>(.*?)</summary>', page, re.S)


def _words(fragment: str) -> str:
    """An HTML fragment's text as a person reads it (tags dropped, spaces collapsed)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


async def test_each_run_is_one_closed_summary_line_with_its_answers_first_line(api: Api) -> None:
    """Three turns, three runs: each a closed ``details`` whose summary line says the kind,
    status, usage, how many calls and the answer's first line only (markup in it escaped),
    while the run's body keeps the whole answer."""
    first = PLANTED + " line one"
    script = [
        tool_reply(call("c1", "alpha_tool"), usage=Usage(input=30, output=5)),
        answer(first + "\nline two\nline three", usage=Usage(input=40, output=6)),
        answer("x" * 400),
        answer("plain"),
    ]
    async with api.running(agent(script)) as (host, client):
        for text in ("one", "two", "three"):
            await host.post("ops", text)
            await settle(host)
        page = (await client.get("/agents/ops")).text
    runs = _runs(page)
    assert len(runs) == 3
    assert all(" open" not in tag for tag, _ in runs)
    newest, middle, oldest = (_words(summary) for _, summary in runs)
    assert newest.endswith("1 call plain") and newest.startswith("initial run answered")
    assert middle.endswith("x" * 159 + "…")  # a long line is cut, the cut said
    assert "70 in · 11 out · 2 calls " + first + " …" in oldest  # the first line of three
    assert "line two" not in oldest
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; line one" in page
    body = page.split(runs[2][1], 1)[1]
    assert "line one\nline two\nline three" in body  # the run's body has the whole answer


async def _ask(args: Mapping[str, Any], ctx: ToolContext) -> Any:
    ctx.ask_person(f"which host for {ctx.tool_call_id}? {PLANTED}")


def _asking(turns: int) -> Any:
    """An agent whose every turn asks a person once, then answers."""
    script = [
        entry
        for i in range(1, turns + 1)
        for entry in (tool_reply(call(f"c{i}", "beta_tool")), answer(f"answer {i}"))
    ]
    return agent(script, tools=[Tool("beta_tool", "asks", {"type": "object"}, _ask)])


async def test_settled_questions_collapse_into_one_counted_line_under_the_open_one(
    api: Api,
) -> None:
    """Two questions answered, one abandoned and one open: the open one leads, in full with
    its form; the three settled ones sit in one closed ``details`` that counts them by
    status."""
    async with api.running(_asking(4)) as (host, client):
        for i, close in enumerate(("answer", "answer", "abandon", None), start=1):
            await host.post("ops", f"turn {i}")
            await settle(host)
            [question] = await host.reader.questions("ops", status="open")
            if close == "answer":
                await host.answer("ops", question.question_id, f"web-{i}")
            elif close == "abandon":
                await host.abandon("ops", question.question_id)
            await settle(host)
        page = (await client.get("/agents/ops")).text
    questions = page.split('<div id="live-questions">', 1)[1].split('id="live-turns"', 1)[0]
    opened, _, settled = questions.partition('<details class="settled-questions"')
    assert "Questions waiting for an answer (1)" in opened
    assert re.findall(r'class="question question-(\w+)"', opened) == ["open"]
    assert "c4?" in opened and 'class="answer-form"' in opened
    tag, _, rest = settled.partition(">")
    assert " open" not in tag
    summary = re.search(r"<summary>(.*?)</summary>", rest, re.S)
    assert summary is not None and summary.group(1) == "2 answered and 1 abandoned questions"
    assert sorted(re.findall(r'class="question question-(\w+)"', rest)) == [
        "abandoned",
        "answered",
        "answered",
    ]
    assert "answer-form" not in rest and "&lt;script&gt;" in rest and "<script>" not in questions


async def test_kept_reasons_and_gaps_show_their_sentences_from_the_reasons_table(
    api: Api,
) -> None:
    """A window visit's "kept because" codes and a call's gaps each stand beside their
    sentence from ``afp_runtime.app.reason_text``, never a sentence of the page's own."""
    async with api.running(desk("keep", "conversation")) as (host, client):
        await ask_until_folded(host)
        page = (await client.get("/agents/keep")).text
    kept = re.findall(r'<td class="kept-because">(.*?)</td>', page, re.S)
    gaps = re.findall(r'<td class="gaps">(.*?)</td>', page, re.S)
    codes = {
        code
        for cell in kept + gaps
        for code in re.findall(r'<code class="code">(.*?)</code>', cell)
    }
    assert {"inside-keep-window", "provider-defaults"} <= codes
    for cell in kept + gaps:
        for code, sentence in re.findall(
            r'<code class="code">(.*?)</code>(?: <span class="reason">(.*?)</span>)?', cell
        ):
            assert html.unescape(sentence) == (reason_text(code) or ""), code
