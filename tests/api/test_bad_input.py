"""Bad input gets the 4xx that explains it, never a 500: bodies nested too deep, lone surrogate
escapes, JSON that is no object, and a Last-Event-ID with non-ASCII digits."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool

from .conftest import Api, agent, error_of, post, serving, settle, until
from .test_events import frames

NESTED = b"[" * 1000 + b"]" * 1000


async def _ask(args: object, ctx: object) -> str:
    ctx.ask_person("which?")  # type: ignore[attr-defined]


def _asking_agent() -> Any:
    """An agent whose first call asks the person a question (the turn pauses on it)."""
    asking = Tool("ask", "Ask.", {"type": "object"}, _ask)
    return agent([tool_reply(call("c1", "ask")), answer("ok")], tools=[asking])


async def _paused_question(api: Api, client: httpx.AsyncClient, host: object) -> str:
    await post(client, "go")
    await until(lambda: bool(host.reader))  # type: ignore[attr-defined]
    for _ in range(200):
        items = (await client.get("/v1/agents/ops/questions")).json()["items"]
        if items:
            return str(items[0]["questionId"])
        await anyio.sleep(0.02)
    raise AssertionError("no question was asked")


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (NESTED, "nests arrays or objects too deeply"),
        (b'{"text": "\\ud800"}', "lone surrogate escape \\ud800"),
        (b'{"text": "a\\udc00b"}', "lone surrogate escape \\udc00"),
        (b'{"text": ', "not valid JSON"),
        (b'["text"]', "must be a JSON object"),
        (b'{"text": "a", "time": {"now": 1' + b"0" * 5000 + b"}}", "a number too large"),
    ],
    ids=["nested", "lone-high", "lone-low", "truncated", "array", "huge-number"],
)
async def test_bad_bodies_are_400_naming_the_problem(api: Api, body: bytes, said: str) -> None:
    """The inbox, answer and abandon endpoints refuse each bad body with 400 invalid-body."""
    async with api.running(_asking_agent()) as (host, client):
        question = await _paused_question(api, client, host)
        headers = {"content-type": "application/json"}
        paths = [
            "/v1/agents/ops/inbox",
            f"/v1/agents/ops/questions/{question}/answer",
            f"/v1/agents/ops/questions/{question}/abandon",
        ]
        answers = [await client.post(path, content=body, headers=headers) for path in paths]
    for response in answers:
        assert response.status_code == 400, response.text
        assert error_of(response)["code"] == "invalid-body"
        assert said in error_of(response)["message"]
        assert error_of(response)["field"] == "body" and "value" in error_of(response)


async def test_a_null_value_is_shown_and_a_missing_one_is_not(api: Api) -> None:
    """An answer of JSON ``null`` is refused with ``value: "null"`` (it used to lose its value,
    as if none had been sent); a message with no text names ``text`` and shows no value."""
    async with api.running(_asking_agent()) as (host, client):
        question = await _paused_question(api, client, host)
        null = await client.post(
            f"/v1/agents/ops/questions/{question}/answer", json={"value": None}
        )
        textless = await client.post("/v1/agents/ops/inbox", json={"from": "ann"})
    assert null.status_code == 422 and error_of(null)["value"] == "null"
    assert "None" not in error_of(null)["message"]
    assert error_of(textless)["field"] == "text" and "value" not in error_of(textless)


@pytest.mark.parametrize("path", ["/v1/events", "/v1/agents/ops/events"])
async def test_a_last_event_id_with_other_digits_is_a_restart_gap(api: Api, path: str) -> None:
    """``Last-Event-ID: <boot>-²`` resumes as from an unknown point (a restarted gap), not 500."""
    async with api.host(agent([answer("one")])) as host:
        async with api.client(host) as local:
            await post(local)
        await settle(host)
        resume = f"{host.events.boot_id}-\u00b2"
        async with serving(api.app(host)) as url, httpx.AsyncClient(base_url=url) as client:
            with anyio.fail_after(10):
                raw_header = [(b"Last-Event-ID", resume.encode("latin-1"))]
                async with client.stream("GET", path, headers=raw_header) as response:
                    assert response.status_code == 200
                    items = frames(response)
                    opening = await anext(items)
                    gap = await anext(items)
    assert opening == {"comment": "open"}
    assert gap["event"] == "stream.gap" and gap["data"]["reason"] == "restarted"


@pytest.mark.parametrize("types", ["", "turn.,", "turn,,run", " turn"])
async def test_a_types_filter_with_empty_or_spaced_entries_is_400(api: Api, types: str) -> None:
    """``types`` must be a comma list of prefixes: an empty entry or a space is 400 naming it,
    where it used to be read as no filter at all."""
    async with api.running(agent([])) as (_, client):
        response = await client.get("/v1/agents/ops/events", params={"types": types})
    assert response.status_code == 400
    assert (error_of(response)["code"], error_of(response)["field"]) == ("invalid-query", "types")


async def test_a_last_event_id_past_its_limit_is_400(api: Api) -> None:
    """A Last-Event-ID longer than 200 characters is 400 invalid-header, not cut and used."""
    async with api.running(agent([])) as (_, client):
        response = await client.get("/v1/events", headers={"Last-Event-ID": "0" * 201})
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid-header"
    assert error_of(response)["field"] == "Last-Event-ID"


async def test_a_damaged_row_is_503_store_damaged_naming_it_not_a_500(api: Api) -> None:
    """A run whose usage cell no longer decodes makes the runs and inbox listings answer 503
    ``store-damaged`` naming the run and pointing to ``afp doctor``, not 500 ``internal``."""
    import sqlite3

    async with api.running(agent([answer("hi")])) as (host, client):
        await host.post("ops", "go")
        await settle(host)

        def damage() -> None:
            with sqlite3.connect(api.path) as conn:
                conn.execute("UPDATE runs SET usage = x'c1'")

        await anyio.to_thread.run_sync(damage)
        answers = [
            await client.get(path) for path in ("/v1/agents/ops/runs", "/v1/agents/ops/inbox")
        ]
    for response in answers:
        assert response.status_code == 503, response.text
        body = response.json()["error"]
        assert body["code"] == "store-damaged" and "usage of run" in body["message"]
        assert "afp doctor" in body["message"]
