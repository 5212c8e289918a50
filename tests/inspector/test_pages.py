"""The inspector's pages over HTTP (docs/inspector.md): the agents page, the server rules of
its paths, the sign-in with a token, and contents shown as text, never as markup."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from afp_runtime.agents import PortableCheckpoint, import_checkpoint
from afp_runtime.api.principals import Principals, add_token, parse_tokens
from afp_runtime.messages import Message
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import sliding_window
from tests.api.conftest import Api, agent, settle
from tests.api.test_folded import desk
from tests.inspector.conftest import ask_until_folded

TOKEN = "t" * 40
PLANTED = '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x'


async def test_the_agents_page_lists_every_agent_with_its_status_and_inbox(api: Api) -> None:
    """``GET /`` is an HTML page with a row per agent: id, status, inbox depth, questions."""
    definitions = [agent([answer("hi")], agent_id=name) for name in ("alpha", "beta")]
    async with api.running(*definitions) as (host, client):
        await host.post("alpha", "hello")
        await settle(host, "alpha")
        response = await client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    rows = re.findall(r'<tr data-agent="([^"]+)">(.*?)</tr>', response.text, re.S)
    assert [name for name, _ in rows] == ["alpha", "beta"]
    cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", rows[0][1], re.S)
    assert "idle" in cells[1] and cells[2].strip() == "0" and cells[4].strip() == "1"


async def test_every_page_carries_a_policy_that_forbids_inline_script(api: Api) -> None:
    """Pages and assets carry a CSP with ``script-src 'self'`` and no ``unsafe-inline``, and
    are neither framed, sniffed nor cached."""
    async with api.running(agent([answer("hi")])) as (_, client):
        types = {
            "/": "text/html; charset=utf-8",
            "/static/inspector.js": "text/javascript; charset=utf-8",
            "/static/inspector.css": "text/css; charset=utf-8",
        }
        for path, media_type in types.items():
            response = await client.get(path)
            assert response.status_code == 200, path
            assert response.headers["content-type"] == media_type  # the charset said once
            policy = response.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "unsafe-inline" not in policy
            assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["cache-control"] == "no-store"
        page = (await client.get("/")).text
    assert "<script>" not in page and '<script src="/static/inspector.js" defer>' in page


async def test_planted_markup_in_ids_and_models_is_shown_as_text(api: Api) -> None:
    """An agent id and a model name full of markup, ``javascript:`` links and control
    characters come out escaped: no element, attribute or link of theirs exists in the page."""
    sly = "sly-agent"
    model = ScriptedModel([answer("ok")], model="a<b>\"'&\x07\x1b" + PLANTED)
    async with api.running(agent(model, agent_id=sly)) as (_, client):
        text = (await client.get("/")).text
        rows = (await client.get("/fragments/agents")).text
    for page in (text, rows):
        assert (
            "<script>alert" not in page and "<img" not in page and '<a href="javascript' not in page
        )
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "a&lt;b&gt;&#34;&#39;&amp;\u2407\u241b" in page and "\x07" not in page


async def test_controls_that_reorder_or_hide_text_are_shown_by_their_code_point(api: Api) -> None:
    """A sender ending in a right-to-left override and a message holding C1 controls (NEL,
    CSI) and a bidi isolate come out as visible code points: none of those characters is in
    the page, so none can reverse the time and message shown after the sender."""
    async with api.running(agent([answer("ok")])) as (host, client):
        await host.post("ops", "C1:\x85\x9b31m \u2066end", sender="mallory\u202e")
        await settle(host)
        page = (await client.get("/agents/ops")).text
    assert '<span class="who">mallory\u27e8U+202E\u27e9</span>' in page
    assert "C1:\u27e8U+0085\u27e9\u27e8U+009B\u27e931m \u27e8U+2066\u27e9end" in page
    assert not any(ch in page for ch in "\x85\x9b\u202e\u2066")


async def test_without_a_token_a_page_needs_the_loopback_host(api: Api) -> None:
    """Without a token the pages answer only requests addressed to the loopback name, as the
    API does (DNS rebinding); unknown paths are 404 and a wrong method 405."""
    async with api.running(agent([answer("hi")])) as (host, _):
        async with api.client(host, base_url="http://evil.example") as stranger:
            assert (await stranger.get("/")).status_code == 400
        async with api.client(host) as client:
            assert (await client.get("/nothing-here")).status_code == 404
            refused = await client.delete("/")
            assert refused.status_code == 405 and "GET" in refused.headers["allow"]


async def test_with_a_token_a_browser_signs_in_once_and_keeps_a_strict_cookie(api: Api) -> None:
    """With a token, a page redirects to the sign-in form; the right token sets an HttpOnly,
    SameSite=Strict cookie that is not the token, the wrong one is refused."""
    async with api.running(agent([answer("hi")]), token=TOKEN) as (_, client):
        first = await client.get("/")
        assert first.status_code == 303 and first.headers["location"] == "/login"
        form = await client.get("/login")
        assert form.status_code == 200 and 'for="token"' in form.text
        wrong = await client.post("/login", data={"token": "x" * 40})
        assert wrong.status_code == 401 and "not this host" in wrong.text
        assert "set-cookie" not in wrong.headers
        right = await client.post("/login", data={"token": TOKEN})
        assert right.status_code == 303 and right.headers["location"] == "/"
        cookie = right.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
        signed = await client.get("/")
        assert signed.status_code == 200 and "<table" in signed.text
        # The cookie opens pages, never the API.
        api_refused = await client.get("/v1/agents")
        assert api_refused.status_code == 401
        out = await client.post("/logout")
        assert out.status_code == 303
        assert (await client.get("/")).status_code == 303


async def test_a_form_posted_from_another_origin_is_refused(api: Api) -> None:
    """A POST to a page whose ``Origin`` is another site is 403 and signs nobody in; a form
    body must be form-encoded."""
    async with api.running(agent([answer("hi")]), token=TOKEN) as (_, client):
        forged = await client.post(
            "/login", data={"token": TOKEN}, headers={"Origin": "http://evil.example"}
        )
        assert forged.status_code == 403 and "set-cookie" not in forged.headers
        as_json = await client.post("/login", json={"token": TOKEN})
        assert as_json.status_code == 415


async def test_the_timeline_shows_turns_runs_calls_and_the_message_as_text(api: Api) -> None:
    """``/agents/ID`` shows each turn with the person's message, its run with outcome and its
    model calls; markup planted in the message and the answer is escaped."""
    script = [tool_reply(call("c1", "alpha_tool")), answer("done " + PLANTED)]
    async with api.running(agent(script)) as (host, client):
        await host.post("ops", "please " + PLANTED)
        await settle(host)
        page = (await client.get("/agents/ops")).text
        missing = await client.get("/agents/nobody")
    turn = re.search(r'<article class="turn" data-turn="1">(.*?)</article>', page, re.S)
    assert turn is not None
    body = turn.group(1)
    assert "please &lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "done &lt;script&gt;" in body and "<script>alert" not in page and "<img" not in page
    assert re.findall(r'<tr data-call="(\d+)">', body) == ["1", "2"]
    assert "initial</span> run" in body and "status-answered" in body
    assert missing.status_code == 404


async def test_a_long_conversation_pages_its_turns(api: Api) -> None:
    """With more turns than a page holds, the newest 20 show first and a link leads to the
    older ones."""
    async with api.running(agent([answer(f"a{i}") for i in range(25)])) as (host, client):
        for i in range(25):
            await host.post("ops", f"m{i}")
        await settle(host)
        first = (await client.get("/agents/ops")).text
        older = re.search(r'href="(/agents/ops\?before=\d+)"', first)
        assert older is not None
        second = (await client.get(older.group(1))).text
    assert re.findall(r'data-turn="(\d+)"', first) == [str(t) for t in range(25, 5, -1)]
    assert re.findall(r'data-turn="(\d+)"', second) == [str(t) for t in range(5, 0, -1)]
    assert "Newest turns" in second and "Older turns" not in second


def _planting_tool() -> Tool:
    async def plant(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return "found " + PLANTED + "\x1b[31m"

    return Tool("plant_tool", "plants <b>markup</b>", {"type": "object"}, plant)


async def test_a_call_page_shows_what_was_sent_its_verdict_and_what_entered(api: Api) -> None:
    """Call 2 lists the messages as sent with the two that entered since call 1 marked, the
    receipt verified, and the tool's result (planted markup, an escape sequence) as text; call
    1 links on to call 2, and call 2, the newest, links on to nothing."""
    script = [tool_reply(call("c1", "plant_tool")), answer("done")]
    async with api.running(agent(script, tools=[_planting_tool()])) as (host, client):
        await host.post("ops", "go")
        await settle(host)
        first = (await client.get("/agents/ops/calls/1")).text
        second = (await client.get("/agents/ops/calls/2")).text
        missing = await client.get("/agents/ops/calls/3")
    assert '<span id="verdict">verified</span>' in first and "first call" in first
    assert '<span id="verdict">verified</span>' in second
    assert re.search(r'id="entered-count">2<', second) and re.search(r'id="left-count">0<', second)
    entered = re.findall(r'<li class="msg role-(\w+) entered"', second)
    assert entered == ["assistant", "tool"]
    assert "found &lt;script&gt;alert(1)&lt;/script&gt;&lt;img" in second
    assert "\x1b" not in second and "\u241b[31m" in second
    assert "plants &lt;b&gt;markup&lt;/b&gt;" in second
    assert "<script>alert" not in second and "<img" not in second
    assert missing.status_code == 404
    assert 'href="/agents/ops/calls/2">Next call<' in first
    assert "Next call" not in second


async def test_a_call_page_names_what_left_the_window_and_why(api: Api) -> None:
    """Under a sliding window keeping one turn, the second turn's call shows the first turn's
    messages as left, with the window visit that removed them."""
    script = [answer("first answer"), answer("second answer")]
    window = sliding_window(keep_recent_turns=1)
    async with api.running(agent(script, window=window)) as (host, client):
        await host.post("ops", "first question")
        await settle(host)
        await host.post("ops", "second question")
        await settle(host)
        page = (await client.get("/agents/ops/calls/2")).text
    left = re.search(r'<ol class="messages left">(.*?)</ol>', page, re.S)
    assert left is not None and "first question" in left.group(1)
    assert re.search(r"sliding-window at window#\d+: \d+ messages left", page)
    assert re.search(r"id=\"left-count\">[1-9]", page)


async def test_folds_list_and_one_fold_by_a_prefix_with_its_originals(api: Api) -> None:
    """An agent that folded under ``retain = "conversation"``: its folds page lists the span, a
    12-digit prefix opens it with its summary and every original message, the find form
    redirects to it, and a prefix of no fold is 404 (a malformed one 400)."""
    async with api.running(desk("keep", "conversation")) as (host, client):
        spans = await ask_until_folded(host)
        listing = (await client.get("/agents/keep/folds")).text
        span = spans[0]
        page = (await client.get(f"/agents/keep/folds/{span.summary_fingerprint[:12]}")).text
        found = await client.get(f"/agents/keep/folds?prefix={span.summary_fingerprint[:8]}")
        absent = await client.get("/agents/keep/folds/" + "0" * 12)
        malformed = await client.get("/agents/keep/folds/XYZ")
        originals, _ = await host.reader.resolve("keep", span.messages)  # type: ignore[arg-type]
    assert spans
    assert re.findall(r'<tr data-fold="([0-9a-f]{64})">', listing) == [
        s.summary_fingerprint for s in spans
    ]
    kept = re.search(r'<ol class="messages originals">(.*?)</ol>', page, re.S)
    assert kept is not None
    assert len(re.findall(r'<li class="msg', kept.group(1))) == span.message_count
    assert '<ol class="messages summary">' in page
    first = originals[0].content.replace("&", "&amp;").replace("'", "&#39;")
    assert first[:40] in kept.group(1)
    assert found.status_code == 303 and found.headers["location"].endswith(
        span.summary_fingerprint[:8]
    )
    assert absent.status_code == 404 and malformed.status_code == 400


async def _ask(args: Mapping[str, Any], ctx: ToolContext) -> Any:
    ctx.ask_person("which host?")


def _asking_agent() -> Any:
    return agent(
        [tool_reply(call("c1", "beta_tool")), answer("restarted it")],
        tools=[Tool("beta_tool", "asks", {"type": "object"}, _ask)],
    )


async def test_a_question_is_answered_from_the_timeline_with_the_owner_rules(api: Api) -> None:
    """A paused turn's question shows a labelled form; a post from another principal is
    refused (403, the question stays open), an empty answer is refused (422), and the owner's
    answer closes it (303 back to the timeline) and the turn goes on to its answer."""
    async with api.running(_asking_agent()) as (host, client):
        await host.post("ops", "restart the web server", sender="ana")
        await settle(host)
        [question] = await host.reader.questions("ops")
        page = (await client.get("/agents/ops")).text
        action = f"/agents/ops/questions/{question.question_id}/answer"
        stranger = await client.post(action, data={"value": "web-1", "from": "bob"})
        empty = await client.post(action, data={"value": "", "from": "ana"})
        still = (await host.reader.questions("ops"))[0].status
        done = await client.post(action, data={"value": "web-1", "from": "ana"})
        await settle(host)
        [closed] = await host.reader.questions("ops")
        runs = [(r.kind, r.status) for r in await host.reader.runs("ops")]
    assert f'action="{action}"' in page and f'<label for="value-{question.question_id}">' in page
    assert stranger.status_code == 403 and 'role="alert"' in stranger.text
    assert empty.status_code == 422 and "refused" in empty.text
    assert still == "open"
    assert done.status_code == 303 and done.headers["location"].startswith("/agents/ops")
    assert closed.status == "answered" and closed.answer == "web-1"
    assert runs == [("initial", "paused"), ("answer", "answered")]


async def test_a_question_is_abandoned_from_the_timeline(api: Api) -> None:
    """The abandon form closes the question unanswered, and a second post says it is closed."""
    async with api.running(_asking_agent()) as (host, client):
        await host.post("ops", "restart the web server")
        await settle(host)
        [question] = await host.reader.questions("ops")
        action = f"/agents/ops/questions/{question.question_id}/abandon"
        first = await client.post(action)
        again = await client.post(action)
        await settle(host)
        [closed] = await host.reader.questions("ops")
    assert first.status_code == 303 and closed.status == "abandoned"
    assert again.status_code == 409 and "closed already" in again.text


async def test_the_owner_abandons_a_question_of_an_owned_conversation(api: Api) -> None:
    """On a conversation that has an owner, the abandon form carries its own "abandoning as"
    field: posted empty it is refused (403, in the page's words), naming the owner closes the
    question."""
    async with api.running(_asking_agent()) as (host, client):
        await host.post("ops", "restart the web server", sender="ana")
        await settle(host)
        [question] = await host.reader.questions("ops")
        page = (await client.get("/agents/ops")).text
        action = f"/agents/ops/questions/{question.question_id}/abandon"
        nameless = await client.post(action, data={"from": ""})
        done = await client.post(action, data={"from": "ana"})
        await settle(host)
        [closed] = await host.reader.questions("ops")
    form = re.search(rf'<form[^>]*action="{action}".*?</form>', page, re.S)
    assert form is not None and 'name="from"' in form.group(0)
    assert nameless.status_code == 403 and "name it in “Abandoning as”" in nameless.text
    assert done.status_code == 303 and closed.status == "abandoned"


async def test_a_form_that_is_not_utf8_is_refused_and_nothing_is_stored(api: Api) -> None:
    """An answer whose bytes, or whose %-escapes, are not UTF-8 (a lone surrogate, 0xFF) is
    refused with 400 naming the form, and the question stays open, not answered with
    replacement characters."""
    async with api.running(_asking_agent()) as (host, client):
        await host.post("ops", "restart the web server")
        await settle(host)
        [question] = await host.reader.questions("ops")
        action = f"/agents/ops/questions/{question.question_id}/answer"
        form = {"content-type": "application/x-www-form-urlencoded"}
        refused = [
            await client.post(action, content=body, headers=form)
            for body in (b"value=%ED%A0%80", b"value=%FF%FE", b"value=\xff")
        ]
        [still] = await host.reader.questions("ops")
    assert [r.status_code for r in refused] == [400, 400, 400]
    assert all("not UTF-8" in r.text for r in refused)
    assert still.status == "open" and still.answer is None


async def test_a_call_that_sent_many_messages_pages_them(api: Api) -> None:
    """A call sent after an imported history of 450 messages lists the last 200 first, with a
    link to the earlier ones; the counts cover every message."""
    history = tuple(
        Message(role="user" if i % 2 == 0 else "assistant", content=f"line {i}") for i in range(450)
    )
    checkpoint = PortableCheckpoint(version=1, agent_id="ops", history=history)
    store = await SqliteStore.open(api.path, now_ms=api.clock.now_ms())
    try:
        await import_checkpoint(store, "ops", checkpoint, now_ms=api.clock.now_ms())
    finally:
        await store.aclose()
    async with api.running(agent([answer("ok")])) as (host, client):
        await host.post("ops", "and one more")
        await settle(host)
        last = (await client.get("/agents/ops/calls/1")).text
        earlier = re.search(r'href="\?first=(\d+)">Earlier messages', last)
        assert earlier is not None
        page = (await client.get(f"/agents/ops/calls/1?first={earlier.group(1)}")).text
    indexes = [int(i) for i in re.findall(r'<li class="msg[^"]*" data-index="(\d+)"', last)]
    assert indexes == list(range(251, 451)) and "Messages as sent (451)" in last
    assert earlier.group(1) == "51"
    shown = [int(i) for i in re.findall(r'<li class="msg[^"]*" data-index="(\d+)"', page)]
    assert shown == list(range(51, 251)) and "Later messages" in page


async def test_a_refused_page_asked_for_by_a_browser_is_a_page_saying_why(api: Api) -> None:
    """A browser (``Accept: text/html``) asking for an agent that does not exist, or a path
    no page answers, gets an HTML page with the API's status, code and message, the planted
    value escaped; a client asking for JSON, and every ``/v1/`` path, gets the JSON problem."""
    browser = {"Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"}
    async with api.running(agent([answer("hi")])) as (_, client):
        missing = await client.get("/agents/nobody", headers=browser)
        unknown = await client.get("/no-page/" + PLANTED, headers=browser)
        as_json = await client.get("/agents/nobody", headers={"Accept": "application/json"})
        api_path = await client.get("/v1/agents/nobody", headers=browser)
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in missing.headers["content-security-policy"]
    assert re.search(r'<p role="alert" class="error" id="problem">[^<]*nobody', missing.text)
    assert "<code>agent-not-found</code>" in missing.text
    assert unknown.status_code == 404 and "<code>route-not-found</code>" in unknown.text
    assert "<script>alert" not in unknown.text and "<img" not in unknown.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in unknown.text
    assert as_json.status_code == 404 and as_json.json()["error"]["code"] == "agent-not-found"
    assert api_path.status_code == 404 and api_path.json()["error"]["code"] == "agent-not-found"


async def test_a_session_answers_as_the_principal_it_signed_in_with(
    api: Api, tmp_path: Path
) -> None:
    """Signed in with bob's token, the form answers as bob: left empty it is bob, and ana's
    question is refused (403) naming bob; naming ana is refused too. Signed in with ana's token,
    the empty form answers as ana and closes the question."""
    tokens = tmp_path / "afp.db.tokens"

    def write() -> tuple[str, str, Principals]:
        ana, bob = (add_token(tokens, name, admin=False) for name in ("ana", "bob"))
        return ana, bob, parse_tokens(tokens.read_text(encoding="utf-8"), source=str(tokens))

    ana, bob, principals = await anyio.to_thread.run_sync(write)
    async with api.running(_asking_agent(), principals=principals) as (host, client):
        await host.post("ops", "restart the web server", sender="ana")
        await settle(host)
        [question] = await host.reader.questions("ops")
        action = f"/agents/ops/questions/{question.question_id}/answer"
        signed = await client.post("/login", data={"token": bob})
        as_bob = await client.post(action, data={"value": "web-1"})
        posing = await client.post(action, data={"value": "web-1", "from": "ana"})
        still = (await host.reader.questions("ops"))[0].status
        client.cookies.clear()
        await client.post("/login", data={"token": ana})
        as_ana = await client.post(action, data={"value": "web-1"})
        await settle(host)
        [closed] = await host.reader.questions("ops")
    assert signed.status_code == 303
    assert as_bob.status_code == 403 and "“bob”" in as_bob.text
    assert posing.status_code == 403 and "signed in as “bob”" in posing.text
    assert still == "open"
    assert as_ana.status_code == 303 and closed.status == "answered"
