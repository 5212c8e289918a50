"""Answers are reachable where a client looks: inbox lists, run objects, ``run.ended`` and
``turn.ended`` events carry the answer or the reason there is none."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from afp_runtime.agents import Agent
from afp_runtime.errors import ModelCallError
from afp_runtime.models import ScriptedModel
from afp_runtime.records import RunEnded, TurnEnded
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext

from .conftest import Api, agent, post, settle


async def test_lists_and_runs_carry_the_answer(api: Api) -> None:
    """An answered message's list entry and its run carry the answer's text."""
    script = [tool_reply(call("c1", "alpha_tool")), answer("all good")]
    async with api.running(agent(script)) as (host, client):
        await post(client, "check it")
        await settle(host)
        listed = (await client.get("/v1/agents/ops/inbox?status=answered")).json()["items"]
        run = (await client.get(f"/v1/runs/{listed[0]['runId']}")).json()
        runs = (await client.get("/v1/agents/ops/runs")).json()["items"]
    assert [(m["status"], m["answer"]) for m in listed] == [("answered", "all good")]
    assert run["answer"] == "all good" and runs[0]["answer"] == "all good"


async def test_a_held_turn_says_why_in_lists_and_runs(api: Api) -> None:
    """A held message's list entry and run carry errorKind and error, and no answer."""
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    async with api.running(agent(ScriptedModel([refused], model="mock"))) as (host, client):
        await post(client, "go")
        await settle(host)
        [listed] = (await client.get("/v1/agents/ops/inbox")).json()["items"]
        run = (await client.get(f"/v1/runs/{listed['runId']}")).json()
    assert (listed["status"], listed["answer"], listed["errorKind"]) == ("held", None, "auth")
    assert "refused" in listed["error"]
    assert (run["status"], run["errorKind"]) == ("held", "auth") and "answer" not in run


async def _ended(api: Api, definition: Agent, count: int) -> list[Any]:
    """The first ``count`` run.ended / turn.ended events after posting one message."""
    async with api.host(definition) as host:
        with host.events.subscribe(types=["run.ended", "turn.ended"]) as events:
            await host.post("ops", "hello")
            seen = []
            with anyio.fail_after(20):
                async for item in events:
                    seen.append(item)
                    if len(seen) == count:
                        break
    return seen


async def test_events_carry_the_answer(api: Api) -> None:
    """run.ended and turn.ended of an answered turn carry the answer's text."""
    seen = await _ended(api, agent([answer("first answer")]), 2)
    answers = {type(e.payload): getattr(e.payload, "answer", None) for e in seen}
    assert answers == {RunEnded: "first answer", TurnEnded: "first answer"}


async def test_a_paused_runs_end_says_why_there_is_no_answer(api: Api) -> None:
    """A run that ends paused on an approval says so in run.ended."""
    approval = Tool("approve_me", "Needs a yes.", {"type": "object"}, _done, check_in=True)
    definition = agent([tool_reply(call("c1", "approve_me"))], tools=[approval])
    [run_ended] = await _ended(api, definition, 1)
    payload = run_ended.payload
    assert isinstance(payload, RunEnded) and payload.status == "paused"
    assert payload.answer is msgspec.UNSET and b'"answer"' not in msgspec.json.encode(payload)
    assert isinstance(payload.reason, str) and "question" in payload.reason


async def _done(args: Any, ctx: ToolContext) -> str:
    return "done"
