"""Check-ins, ownership and dismiss over HTTP (docs/host.md#check-ins,
docs/host.md#ownership-and-leases, docs/host.md#stalled-and-held-turns; docs/api.md#endpoints)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from afp_runtime.errors import ModelCallError
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext

from .conftest import Api, agent, error_of, post, settle, until, watch_of


async def _ask(args: Mapping[str, Any], ctx: ToolContext) -> Any:
    ctx.ask_person("which host?")


def asking_tool(counter: list[int] | None = None) -> Tool:
    async def fn(args: Mapping[str, Any], ctx: ToolContext) -> Any:
        if counter is not None:
            counter.append(1)
        await _ask(args, ctx)

    return Tool("beta_tool", "asks the person", {"type": "object"}, fn)


async def paused(host: Any) -> bool:
    rows = await host.reader.inbox("ops")
    return bool(rows) and rows[-1].status == "paused" and not watch_of(host).working("ops")


async def test_acceptance_a_restart_while_a_question_is_pending_then_the_answer(api: Api) -> None:
    """The issue's acceptance: pause, restart the host, answer over HTTP, the turn completes."""
    invoked: list[int] = []
    script = [tool_reply(call("c1", "beta_tool")), answer("using db-1")]
    async with api.running(agent(script, tools=[asking_tool(invoked)])) as (host, client):
        await post(client)
        await until(lambda: paused(host))
        listed = (await client.get("/v1/agents/ops/questions")).json()["items"]
        summary = (await client.get("/v1/agents/ops")).json()
    [question] = listed
    assert question["kind"] == "tool-ask" and question["prompt"] == "which host?"
    assert question["status"] == "open" and question["toolCallIds"] == ["c1"]
    assert question["askedAt"].endswith("Z")
    assert summary["status"] == "paused" and summary["pendingQuestion"] == question["questionId"]
    assert [q["questionId"] for q in summary["openQuestions"]] == [question["questionId"]]

    # A fresh host process on the same file: nothing of the pause lived in memory.
    model = ScriptedModel([answer("using db-1")], model="mock")
    async with api.running(agent(model, tools=[asking_tool(invoked)])) as (host, client):
        assert (await client.get("/v1/agents/ops/questions")).json()["items"] == listed
        bad = await client.post(
            f"/v1/agents/ops/questions/{question['questionId']}/answer", json={"value": ""}
        )
        ok = await client.post(
            f"/v1/agents/ops/questions/{question['questionId']}/answer", json={"value": "db-1"}
        )
        await until(lambda: _answered(host))
        again = await client.post(
            f"/v1/agents/ops/questions/{question['questionId']}/answer", json={"value": "db-2"}
        )
        message = (await client.get("/v1/agents/ops/inbox/msg-1")).json()
        missing = await client.post("/v1/agents/ops/questions/q-99/answer", json={"value": "x"})
        left = (await client.get("/v1/agents/ops/questions")).json()["items"]
    assert bad.status_code == 422
    assert error_of(bad)["code"] == "invalid-answer" and error_of(bad)["reason"] == "length"
    assert ok.status_code == 200
    assert ok.json()["status"] == "accepted" and ok.json()["question"]["answer"] == "db-1"
    assert again.status_code == 409 and error_of(again)["code"] == "question-closed"
    assert missing.status_code == 404 and error_of(missing)["code"] == "question-not-found"
    assert (message["status"], message["answer"]) == ("answered", "using db-1")
    assert left == []
    assert len(invoked) == 1
    assert model.bodies and "db-1" in model.bodies[0].decode()


async def _held(host: Any) -> bool:
    rows = await host.reader.inbox("ops")
    return rows[0].status == "held" and not watch_of(host).working("ops")


async def _answered(host: Any) -> bool:
    rows = await host.reader.inbox("ops")
    return rows[-1].status == "answered"


async def test_abandon_over_http_lets_the_model_answer(api: Api) -> None:
    script = [tool_reply(call("c1", "beta_tool")), answer("no reply, carrying on")]
    async with api.running(agent(script, tools=[asking_tool()])) as (host, client):
        await post(client)
        await until(lambda: paused(host))
        [question] = (await client.get("/v1/agents/ops/questions")).json()["items"]
        response = await client.post(
            f"/v1/agents/ops/questions/{question['questionId']}/abandon", json={}
        )
        await until(lambda: _answered(host))
        closed = (await client.get("/v1/agents/ops/questions?status=all")).json()["items"]
    assert response.status_code == 200 and response.json()["status"] == "abandoned"
    assert [q["status"] for q in closed] == ["abandoned"]


async def test_case_32_ownership(api: Api) -> None:
    """First message from alice makes her the owner; bob's message and answer, and a message
    naming nobody, are 403 and nothing is stored; with shared=True both are accepted."""
    script = [answer("hi alice"), tool_reply(call("c1", "beta_tool")), answer("done")]
    async with api.running(agent(script, tools=[asking_tool()])) as (host, client):
        first = await client.post("/v1/agents/ops/inbox", json={"text": "hi", "from": "alice"})
        await settle(host)
        refused = await client.post("/v1/agents/ops/inbox", json={"text": "me", "from": "bob"})
        anonymous = await client.post("/v1/agents/ops/inbox", json={"text": "anon"})
        go = await client.post("/v1/agents/ops/inbox", json={"text": "go", "from": "alice"})
        await until(lambda: paused(host))
        [question] = (await client.get("/v1/agents/ops/questions")).json()["items"]
        path = f"/v1/agents/ops/questions/{question['questionId']}/answer"
        bob_answer = await client.post(path, json={"value": "db-9", "from": "bob"})
        still_open = (await client.get("/v1/agents/ops/questions")).json()["items"]
        alice_answer = await client.post(path, json={"value": "db-1", "from": "alice"})
        inbox = (await client.get("/v1/agents/ops/inbox")).json()["items"]
    assert first.status_code == 202 and go.status_code == 202
    assert refused.status_code == 403 and error_of(refused)["code"] == "not-owner"
    assert anonymous.status_code == 403 and error_of(anonymous)["code"] == "not-owner"
    assert bob_answer.status_code == 403 and error_of(bob_answer)["code"] == "not-owner"
    assert len(still_open) == 1
    assert alice_answer.status_code == 200
    assert [m["text"] for m in inbox] == ["hi", "go"]
    assert host.store is not None


async def test_case_32_shared_agents_accept_every_principal(api: Api) -> None:
    script = [answer("one"), answer("two")]
    async with api.running(agent(script, shared=True)) as (host, client):
        alice = await client.post("/v1/agents/ops/inbox", json={"text": "a", "from": "alice"})
        bob = await client.post("/v1/agents/ops/inbox", json={"text": "b", "from": "bob"})
        await settle(host)
    assert (alice.status_code, bob.status_code) == (202, 202)


async def test_dismiss_a_held_run_moves_the_queue_on(api: Api) -> None:
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    model = ScriptedModel([refused, answer("second answered")], model="mock")
    async with api.running(agent(model)) as (host, client):
        await post(client, "one")
        await post(client, "two")
        await until(lambda: _held(host))
        before = (await client.get("/v1/agents/ops/inbox")).json()["items"]
        not_held = await client.post("/v1/runs/nope/dismiss", json={})
        dismissed = await client.post("/v1/runs/run-1/dismiss", json={})
        await until(lambda: _answered(host))
        again = await client.post("/v1/runs/run-1/dismiss", json={})
        after = (await client.get("/v1/agents/ops/inbox")).json()["items"]
    assert [m["status"] for m in before] == ["held", "queued"]
    assert not_held.status_code == 404
    assert dismissed.status_code == 200
    assert dismissed.json() == {
        "runId": "run-1",
        "agentId": "ops",
        "messageId": "msg-1",
        "status": "dismissed",
    }
    assert again.status_code == 409 and error_of(again)["code"] == "run-not-held"
    assert [m["status"] for m in after] == ["dismissed", "answered"]


async def test_resume_and_dismiss_refuse_a_body_with_anything_in_it(api: Api) -> None:
    """A body that is not JSON is 400 and one with a key (options the client thinks exist) is
    422 naming the key, on resume and dismiss alike, and the held turn stays held; they used
    to act whatever the body said."""
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    model = ScriptedModel([refused], model="mock")
    async with api.running(agent(model)) as (host, client):
        await post(client, "one")
        await until(lambda: _held(host))
        answers = [
            await client.post(
                f"/v1/runs/run-1/{action}",
                content=body,
                headers={"content-type": "application/json"},
            )
            for action in ("resume", "dismiss")
            for body in (b"this is not json {{{", b'{"dryRun": true}')
        ]
        after = (await client.get("/v1/agents/ops/inbox")).json()["items"]
    assert [a.status_code for a in answers] == [400, 422, 400, 422]
    assert [error_of(a).get("field") for a in answers[1::2]] == ["dryRun", "dryRun"]
    assert [m["status"] for m in after] == ["held"]


async def test_an_unknown_key_is_cut_in_the_error_as_a_value_is(api: Api) -> None:
    """A 250,000-character unknown key comes back cut to 200 code points in ``field`` and in
    the message, not copied whole twice."""
    async with api.running(agent([answer("ok")])) as (_, client):
        key = "<img src=x>" + "k" * 250_000
        response = await client.post("/v1/agents/ops/inbox", json={"text": "a", key: 1})
    assert response.status_code == 422
    detail = error_of(response)
    assert len(detail["field"]) == 200 and len(detail["message"]) < 400
    assert detail["message"].endswith("; it takes from, idempotencyKey, text, time")
    assert len(response.content) < 2_000


async def test_on_turn_failure_skip_dismisses_at_once(api: Api) -> None:
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    model = ScriptedModel([refused, answer("second answered")], model="mock")
    async with api.running(agent(model, on_turn_failure="skip")) as (host, client):
        await post(client, "one")
        await post(client, "two")
        await until(lambda: _answered(host))
        after = (await client.get("/v1/agents/ops/inbox")).json()["items"]
    assert [m["status"] for m in after] == ["dismissed", "answered"]


async def test_approval_over_http(api: Api) -> None:
    ran: list[str] = []

    async def deploy(args: Mapping[str, Any], ctx: ToolContext) -> str:
        ran.append(ctx.tool_call_id)
        return "deployed"

    tool = Tool("deploy", "Deploy.", {"type": "object"}, deploy, check_in=True)
    script = [tool_reply(call("d1", "deploy")), answer("done")]
    async with api.running(agent(script, tools=[tool])) as (host, client):
        await post(client)
        await until(lambda: paused(host))
        [question] = (await client.get("/v1/agents/ops/questions")).json()["items"]
        path = f"/v1/agents/ops/questions/{question['questionId']}/answer"
        wrong = await client.post(path, json={"value": {"decision": "maybe"}})
        flat = await client.post(path, json={"decision": "approve"})
        ok = await client.post(path, json={"value": {"decision": "approve", "note": "go"}})
        await until(lambda: _answered(host))
    assert question["kind"] == "approval"
    assert wrong.status_code == 422 and error_of(wrong)["reason"] == "decision"
    # The decision sent at the top level is refused naming the body it takes and the shape
    # meant, not only the key that is wrong.
    assert flat.status_code == 422 and error_of(flat)["field"] == "decision"
    assert error_of(flat)["message"] == (
        "decision is not a field of this request; it takes from, value"
        ' (an approval is answered {"value": {"decision": "approve"}})'
    )
    assert ok.status_code == 200
    assert ran == ["d1"]


async def test_an_agent_held_by_another_host_is_not_leased(api: Api) -> None:
    """docs/host.md#status-values: an agent this host runs but another live host holds shows
    `not-leased`, and its queued message is not answered here."""
    store = await SqliteStore.open(api.path, now_ms=api.clock.now_ms())
    try:
        await store.ensure_agent("ops", now_ms=api.clock.now_ms())
        epoch = await store.acquire_lease("elsewhere", now_ms=api.clock.now_ms(), ttl_ms=600_000)
        assert epoch is not None
        assert await store.claim_agent("ops", "elsewhere", epoch, now_ms=api.clock.now_ms())
    finally:
        await store.aclose()
    model = ScriptedModel([answer("not here")], model="mock")
    async with api.running(agent(model)) as (host, client):
        await post(client)
        await until(lambda: watch_of(host).passes("ops") >= 1)
        summary = (await client.get("/v1/agents/ops")).json()
        inbox = (await client.get("/v1/agents/ops/inbox")).json()["items"]
    assert summary["status"] == "not-leased"
    assert [m["status"] for m in inbox] == ["queued"]
    assert model.calls == 0
