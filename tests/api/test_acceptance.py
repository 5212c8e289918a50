"""The acceptance run: the demo agent driven over a real socket, every epoch's served view
fetched over HTTP, verified, and equal to what the scripted model received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec

from afp_runtime.agents import read_config
from afp_runtime.demo import QUESTIONS
from afp_runtime.models import ScriptedModel

from .conftest import Api, serving

DEMO = Path(__file__).resolve().parents[2] / "configs" / "demo.toml"
# Runtime markers travel with the conversation but are never sent (docs/served.md#salted-digests).
MARKERS = ("notDispatched", "injectedBy")


async def _answered(client: httpx.AsyncClient, message_id: str) -> dict[str, Any]:
    with anyio.fail_after(20):
        while True:
            one = (await client.get(f"/v1/agents/demo/inbox/{message_id}")).json()
            if one["status"] not in ("queued", "running"):
                return one
            await anyio.sleep(0.01)


async def _all(client: httpx.AsyncClient, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = f"?limit=50&cursor={cursor}" if cursor else "?limit=50"
        page = (await client.get(path + query)).json()
        items += page["items"]
        cursor = page["next"]
        if cursor is None:
            return items


def _sent(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in MARKERS}


async def test_demo_agent_over_http_every_view_verified_and_as_sent(api: Api) -> None:
    """Over uvicorn: the demo answers every question posted to its inbox; every epoch's view
    and report come over HTTP, every report is verified, and asSent (plus the request-only
    lines) is exactly what the scripted model received at that call."""
    _, agents = await anyio.to_thread.run_sync(read_config, DEMO)
    definition = agents[0]
    model = definition.model
    assert isinstance(model, ScriptedModel)
    async with (
        api.host(definition) as host,
        serving(api.app(host)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        assert (await client.get("/v1/health")).json()["status"] == "ok"
        for question in QUESTIONS * 2:
            response = await client.post("/v1/agents/demo/inbox", json={"text": question})
            assert response.status_code == 202
            one = await _answered(client, response.json()["messageId"])
            assert one["status"] == "answered" and one["answer"]
        runs = list(reversed(await _all(client, "/v1/agents/demo/runs")))
        checked = []
        for run in runs:
            for entry in await _all(client, f"/v1/runs/{run['runId']}/epochs"):
                base = f"/v1/runs/{run['runId']}/epochs/{entry['epoch']}"
                view = (await client.get(f"{base}/served")).json()
                report = (await client.get(f"{base}/conformance?wire=true")).json()
                call = (await client.get(f"/v1/agents/demo/calls/{entry['agentCall']}")).json()
                checked.append((entry, view, report, call))
        folded = (await client.get("/v1/agents/demo/folded")).json()["items"]
    assert [r["status"] for r in runs] == ["answered"] * 2 * len(QUESTIONS)
    assert len(checked) == model.calls == len(model.requests)
    assert [entry["agentCall"] for entry, *_ in checked] == list(range(1, model.calls + 1))
    assert folded, "the demo's window folded something on the way"
    for entry, view, report, call in checked:
        assert report["verdict"] == "verified", (entry, report)
        assert call["view"] == view
        request = model.requests[entry["agentCall"] - 1]
        received = msgspec.json.decode(msgspec.json.encode(request.messages))
        as_sent = [_sent(m) for m in view["messages"]["asSent"]]
        request_only = [
            {"role": line["role"], "content": line["text"]}
            for line in view["messages"]["requestOnly"]
        ]
        assert as_sent + request_only == received
        assert view["system"]["text"] == request.system
        assert view["tools"]["names"] == [tool.name for tool in request.tools]
