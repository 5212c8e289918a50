"""Agent endpoints in process: health, agents, inbox (durability, idempotency, validation),
runs, agent-wide call numbers (docs/api.md#endpoints, cases 28, 31 and 32)."""

from __future__ import annotations

import anyio
import pytest

import afp_runtime as afp
from afp_runtime.errors import ModelCallError
from afp_runtime.findings import FindingsConfig
from afp_runtime.loop import AgentDriver
from afp_runtime.messages import ModelReply, ModelRequest
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer, call, tool_reply

from .conftest import Api, agent, error_of, post, settle


async def test_health_answers_ok_with_version_and_schema(api: Api) -> None:
    """Health reports ok, the package version, the store's schema version and the id of the
    host that answered."""
    async with api.running(agent([]), host_options={"host_id": "host-b.example"}) as (_, client):
        response = await client.get("/v1/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["version"] == afp.__version__ and isinstance(body["schemaVersion"], int)
    assert body["hostId"] == "host-b.example"


async def test_agents_list_and_one_describe_the_hosted_agent(api: Api) -> None:
    """The agent list and one agent carry model, provider, counters and inbox depth."""
    script = [tool_reply(call("c1", "alpha_tool")), answer("done")]
    async with api.running(agent(script)) as (host, client):
        await post(client)
        await settle(host)
        listed = (await client.get("/v1/agents")).json()
        one = (await client.get("/v1/agents/ops")).json()
        missing = await client.get("/v1/agents/nobody")
    assert listed["next"] is None and [a["agentId"] for a in listed["items"]] == ["ops"]
    assert one == listed["items"][0]
    assert (one["status"], one["model"], one["provider"], one["hosted"]) == (
        "idle",
        "mock",
        "scripted",
        True,
    )
    assert (one["turn"], one["modelCalls"], one["messages"], one["inboxDepth"]) == (1, 2, 4, 0)
    assert missing.status_code == 404 and error_of(missing)["code"] == "agent-not-found"


async def test_case_28_agent_wide_call_numbers(api: Api) -> None:
    """Case 28: turns of 2 and 3 calls number agentCall 1..5; call 4 is run-2's epoch 2;
    call 6 is 404 call-not-found."""
    script = [
        tool_reply(call("c1", "alpha_tool")),
        answer("one"),
        tool_reply(call("c2", "alpha_tool")),
        tool_reply(call("c3", "alpha_tool")),
        answer("two"),
    ]
    async with api.running(agent(script)) as (host, client):
        await post(client, "first")
        await settle(host)
        await post(client, "second")
        await settle(host)
        numbers = []
        for run_id in ("run-1", "run-2"):
            epochs = (await client.get(f"/v1/runs/{run_id}/epochs")).json()["items"]
            numbers += [entry["agentCall"] for entry in epochs]
        fourth = (await client.get("/v1/agents/ops/calls/4")).json()
        served = (await client.get("/v1/runs/run-2/epochs/2/served")).json()
        sixth = await client.get("/v1/agents/ops/calls/6")
        bad = await client.get("/v1/agents/ops/calls/0")
        text = await client.get("/v1/agents/ops/calls/four")
    assert numbers == [1, 2, 3, 4, 5]
    assert (fourth["agentCall"], fourth["runId"], fourth["epoch"]) == (4, "run-2", 2)
    assert fourth["view"] == served
    assert sixth.status_code == 404 and error_of(sixth)["code"] == "call-not-found"
    assert bad.status_code == 404 and error_of(bad)["code"] == "call-not-found"
    assert text.status_code == 400 and error_of(text)["field"] == "n"


async def test_inbox_post_answers_202_and_the_turn_runs(api: Api) -> None:
    """A post is acknowledged with 202 and its fields, then answered by the host's worker."""
    async with api.running(agent([answer("hello")])) as (host, client):
        response = await client.post("/v1/agents/ops/inbox", json={"text": "hi", "from": "alice"})
        await settle(host)
        listed = (await client.get("/v1/agents/ops/inbox")).json()["items"]
        one = (await client.get("/v1/agents/ops/inbox/msg-1")).json()
        answered = (await client.get("/v1/agents/ops/inbox?status=answered")).json()["items"]
        queued = (await client.get("/v1/agents/ops/inbox?status=queued")).json()["items"]
        bad_status = await client.get("/v1/agents/ops/inbox?status=lost")
        other = await client.get("/v1/agents/ops/inbox/msg-9")
    assert response.status_code == 202
    ack = response.json()
    assert (ack["messageId"], ack["agentId"], ack["status"], ack["position"]) == (
        "msg-1",
        "ops",
        "queued",
        1,
    )
    assert ack["acceptedAt"] == "2025-06-15T15:06:40.000Z"  # the fake clock's start, in ISO
    assert [(m["status"], m["from"], m["runId"]) for m in listed] == [
        ("answered", "alice", "run-1")
    ]
    assert (one["status"], one["runId"], one["answer"], one["turn"]) == (
        "answered",
        "run-1",
        "hello",
        1,
    )
    assert len(answered) == 1 and queued == []
    assert bad_status.status_code == 400 and error_of(bad_status)["field"] == "status"
    assert other.status_code == 404 and error_of(other)["code"] == "message-not-found"


async def test_case_32_idempotent_repeat_and_conflict(api: Api) -> None:
    """Case 32: the same idempotencyKey and text gives 200 with the same messageId; the same
    key with other text gives 409 idempotency-conflict; one message is stored."""
    body = {"text": "any errors yesterday?", "idempotencyKey": "ui-7f3a"}
    async with api.running(agent([answer("none")])) as (host, client):
        first = await client.post("/v1/agents/ops/inbox", json=body)
        again = await client.post("/v1/agents/ops/inbox", json=body)
        other = await client.post("/v1/agents/ops/inbox", json={**body, "text": "something else"})
        await settle(host)
        rows = (await client.get("/v1/agents/ops/inbox")).json()["items"]
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json() == first.json()
    assert other.status_code == 409
    assert error_of(other)["code"] == "idempotency-conflict"
    assert error_of(other)["field"] == "idempotencyKey"
    assert [r["idempotencyKey"] for r in rows] == ["ui-7f3a"]


async def test_case_32_ack_is_durable_and_processed_once_after_a_kill(api: Api) -> None:
    """Case 32: a host killed right after the 202 (its model blocked mid-call) finds the message
    on restart and answers it exactly once."""
    blocked = anyio.Event()

    async def stuck(request: ModelRequest, number: int) -> ModelReply:
        blocked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with api.running(agent(ScriptedModel(stuck, model="mock"))) as (_, client):
        response = await client.post("/v1/agents/ops/inbox", json={"text": "go"})
        assert response.status_code == 202
        with anyio.fail_after(10):
            await blocked.wait()
    # The host is gone (its workers were cancelled mid-call): a new process takes over.
    model = ScriptedModel([answer("done")], model="mock")
    async with api.running(agent(model)) as (host, client):
        await settle(host)
        rows = (await client.get("/v1/agents/ops/inbox")).json()["items"]
        one = (await client.get("/v1/agents/ops")).json()
        runs = (await client.get("/v1/agents/ops/runs")).json()["items"]
    assert [(r["messageId"], r["status"]) for r in rows] == [("msg-1", "answered")]
    assert one["turn"] == 1 and model.calls == 1
    assert [m.content for m in model.requests[0].messages] == ["go"]
    # Leaving the host cancelled the stuck run: it ended `cancelled`
    # (docs/host.md#graceful-shutdown).
    assert [(r["kind"], r["status"]) for r in runs] == [
        ("recovery", "answered"),
        ("initial", "cancelled"),
    ]


async def test_case_31_inbox_validation(api: Api) -> None:
    """Case 31: empty text, a wrong type, an unknown field, a bad key and a time field are 422
    naming the field; a non-object body is 400; nothing is stored."""
    cases = [
        ({"text": ""}, 422, "invalid-body", "text"),
        ({"text": 5}, 422, "invalid-body", "text"),
        ({}, 422, "invalid-body", "text"),
        ({"text": "x" * 32_001}, 422, "invalid-body", "text"),
        ({"text": "hi", "extra": 1}, 422, "invalid-body", "extra"),
        ({"text": "hi", "idempotencyKey": "has space"}, 422, "invalid-body", "idempotencyKey"),
        ({"text": "hi", "from": ""}, 422, "invalid-body", "from"),
        ({"text": "hi", "time": {"zone": "UTC"}}, 422, "time-not-enabled", "time"),
    ]
    async with api.running(agent([])) as (_, client):
        for body, status, code, field in cases:
            response = await client.post("/v1/agents/ops/inbox", json=body)
            assert response.status_code == status, (body, response.text)
            error = error_of(response)
            assert (error["code"], error["field"]) == (code, field), body
            assert len(error.get("value", "")) <= 200
        not_object = await client.post("/v1/agents/ops/inbox", json=["go"])
        not_json = await client.post(
            "/v1/agents/ops/inbox",
            content=b"{oops",
            headers={"Content-Type": "application/json"},
        )
        unknown = await client.post("/v1/agents/nobody/inbox", json={"text": "hi"})
        rows = (await client.get("/v1/agents/ops/inbox")).json()["items"]
    assert not_object.status_code == 400 and error_of(not_object)["code"] == "invalid-body"
    assert not_json.status_code == 400 and error_of(not_json)["code"] == "invalid-body"
    assert unknown.status_code == 404 and error_of(unknown)["code"] == "agent-not-found"
    assert rows == []


async def test_agent_runs_are_newest_first_and_paged(api: Api) -> None:
    """An agent's runs come newest first, paged by an opaque cursor."""
    script = [answer("one"), answer("two"), answer("three")]
    async with api.running(agent(script)) as (host, client):
        for text in ("a", "b", "c"):
            await post(client, text)
            await settle(host)
        first = (await client.get("/v1/agents/ops/runs?limit=2")).json()
        second = (await client.get(f"/v1/agents/ops/runs?limit=2&cursor={first['next']}")).json()
        bad = await client.get("/v1/agents/ops/runs?cursor=nonsense")
    assert [r["runId"] for r in first["items"]] == ["run-3", "run-2"]
    assert [r["runId"] for r in second["items"]] == ["run-1"] and second["next"] is None
    assert bad.status_code == 400 and error_of(bad)["field"] == "cursor"


async def test_held_message_shows_its_error(api: Api) -> None:
    """A message whose turn is held shows the error kind and text of the held turn."""
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    async with api.running(agent([refused])) as (host, client):
        await post(client)
        await settle(host)
        one = (await client.get("/v1/agents/ops/inbox/msg-1")).json()
        summary = (await client.get("/v1/agents/ops")).json()
    assert (one["status"], one["errorKind"], one["runId"]) == ("held", "auth", "run-1")
    assert "refused" in one["error"]
    assert summary["status"] == "held"


async def test_inbox_of_an_unhosted_agent_cannot_be_posted(api: Api) -> None:
    """An agent the store knows but this host does not run is listed as not-leased and refuses
    posts with 409."""
    async with api.running(agent([answer("x")], agent_id="old")) as (host, client):
        await post(client, agent_id="old")
        await settle(host, "old")
    async with api.running(agent([])) as (_, client):
        listed = (await client.get("/v1/agents")).json()["items"]
        refused = await client.post("/v1/agents/old/inbox", json={"text": "hi"})
    assert {a["agentId"]: a["status"] for a in listed} == {"old": "not-leased", "ops": "idle"}
    assert refused.status_code == 409 and error_of(refused)["code"] == "agent-not-hosted"


async def test_unknown_agent_paths(api: Api) -> None:
    """A malformed agent id is 400 naming agentId; an unknown one is 404."""
    async with api.running(agent([])) as (_, client):
        malformed = await client.get("/v1/agents/Not_Valid/runs")
        unknown = await client.get("/v1/agents/ghost/runs")
    assert malformed.status_code == 400
    assert (error_of(malformed)["code"], error_of(malformed)["field"]) == (
        "invalid-path-param",
        "agentId",
    )
    assert unknown.status_code == 404 and error_of(unknown)["code"] == "agent-not-found"


async def test_findings_rows_with_filters(api: Api) -> None:
    """Findings rows come in filing order and filter by kind, turn and toolCallId."""
    judged = {"basis": "direct", "previous": [{"toolCallId": "a1", "standing": "fact"}]}
    script = [
        tool_reply(call("a1", "alpha_tool")),
        tool_reply(call("a2", "alpha_tool", _findings=judged)),
        answer("done"),
    ]
    async with api.running(agent(script, findings=FindingsConfig())) as (host, client):
        await post(client)
        await settle(host)
        every = (await client.get("/v1/agents/ops/findings")).json()
        standing = (await client.get("/v1/agents/ops/findings?kind=standing")).json()["items"]
        by_call = (await client.get("/v1/agents/ops/findings?toolCallId=a1")).json()["items"]
        turn_2 = (await client.get("/v1/agents/ops/findings?turn=2")).json()["items"]
        bad_kind = await client.get("/v1/agents/ops/findings?kind=NOT%20A%20KIND")
    kinds = [row["kind"] for row in every["items"]]
    assert "standing" in kinds and every["next"] is None
    assert standing and all(row["kind"] == "standing" for row in standing)
    assert [row["standing"] for row in standing if row["toolCallId"] == "a1"] == ["fact"]
    assert by_call and all(row["toolCallId"] == "a1" for row in by_call)
    assert turn_2 == []
    assert bad_kind.status_code == 400 and error_of(bad_kind)["field"] == "kind"


async def test_a_lone_surrogate_is_refused(api: Api) -> None:
    """Text holding a lone surrogate escape is refused (not valid JSON text) and not stored."""
    raw = b'{"text": "bad \\ud800 text"}'
    async with api.running(agent([])) as (_, client):
        response = await client.post(
            "/v1/agents/ops/inbox", content=raw, headers={"Content-Type": "application/json"}
        )
        rows = (await client.get("/v1/agents/ops/inbox")).json()["items"]
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid-body"
    assert rows == []


class _Died(BaseException):
    """Stands for the process dying inside a send."""


async def test_a_crash_loop_says_why_it_is_held_in_the_list_and_the_message(api: Api) -> None:
    """A turn held as a crash loop (its last run crashed, so no run says why) shows
    ``crash-loop`` and the sentence in the inbox list as in the single message."""

    def dies(request: ModelRequest, number: int) -> ModelReply:
        raise _Died

    store = await SqliteStore.open(api.path, now_ms=0)
    try:
        driver = AgentDriver(
            store, agent(ScriptedModel(dies), max_recoveries=0), clock=api.clock, ids=api.ids
        )
        await driver.post("go")
        with pytest.raises(_Died):
            await driver.work()
        assert await driver.work() == []  # held now
    finally:
        await store.aclose()
    async with api.running(agent(ScriptedModel([answer("unused")]))) as (_, client):
        [listed] = (await client.get("/v1/agents/ops/inbox")).json()["items"]
        one = (await client.get(f"/v1/agents/ops/inbox/{listed['messageId']}")).json()
    assert listed["status"] == "held" and listed["errorKind"] == "crash-loop"
    assert listed["error"] == one["error"] and "crashed" in listed["error"]
