"""Run endpoints in process: summary, commits, epochs, served views, receipts, conformance,
resume and window records (docs/api.md#endpoints, cases 29 and 8 over HTTP)."""

from __future__ import annotations

from typing import Any

import anyio
import jsonschema
import msgspec

from afp_runtime.app import reasons_for
from afp_runtime.cost import Price
from afp_runtime.errors import ModelCallError
from afp_runtime.messages import Usage
from afp_runtime.models import ScriptedModel
from afp_runtime.permissions import Rule
from afp_runtime.served import epochs, served_views
from afp_runtime.store.sqlite import SqliteRunLog
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.window import sliding_window

from .conftest import Api, agent, error_of, post, settle

TWO_EPOCHS = [tool_reply(call("c1", "alpha_tool")), answer("done")]


async def test_case_29_path_rules(api: Api) -> None:
    """Case 29: epoch 0 is 404 epoch-not-found, epoch abc is 400 naming epoch, an unknown run
    is 404 run-not-found, an upper-case fingerprint is 400, an unknown one 404 fold-not-found."""
    async with api.running(agent(TWO_EPOCHS)) as (host, client):
        await post(client)
        await settle(host)
        zero = await client.get("/v1/runs/run-1/epochs/0/served")
        beyond = await client.get("/v1/runs/run-1/epochs/3/served")
        text = await client.get("/v1/runs/run-1/epochs/abc/served")
        nope = await client.get("/v1/runs/nope/epochs")
        bad_run = await client.get("/v1/runs/bad%20id/epochs")
        upper = await client.get("/v1/agents/ops/folded/" + "ABC" + "0" * 61)
        short = await client.get("/v1/agents/ops/folded/" + "a" * 63)
        unknown = await client.get("/v1/agents/ops/folded/" + "a" * 64)
    assert zero.status_code == 404
    assert (error_of(zero)["code"], error_of(zero)["field"]) == ("epoch-not-found", "epoch")
    assert beyond.status_code == 404 and error_of(beyond)["code"] == "epoch-not-found"
    assert text.status_code == 400
    assert error_of(text) == {
        "code": "invalid-path-param",
        "message": error_of(text)["message"],
        "field": "epoch",
        "value": "abc",
    }
    assert nope.status_code == 404 and error_of(nope)["code"] == "run-not-found"
    assert bad_run.status_code == 400 and error_of(bad_run)["field"] == "runId"
    assert upper.status_code == 400 and error_of(upper)["field"] == "summaryFingerprint"
    assert short.status_code == 400
    assert unknown.status_code == 404 and error_of(unknown)["code"] == "fold-not-found"


async def test_case_8_over_http_epochs_views_receipts_and_law(api: Api) -> None:
    """Case 8 over HTTP: two epochs at call-model#4 and #9, views of 1 and 3 messages, the
    receipts' new entries, and a verified report with the wire check."""
    async with api.running(agent(TWO_EPOCHS)) as (host, client):
        await post(client)
        await settle(host)
        listing = (await client.get("/v1/runs/run-1/epochs")).json()
        one = (await client.get("/v1/runs/run-1/epochs/2")).json()
        views = [(await client.get(f"/v1/runs/run-1/epochs/{k}/served")).json() for k in (1, 2)]
        receipts = [(await client.get(f"/v1/runs/run-1/epochs/{k}/receipt")).json() for k in (1, 2)]
        wire = [
            (await client.get(f"/v1/runs/run-1/epochs/{k}/conformance?wire=true")).json()
            for k in (1, 2)
        ]
        default = (await client.get("/v1/runs/run-1/epochs/1/conformance")).json()
        plain = (await client.get("/v1/runs/run-1/epochs/1/conformance?wire=false")).json()
        bad_flag = await client.get("/v1/runs/run-1/epochs/1/conformance?wire=yes")
    entries = listing["items"]
    assert [(e["epoch"], e["callRuntimeStageId"], e["outcome"]) for e in entries] == [
        (1, "call-model#4", "replied"),
        (2, "call-model#9", "replied"),
    ]
    assert [(e["toolCallCount"], e["wire"], e["gaps"]) for e in entries] == [
        (1, True, ["provider-defaults"]),
        (0, True, ["provider-defaults"]),
    ]
    assert one == entries[1]
    assert [len(v["messages"]["asSent"]) for v in views] == [1, 3]
    assert views[0]["tools"]["names"] == ["alpha_tool"]
    assert views[0]["basis"] == {"model": "mock", "provider": "scripted", "runId": "run-1"}
    assert [g["gap"] for g in views[1]["gaps"]] == ["provider-defaults"]
    assert [e["index"] for e in receipts[0]["messages"]["newEntries"]] == [0]
    assert [e["index"] for e in receipts[1]["messages"]["newEntries"]] == [1, 2]
    assert receipts[1]["messages"]["newEntries"][1]["key"] == "c1"
    assert [r["verdict"] for r in wire] == ["verified", "verified"]
    assert all(r["runId"] == "run-1" for r in wire)
    assert default == wire[0]  # the byte check is on unless wire=false, as in `afp conform`
    assert plain["verdict"] == "reconstructed"
    assert plain["clauses"][-1] == {
        "clause": "wire",
        "status": "not-checkable",
        "detail": "encoder-unavailable",
    }
    assert bad_flag.status_code == 400 and error_of(bad_flag)["field"] == "wire"


async def test_served_views_equal_the_pure_functions(api: Api) -> None:
    """Served views over HTTP are the pure served functions' values, each with the sentences
    of its gaps added (``reasons``, docs/api.md#reasons-in-words)."""
    async with api.running(agent(TWO_EPOCHS)) as (host, client):
        await post(client)
        await settle(host)
        page = (await client.get("/v1/runs/run-1/served")).json()
        later = (await client.get("/v1/runs/run-1/served?fromEpoch=2")).json()
        too_many = await client.get("/v1/runs/run-1/served?limit=51")
        first_only = (await client.get("/v1/runs/run-1/served?limit=1")).json()

    def read() -> tuple[list[dict[str, Any]], list[int]]:
        with SqliteRunLog(api.path, "run-1") as log:
            encoded = msgspec.json.encode(served_views(log), enc_hook=dict)
            return msgspec.json.decode(encoded, type=list), [e.epoch for e in epochs(log)]

    views, numbers = await anyio.to_thread.run_sync(read)
    expected = [{**v, "reasons": reasons_for(g["gap"] for g in v["gaps"])} for v in views]
    assert page == {"items": expected, "next": None}
    assert [v["epoch"] for v in later["items"]] == [2] and numbers == [1, 2]
    assert too_many.status_code == 400 and error_of(too_many)["field"] == "limit"
    assert [v["epoch"] for v in first_only["items"]] == [1] and first_only["next"] is not None


async def test_receipt_of_a_call_without_receipt_is_404(api: Api) -> None:
    """An epoch that exists answers its receipt; the receipt of a missing epoch is 404."""
    async with api.running(agent(TWO_EPOCHS)) as (host, client):
        await post(client)
        await settle(host)
        missing = await client.get("/v1/runs/run-1/epochs/9/receipt")
        report = await client.get("/v1/runs/run-1/epochs/9/conformance")
        entry = await client.get("/v1/runs/run-1/epochs/9")
    assert missing.status_code == 404 and error_of(missing)["code"] == "epoch-not-found"
    assert report.status_code == 404 and entry.status_code == 404


async def test_run_summary_and_commit_log(api: Api) -> None:
    """A run's summary and commit log; fromSeq skips bundles, expand resolves history."""
    async with api.running(agent(TWO_EPOCHS)) as (host, client):
        await post(client)
        await settle(host)
        run = (await client.get("/v1/runs/run-1")).json()
        full = (await client.get("/v1/runs/run-1/commits?limit=500")).json()
        tail = (await client.get("/v1/runs/run-1/commits?fromSeq=9")).json()
        expanded = (await client.get("/v1/runs/run-1/commits?expand=true&limit=1")).json()
        bad_seq = await client.get("/v1/runs/run-1/commits?fromSeq=-1")
    assert (run["runId"], run["agentId"], run["status"], run["bundles"]) == (
        "run-1",
        "ops",
        "answered",
        11,
    )
    assert [b["runtimeStageId"] for b in full["items"]][-1] == "final#10"
    assert [b["runtimeStageId"] for b in tail["items"]] == ["call-model#9", "final#10"]
    seed = next(w for w in full["items"][0]["writes"] if w["key"] == "history")
    assert "ranges" in seed["value"]
    history = next(w for w in expanded["items"][0]["writes"] if w["key"] == "history")
    assert history["value"] == [{"role": "user", "content": "go"}]
    assert expanded["next"] is not None
    assert bad_seq.status_code == 400 and error_of(bad_seq)["field"] == "fromSeq"


async def test_an_expanded_commit_page_is_what_the_openapi_document_says(api: Api) -> None:
    """With expand=true a history write holds messages, and the served document's schema of
    the commits answer admits them (a schema fuzzer checks answers against it)."""
    async with api.running(agent(TWO_EPOCHS)) as (host, client):
        await post(client)
        await settle(host)
        expanded = (await client.get("/v1/runs/run-1/commits?expand=true&limit=500")).json()
        document = (await client.get("/v1/openapi.json")).json()
    answer_schema = document["paths"]["/v1/runs/{runId}/commits"]["get"]["responses"]["200"]
    schema = {**answer_schema["content"]["application/json"]["schema"], **document}
    history = next(w for w in expanded["items"][0]["writes"] if w["key"] == "history")
    assert history["value"] == [{"role": "user", "content": "go"}]
    jsonschema.Draft202012Validator(schema).validate(expanded)


async def test_resume_a_held_run_and_refuse_others(api: Api) -> None:
    """Resuming an answered run is 409 run-not-resumable; a held run resumes with 202 (a body
    that is not JSON is 415, no body needs no content type) and an operator run answers it."""
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    model = ScriptedModel([answer("first"), refused, answer("after all")], model="mock")
    async with api.running(agent(model)) as (host, client):
        await post(client, "one")
        await settle(host)
        answered = await client.post("/v1/runs/run-1/resume", json={})
        await post(client, "two")
        await settle(host)
        held = (await client.get("/v1/agents/ops/inbox/msg-2")).json()
        text = await client.post("/v1/runs/run-2/resume", content=b"x")
        accepted = await client.post("/v1/runs/run-2/resume")
        await settle(host)
        after = (await client.get("/v1/agents/ops/inbox/msg-2")).json()
        runs = (await client.get("/v1/agents/ops/runs")).json()["items"]
        unknown = await client.post("/v1/runs/run-9/resume", json={})
    assert answered.status_code == 409 and error_of(answered)["code"] == "run-not-resumable"
    assert held["status"] == "held"
    assert text.status_code == 415 and error_of(text)["code"] == "unsupported-media-type"
    assert accepted.status_code == 202
    assert accepted.json() == {"runId": "run-2", "agentId": "ops", "status": "accepted"}
    assert (after["status"], after["answer"], after["runId"]) == ("answered", "after all", "run-3")
    assert runs[0]["kind"] == "operator"
    assert unknown.status_code == 404 and error_of(unknown)["code"] == "run-not-found"


async def test_window_records_per_run_and_per_agent(api: Api) -> None:
    """Window records come from the runs' compactions, with runId, turn and stage id, and can
    be filtered by run and turn."""
    script = [
        tool_reply(call("c1", "alpha_tool")),
        answer("one"),
        tool_reply(call("c2", "alpha_tool")),
        answer("two"),
    ]
    definition = agent(script, window=sliding_window(keep_recent_turns=1))
    async with api.running(definition) as (host, client):
        await post(client, "first")
        await settle(host)
        await post(client, "second")
        await settle(host)
        per_run = (await client.get("/v1/runs/run-2/window-records")).json()["items"]
        every = (await client.get("/v1/agents/ops/window-records")).json()["items"]
        turn_1 = (await client.get("/v1/agents/ops/window-records?turn=1")).json()["items"]
        by_run = (await client.get("/v1/agents/ops/window-records?runId=run-2")).json()["items"]
        bad_turn = await client.get("/v1/agents/ops/window-records?turn=x")
    assert per_run and all(r["runId"] == "run-2" and r["turn"] == 2 for r in per_run)
    assert [r["runtimeStageId"] for r in per_run] == ["window#1", "window#6"]
    assert all(r["strategy"] == "sliding-window" for r in every)
    assert by_run == per_run and every == turn_1 + per_run
    assert turn_1 and all(r["runId"] == "run-1" for r in turn_1)
    assert any(r["removedMessageCount"] > 0 for r in per_run)
    assert bad_turn.status_code == 400 and error_of(bad_turn)["field"] == "turn"


async def test_a_halted_turn_over_http_with_its_cost_and_decisions(api: Api) -> None:
    """A permission halt closes the turn ``halted``: the inbox says why, the run carries its
    cost, the decision rows list by kind, and the next message is answered."""
    model = ScriptedModel(
        [
            tool_reply(call("c1", "alpha_tool"), usage=Usage(input=1000, output=0)),
            answer("second", usage=Usage(input=10, output=0)),
        ],
        model="mock",
    )
    definition = agent(
        model,
        permissions=[Rule(tool="alpha_*", decision="halt", name="frozen")],
        pricing={"mock": Price(input=1e-6, output=1e-6)},
    )
    async with api.running(definition) as (host, client):
        await post(client, "one")
        await settle(host)
        halted = (await client.get("/v1/agents/ops/inbox/msg-1")).json()
        run = (await client.get("/v1/runs/run-1")).json()
        rows = (await client.get("/v1/agents/ops/findings?kind=permission")).json()["items"]
        await post(client, "two")
        await settle(host)
        later = (await client.get("/v1/agents/ops/inbox/msg-2")).json()
    assert (halted["status"], halted["errorKind"]) == ("halted", "permission")
    assert "frozen" in halted["error"]
    assert run["status"] == "halted"
    assert run["cost"] == {"amount": 0.001, "priced": 1, "unknown": 0}
    assert [(r["toolCallId"], r["decision"], r["rule"]) for r in rows] == [("c1", "halt", "frozen")]
    assert (later["status"], later["answer"]) == ("answered", "second")


async def test_an_epoch_beyond_64_bits_is_not_found_on_every_epoch_route(api: Api) -> None:
    """Epoch numbers from 2**63 up to the 20 digits the path allows name no epoch: 404
    epoch-not-found on the epoch, its served view, receipt and conformance (they were 500s:
    the database cannot bind them)."""
    async with api.running(agent(TWO_EPOCHS)) as (host, client):
        await post(client)
        await settle(host)
        answers = [
            await client.get(f"/v1/runs/run-1/epochs/{number}{tail}")
            for number in (2**63, 10**20 - 1)
            for tail in ("", "/served", "/receipt", "/conformance")
        ]
    assert [(a.status_code, error_of(a)["code"]) for a in answers] == [(404, "epoch-not-found")] * 8
