"""A page of another site cannot make a browser act on the API
(docs/api.md#dns-rebinding-and-browsers): real chromium loads a page of ``http://elsewhere.test``
that auto-submits an empty form to the API's mutation routes on a loopback server without
tokens; each is refused and nothing changes."""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable

import pytest
from blockbuster import BlockBuster
from playwright.async_api import Page, Route

from afp_runtime.errors import ModelCallError
from afp_runtime.host import Host
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import answer, call, tool_reply
from tests.api.conftest import Api, agent, serving, until, watch_of
from tests.api.test_questions import asking_tool, paused

ELSEWHERE = "http://elsewhere.test/"


@pytest.fixture(autouse=True, name="blockbuster")
def fixture_blockbuster(scan_ours: BlockBuster) -> BlockBuster:
    """Blocking calls are checked in afp_runtime only (``scan_ours``)."""
    return scan_ours


def _attack(action: str, enctype: str) -> str:
    """Another site's page posting an empty form to ``action`` as soon as it loads."""
    return (
        "<!doctype html><title>win a prize</title>"
        f'<form method="post" action="{html.escape(action)}" enctype="{enctype}"></form>'
        "<script>document.forms[0].submit()</script>"
    )


async def _held(host: Host, agent_id: str) -> bool:
    rows = await host.reader.inbox(agent_id)
    return bool(rows) and rows[0].status == "held" and not watch_of(host).working(agent_id)


def _serving_page(body: str) -> Callable[[Route], Awaitable[None]]:
    """A route handler answering with ``body`` as the page of ``ELSEWHERE``."""

    async def fulfil(route: Route) -> None:
        await route.fulfill(status=200, content_type="text/html", body=body)

    return fulfil


@pytest.mark.parametrize("enctype", ["text/plain", "application/x-www-form-urlencoded"])
async def test_another_sites_form_cannot_abandon_resume_or_dismiss(
    api: Api, page: Page, enctype: str
) -> None:
    """The forms of another site's page to abandon a question, resume and dismiss a held run
    reach the server and are refused (403 ``cross-origin``); the question stays open and the
    turn held."""
    script = [tool_reply(call("c1", "beta_tool")), answer("done")]
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    definitions = [
        agent(script, tools=[asking_tool()]),
        agent(ScriptedModel([refused, answer("resumed")], model="mock"), agent_id="desk"),
    ]
    async with api.running(*definitions) as (host, _), serving(api.app(host)) as base:
        await host.post("ops", "go")
        await host.post("desk", "go")
        await until(lambda: paused(host))
        await until(lambda: _held(host, "desk"))
        [question] = await host.reader.questions("ops")
        run_id = (await host.reader.runs("desk"))[-1].run_id
        targets = [
            f"{base}/v1/agents/ops/questions/{question.question_id}/abandon",
            f"{base}/v1/runs/{run_id}/resume",
            f"{base}/v1/runs/{run_id}/dismiss",
        ]
        statuses = []
        for target in targets:
            await page.route(ELSEWHERE, _serving_page(_attack(target, enctype)))
            async with page.expect_response(target) as answered:
                await page.goto(ELSEWHERE)
            statuses.append((await answered.value).status)
            await page.unroute(ELSEWHERE)
        questions = [q.status for q in await host.reader.questions("ops")]
        desk = [row.status for row in await host.reader.inbox("desk")]
        runs = len(await host.reader.runs("desk"))
    assert statuses == [403, 403, 403]
    assert questions == ["open"]
    assert desk == ["held"] and runs == 1
