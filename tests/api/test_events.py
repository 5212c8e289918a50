"""Server-sent events over a real loopback socket, and a client that never reads driven at the
ASGI level (docs/api.md#the-event-stream, case 34)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from afp_runtime.models import StreamedReply
from afp_runtime.testing import answer, call, tool_reply

from .conftest import Api, agent, error_of, post, serving, settle, until

SCRIPT = [tool_reply(call("c1", "alpha_tool")), tool_reply(call("c2", "alpha_tool")), answer("ok")]


async def frames(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """SSE frames as dicts (``id``, ``event``, ``data`` decoded), comments as ``{"comment"}``."""
    current: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if not line:
            if current:
                yield current
                current = {}
        elif line.startswith(":"):
            yield {"comment": line[1:].strip()}
        else:
            field, _, value = line.partition(": ")
            current[field] = json.loads(value) if field == "data" else value


async def collect(
    client: httpx.AsyncClient, path: str, *, until: int, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Read a stream's event frames (comments skipped) until one carries id number ``until``."""
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(10):
        async with client.stream("GET", path, headers=headers) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            async for item in frames(response):
                if "comment" in item:
                    continue
                seen.append(item)
                if "id" in item and int(item["id"].rpartition("-")[2]) >= until:
                    break
    return seen


async def test_case_34_reconnect_with_last_event_id_resumes_in_order(api: Api) -> None:
    """Case 34: reconnecting with the Last-Event-ID of event 10 receives 11 onwards, in order,
    each frame with its id, type and envelope."""
    async with api.host(agent(SCRIPT)) as host:
        async with api.client(host) as local:
            await post(local)
        await settle(host)
        last = host.events.last_id
        boot = host.events.boot_id
        assert last > 12
        async with serving(api.app(host)) as url, httpx.AsyncClient(base_url=url) as client:
            seen = await collect(
                client,
                "/v1/agents/ops/events",
                until=last,
                headers={"Last-Event-ID": f"{boot}-10"},
            )
    assert [int(f["id"].rpartition("-")[2]) for f in seen] == list(range(11, last + 1))
    assert all(f["id"].startswith(f"{boot}-") for f in seen)
    assert all(f["event"] == f["data"]["type"] for f in seen)
    assert all(f["data"]["agentId"] == "ops" for f in seen)
    assert seen[-1]["event"] in ("run.ended", "turn.ended", "iteration.ended")


async def test_follow_false_sends_the_history_then_ends(api: Api) -> None:
    """``follow=false`` sends every event the host holds (after Last-Event-ID when given) and
    closes the stream, where a following stream stays open."""
    async with api.host(agent(SCRIPT)) as host:
        async with api.client(host) as local:
            await post(local)
        await settle(host)
        last, boot = host.events.last_id, host.events.boot_id
        async with serving(api.app(host)) as url, httpx.AsyncClient(base_url=url) as client:
            with anyio.fail_after(10):
                whole = await client.get("/v1/events", params={"follow": "false"})
                after = await client.get(
                    "/v1/agents/ops/events",
                    params={"follow": "false", "types": "turn."},
                    headers={"Last-Event-ID": f"{boot}-3"},
                )
    ids = [int(line.rpartition("-")[2]) for line in whole.text.splitlines() if line[:4] == "id: "]
    assert ids == list(range(1, last + 1))
    types = [line[7:] for line in after.text.splitlines() if line.startswith("event: ")]
    assert types and all(kind.startswith("turn.") for kind in types)
    lines = after.text.splitlines()
    resumed = [int(line.rpartition("-")[2]) for line in lines if line[:4] == "id: "]
    assert resumed and min(resumed) > 3


async def test_case_34_after_a_restart_the_first_frame_is_a_gap(api: Api) -> None:
    """Case 34: after a host restart, a client resuming with the old boot's id first gets
    stream.gap with reason restarted, then live events."""
    async with api.host(agent([answer("one")])) as host:
        async with api.client(host) as local:
            await post(local)
        await settle(host)
        old = f"{host.events.boot_id}-{host.events.last_id}"
    async with (
        api.host(agent([answer("two")])) as host,
        serving(api.app(host)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        with anyio.fail_after(10):
            async with client.stream(
                "GET", "/v1/events", headers={"Last-Event-ID": old}
            ) as response:
                items = frames(response)
                opening = await anext(items)
                gap = await anext(items)
    assert opening == {"comment": "open"}
    assert gap["event"] == "stream.gap" and "id" not in gap
    assert gap["data"] == {"reason": "restarted", "missedFrom": old}


async def test_live_events_are_filtered_by_agent_and_type(api: Api) -> None:
    """A per-agent stream sees only its agent; types narrows to the given prefixes."""
    other = agent([answer("other")], agent_id="other")
    async with (
        api.host(agent([answer("mine")]), other) as host,
        serving(api.app(host)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        with anyio.fail_after(10):
            async with client.stream("GET", "/v1/agents/ops/events?types=turn.,inbox.") as response:
                items = frames(response)
                assert await anext(items) == {"comment": "open"}
                await post(client, agent_id="other")
                await post(client, agent_id="ops")
                seen = [await anext(items), await anext(items)]
        bad = await client.get("/v1/events?types=NOT VALID")
        bad_agent = await client.get("/v1/events?agent=Bad_Id")
    assert [f["event"] for f in seen] == ["inbox.accepted", "turn.started"]
    assert all(f["data"]["agentId"] == "ops" for f in seen)
    assert bad.status_code == 400 and error_of(bad)["field"] == "types"
    assert bad_agent.status_code == 400 and error_of(bad_agent)["field"] == "agent"


async def test_idle_streams_get_keep_alive_comments(api: Api) -> None:
    """An idle stream gets a keep-alive comment every keepalive_s seconds."""
    async with api.host(agent([])) as host:
        app = api.app(host, keepalive_s=0.05)
        async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
            with anyio.fail_after(10):
                async with client.stream("GET", "/v1/events") as response:
                    items = frames(response)
                    got = [await anext(items), await anext(items), await anext(items)]
    assert got == [{"comment": "open"}, {"comment": "keep-alive"}, {"comment": "keep-alive"}]


async def test_too_many_streams_is_429(api: Api) -> None:
    """Past max_streams open streams, another is refused with 429 too-many-streams."""
    async with api.host(agent([])) as host:
        app = api.app(host, max_streams=1)
        async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
            with anyio.fail_after(10):
                async with client.stream("GET", "/v1/events") as response:
                    assert await anext(frames(response)) == {"comment": "open"}
                    refused = await client.get("/v1/events")

            async def reopened() -> bool:
                async with client.stream("GET", "/v1/events") as again:
                    return again.status_code == 200

            await until(reopened)  # the first client left: its slot is free again
    assert refused.status_code == 429 and error_of(refused)["code"] == "too-many-streams"


async def test_case_34_a_client_that_never_reads_does_not_delay_a_turn(api: Api) -> None:
    """Case 34: while a stream's client reads nothing (its sends block), a turn finishes in
    time; once it reads again the first frame is stream.gap with reason slow-client."""
    script = [tool_reply(call(f"c{i}", "alpha_tool")) for i in range(4)] + [answer("done")]
    async with api.host(agent(script), subscriber_buffer=4) as host:
        app = api.app(host)
        unblock = anyio.Event()
        opened = anyio.Event()
        chunks: list[bytes] = []

        finished = anyio.Event()

        async def receive() -> dict[str, Any]:
            await finished.wait()  # like a server: the client is gone once the response ends
            return {"type": "http.disconnect"}

        got_gap = anyio.Event()

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                finished.set()
            if message["type"] == "http.response.body" and message.get("body"):
                if not opened.is_set():
                    opened.set()
                    chunks.append(message["body"])
                    return
                await unblock.wait()  # the client's socket is full: sending waits
                chunks.append(message["body"])
                if b"stream.gap" in message["body"]:
                    got_gap.set()

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": "/v1/agents/ops/events",
            "raw_path": b"/v1/agents/ops/events",
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1:8765")],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8765),
        }
        async with anyio.create_task_group() as tg:
            tg.start_soon(app, scope, receive, send)
            with anyio.fail_after(10):
                await opened.wait()
                async with api.client(host) as local:
                    await post(local)
                await settle(host)  # the whole turn, while the stream is stuck
            unblock.set()
            with anyio.fail_after(10):
                await got_gap.wait()
            host.stop()  # ends the stream
    text = b"".join(chunks).decode()
    blocks = [b for b in text.split("\n\n") if b and not b.startswith(":")]
    first = blocks[1] if blocks[0].startswith("id:") else blocks[0]
    assert "event: stream.gap" in first
    gap = json.loads(first.partition("data: ")[2])
    assert gap["reason"] == "slow-client" and gap["count"] > 0


async def test_a_streamed_reply_arrives_as_fragments_without_ids(api: Api) -> None:
    """A streamed reply's fragments are ``model.delta`` frames between ``model.started`` and
    ``model.ended``, in order, with no ``id`` line; a resume from the last numbered event
    before them replays the numbered events only (docs/api.md#the-event-stream)."""
    streamed = StreamedReply(reply=answer("Hello there"), sizes=(4,))
    async with (
        api.host(agent([streamed])) as host,
        serving(api.app(host)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        with anyio.fail_after(10):
            async with client.stream("GET", "/v1/agents/ops/events?types=model.") as response:
                items = frames(response)
                assert await anext(items) == {"comment": "open"}
                await post(client)
                seen = [await anext(items) for _ in range(5)]
            started_id = seen[0]["id"]
            resumed = await client.get(
                "/v1/agents/ops/events",
                params={"follow": "false", "types": "model."},
                headers={"Last-Event-ID": started_id},
            )
    assert [f["event"] for f in seen] == ["model.started", *["model.delta"] * 3, "model.ended"]
    fragments = [f for f in seen if f["event"] == "model.delta"]
    assert all("id" not in f for f in fragments)
    assert [f["data"]["payload"] for f in fragments] == [
        {"epoch": 1, "attempt": 1, "index": 0, "text": "Hell"},
        {"epoch": 1, "attempt": 1, "index": 1, "text": "o th"},
        {"epoch": 1, "attempt": 1, "index": 2, "text": "ere"},
    ]
    assert "model.delta" not in resumed.text
    assert "event: model.ended" in resumed.text
