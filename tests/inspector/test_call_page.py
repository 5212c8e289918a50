"""The call page over HTTP (docs/inspector.md#one-call): what the model was sent first (system,
tools with their schemas, messages with a fold's summary in place and linked to its originals),
then how the call ended (the reply, the failure, the retries, or no reply after a crash), then
the receipt in words with each gap's sentence, then the change since the call before."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

import anyio
from markupsafe import escape

from afp_runtime.app import reason_text
from afp_runtime.errors import ModelCallError
from afp_runtime.models import ScriptedModel, StreamedReply
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from tests.api.conftest import Api, agent, settle
from tests.api.test_folded import desk
from tests.crossed_calls import AGENT, crossed, support
from tests.inspector.conftest import ask_until_folded

PLANTED = '<script>alert(1)</script><img src=x onerror="alert(2)"> "quoted" \'single\''
SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "description": "The order's number, as printed"},
        "amount": {"type": ["number", "null"], "description": "Euros to refund"},
    },
    "required": ["order_id"],
}


async def _refund(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "refunded"


def refund_tool(description: str = "Refund an order.", schema: Any = None) -> Tool:
    """``refund``, with a schema of two described properties."""
    return Tool("refund", description, schema or SCHEMA, _refund)


def _section(page: str, title_id: str) -> str:
    """The section a heading id names, with the sections inside it."""
    start = page.index(f'<section aria-labelledby="{title_id}"')
    depth, at = 0, start
    for tag in re.finditer(r"<(/?)section\b", page[start:]):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            at = start + tag.end()
            break
    return page[start:at]


async def test_a_replied_call_leads_with_what_was_sent_then_the_reply(api: Api) -> None:
    """Call 1 shows the system text, the tool with its schema's properties (described, typed,
    the required one said) and the whole schema, the message, then the reply's tool call with
    its arguments, outcome ``replied`` in one send; call 2 shows the reply's text. What was
    sent comes first, the ending next, the change since the call before last."""
    script = [tool_reply(call("c1", "refund", order_id="4520")), answer("Refunded order 4520.")]
    async with api.running(agent(script, tools=[refund_tool()])) as (host, client):
        await host.post("ops", "Please refund order 4520")
        await settle(host)
        first = (await client.get("/agents/ops/calls/1")).text
        second = (await client.get("/agents/ops/calls/2")).text
    sent = _section(first, "sent-title")
    assert "you are a bot" in sent and "Please refund order 4520" in sent
    tool = re.search(r'<li class="offered change-same" data-tool="refund">.*?</li>', sent, re.S)
    assert tool is not None and "Refund an order." in tool.group(0)
    rows = re.findall(r"<tr><td><code class=\"text\">(\w+)</code></td>(.*?)</tr>", tool.group(0))
    assert [name for name, _ in rows] == ["order_id", "amount"]  # in the schema's order
    assert "The order&#39;s number, as printed" in rows[0][1] and "<td>yes</td>" in rows[0][1]
    assert "number or null" in rows[1][1] and "<td>no</td>" in rows[1][1]
    assert "&#34;required&#34;: [\n    &#34;order_id&#34;\n  ]" in tool.group(0)  # whole schema
    ending = _section(first, "ending-title")
    assert '<span id="outcome">replied</span>' in ending
    assert '<td class="num" id="attempts">1</td>' in ending
    assert re.search(r'reply-call">calls <span class="tool">refund</span> \(c1\)', ending)
    assert "&#34;order_id&#34;: &#34;4520&#34;" in ending
    assert "Refunded order 4520." in _section(second, "ending-title")
    assert '<p id="verdict-text">The receipt matches what was sent.</p>' in second
    order = [second.index(f'id="{part}-title"') for part in ("sent", "ending", "verdict", "diff")]
    assert order == sorted(order)


async def test_a_call_abandoned_by_a_crash_says_so_and_that_no_reply_came(api: Api) -> None:
    """Call 3 of ``tests/crossed_calls.py``, cut off by a crash after its receipt committed:
    outcome ``abandoned``, the page says a crash abandoned it, and the verdict's words say the
    receipt matches what was sent but no reply came; no reply or attempt is shown."""
    await crossed(api.path)
    async with api.running(support()) as (_, client):
        page = (await client.get(f"/agents/{AGENT}/calls/3")).text
        replied = (await client.get(f"/agents/{AGENT}/calls/4")).text
    ending = _section(page, "ending-title")
    assert '<span id="outcome">abandoned</span>' in ending
    assert "Abandoned by a crash." in ending and "<h3>Reply</h3>" not in ending
    assert '<td class="num" id="attempts">0</td>' in ending
    assert "abandoned by a crash</strong>" in page
    said = re.search(r'<p id="verdict-text">(.*?)</p>', page)
    assert said is not None and "matches what was sent" in said.group(1)
    assert "no reply came" in said.group(1) and "crash" in said.group(1)
    assert '<span id="verdict">verified</span> <span class="verdict-scope">' in page
    assert '<span id="outcome">replied</span>' in replied
    assert "no reply" not in _section(replied, "verdict-title")


async def test_a_call_still_being_answered_says_no_reply_has_come_yet(api: Api) -> None:
    """While the model is streaming its reply, the call reads ``in-flight`` and the receipt's
    words say no reply has come yet; once it ends the same page reads ``replied``."""
    streaming, gate = anyio.Event(), anyio.Event()

    async def hold(index: int) -> None:
        if index == 1:
            streaming.set()
            await gate.wait()

    script = [StreamedReply(reply=answer("at last"), sizes=(2,), pause=hold)]
    async with api.running(agent(ScriptedModel(script, model="mock"))) as (host, client):
        await host.post("ops", "go")
        with anyio.fail_after(30):
            await streaming.wait()
        during = (await client.get("/agents/ops/calls/1")).text
        gate.set()
        await settle(host)
        after = (await client.get("/agents/ops/calls/1")).text
    assert '<span id="outcome">in-flight</span>' in during
    assert "(what was sent; no reply yet)" in during and "no reply has come yet" in during
    assert '<span id="outcome">replied</span>' in after and "at last" in after


async def test_a_failed_call_shows_its_error_and_a_retried_one_its_attempts(api: Api) -> None:
    """A call refused by the provider shows outcome ``failed`` with the error's kind, status
    and message; a call whose first send failed and whose second answered shows two
    attempts."""
    refused = ModelCallError(
        "the key was refused", error_kind="auth", provider="scripted", status=401
    )
    flaky = ModelCallError(
        "overloaded", error_kind="server", provider="scripted", retryable=True, retry_after_s=0
    )
    async with api.running(
        agent(ScriptedModel([refused], model="mock"), agent_id="held"),
        agent(ScriptedModel([flaky, answer("second try")], model="mock"), agent_id="flaky"),
    ) as (host, client):
        await host.post("held", "go")
        await host.post("flaky", "go")
        await settle(host, "held")
        await settle(host, "flaky")
        failed = (await client.get("/agents/held/calls/1")).text
        retried = (await client.get("/agents/flaky/calls/1")).text
    ending = _section(failed, "ending-title")
    assert '<span id="outcome">failed</span>' in ending
    assert '<code class="text" id="error-kind">auth</code> (HTTP 401)' in ending
    assert '<span class="text" id="error">the key was refused</span>' in ending
    assert "no reply came: the call failed" in failed
    ending = _section(retried, "ending-title")
    assert '<td class="num" id="attempts">2</td>' in ending and 'id="retried"' in ending
    assert "second try" in ending


async def test_a_fold_summary_is_shown_in_place_and_links_to_its_originals(api: Api) -> None:
    """The call after a fold lists the summary where it was sent, not folded away, marked as a
    fold's summary with a link to the fold's page, which holds the originals it replaced."""
    async with api.running(desk("keep", "conversation")) as (host, client):
        [span, *_] = await ask_until_folded(host)
        state = await host.reader.conversation_state("keep")
        assert state is not None
        pages = [
            (await client.get(f"/agents/keep/calls/{n}")).text
            for n in range(1, state.model_calls + 1)
        ]
        marked = [page for page in pages if "fold-summary" in page]
        assert marked, "no call lists a fold summary"
        link = re.search(r'<a class="fold-link" href="([^"]+)">the (\d+) messages', marked[0])
        assert link is not None
        fold = await client.get(html.unescape(link.group(1)))
    assert link.group(1) == f"/agents/keep/folds/{span.summary_fingerprint[:12]}"
    assert int(link.group(2)) == span.message_count
    summary = re.search(
        r'<li class="msg role-\w+( entered)? fold-summary".*?</li>', marked[0], re.S
    )
    assert summary is not None and '<details class="long">' not in summary.group(0)
    assert fold.status_code == 200 and '<ol class="messages originals">' in fold.text


async def test_every_gap_of_the_view_is_shown_with_its_sentence(api: Api) -> None:
    """A scripted call's view has the ``provider-defaults`` gap: the page names it with the
    sentence of ``afp_runtime.app.reason_text`` beside it."""
    async with api.running(agent([answer("hi")])) as (host, client):
        await host.post("ops", "hello")
        await settle(host)
        page = (await client.get("/agents/ops/calls/1")).text
    sentence = reason_text("provider-defaults")
    assert sentence is not None
    gaps = re.search(r'<dl class="gaps">(.*?)</dl>', page, re.S)
    assert gaps is not None
    expected = f"<dt><code>provider-defaults</code></dt><dd>{escape(sentence)}</dd>"
    assert expected in gaps.group(1)


async def test_hostile_text_in_every_new_field_is_escaped(api: Api) -> None:
    """Markup and quotes in a tool's description, a schema property's name and description,
    the reply's text and a tool call's arguments, and in a failure's message, come out as
    text; no element is made of them."""
    schema = {
        "type": "object",
        "properties": {PLANTED: {"type": "string", "description": "says " + PLANTED}},
    }
    script = [tool_reply(call("c1", "refund", note=PLANTED)), answer("done " + PLANTED)]
    refused = ModelCallError("refused " + PLANTED, error_kind="auth", provider="scripted")
    async with api.running(
        agent(script, tools=[refund_tool("refunds " + PLANTED, schema)]),
        agent(ScriptedModel([refused], model="mock"), agent_id="held"),
    ) as (host, client):
        await host.post("ops", "go")
        await host.post("held", "go")
        await settle(host, "ops")
        await settle(host, "held")
        pages = [(await client.get(p)).text for p in ("/agents/ops/calls/1", "/agents/ops/calls/2")]
        failed = (await client.get("/agents/held/calls/1")).text
    escaped = str(escape(PLANTED))
    tools = _section(pages[0], "tools-title")
    assert "refunds " + escaped in tools and "says " + escaped in tools
    assert f'<code class="text">{escaped}</code>' in tools
    assert "done " + escaped in _section(pages[1], "ending-title")
    assert "refused " + escaped in _section(failed, "ending-title")
    for page in (*pages, failed):
        assert "<script>alert" not in page and "<img" not in page
