"""Server rules in process: token, Host header, media type, body size, paging, error shape,
shutdown, OpenAPI and no CORS (docs/api.md#server-rules, docs/api.md#validation-and-error-codes,
cases 30 and 31)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from afp_runtime.api import check_binding, create_app, is_loopback
from afp_runtime.errors import ConfigError
from afp_runtime.host import Host
from afp_runtime.store import DefinitionSummary
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import answer

from .conftest import TOKEN, Api, agent, error_of


async def test_case_30_token_required_when_configured(api: Api) -> None:
    """Case 30: with a token, a request without Authorization (or with a wrong one) is 401 with
    WWW-Authenticate; with it 200; health needs none."""
    async with api.running(agent([]), token=TOKEN) as (_, client):
        missing = await client.get("/v1/agents")
        wrong = await client.get("/v1/agents", headers={"Authorization": "Bearer " + "x" * 40})
        basic = await client.get("/v1/agents", headers={"Authorization": f"Basic {TOKEN}"})
        right = await client.get("/v1/agents", headers={"Authorization": f"Bearer {TOKEN}"})
        health = await client.get("/v1/health")
        unknown = await client.get("/v1/unknown")
    for refused in (missing, wrong, basic, unknown):
        assert refused.status_code == 401
        assert error_of(refused)["code"] == "unauthorized"
        assert refused.headers["WWW-Authenticate"] == "Bearer"
    assert right.status_code == 200
    assert health.status_code == 200 and health.json()["status"] == "ok"


async def test_case_30_bad_host_without_a_token(api: Api) -> None:
    """Case 30: serving without a token, a Host that is not the loopback address and port is
    400 bad-host; 127.0.0.1, localhost and [::1] with the right port pass."""
    async with api.host(agent([])) as host:
        app = create_app(host, port=8765)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
            evil = await c.get("/v1/agents", headers={"Host": "evil.example"})
            other_port = await c.get("/v1/agents", headers={"Host": "127.0.0.1:9999"})
            fine = [
                await c.get("/v1/agents", headers={"Host": name})
                for name in ("127.0.0.1:8765", "localhost:8765", "[::1]:8765")
            ]
    assert evil.status_code == 400
    error = error_of(evil)
    assert (error["code"], error["field"], error["value"]) == ("bad-host", "Host", "evil.example")
    assert other_port.status_code == 400
    assert [r.status_code for r in fine] == [200, 200, 200]


def test_case_30_binding_rules() -> None:
    """Case 30: a non-loopback address without a token is refused naming api.token, as is a
    short token; loopback needs none."""
    with pytest.raises(ConfigError, match=r"api\.token"):
        check_binding("0.0.0.0", None)
    with pytest.raises(ConfigError, match=r"api\.token"):
        check_binding("127.0.0.1", "short")
    check_binding("127.0.0.1", None)
    check_binding("::1", None)
    check_binding("0.0.0.0", TOKEN)
    assert [is_loopback(h) for h in ("127.0.0.2", "localhost", "[::1]", "10.0.0.1", "x.org")] == [
        True,
        True,
        True,
        False,
        False,
    ]


async def test_create_app_refuses_a_short_token_and_a_huge_body_limit(api: Api) -> None:
    """create_app refuses a token under 32 characters and a body limit above 8 MiB."""
    async with api.host(agent([])) as host:
        with pytest.raises(ConfigError, match=r"api\.token"):
            create_app(host, token="x" * 31)
        with pytest.raises(ConfigError, match=r"api\.maxBodyBytes"):
            create_app(host, max_body_bytes=9 * 1024 * 1024)


async def test_case_31_body_too_large_never_reaches_the_handler(api: Api) -> None:
    """Case 31: a 300 KiB body is 413 body-too-large, by Content-Length and when chunked;
    nothing is stored."""
    text = "x" * (300 * 1024)

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"text": "'
        for _ in range(300):
            yield b"y" * 1024
        yield b'"}'

    async with api.running(agent([answer("never")])) as (_, client):
        declared = await client.post("/v1/agents/ops/inbox", json={"text": text})
        chunked = await client.post(
            "/v1/agents/ops/inbox",
            content=chunks(),
            headers={"Content-Type": "application/json"},
        )
        rows = (await client.get("/v1/agents/ops/inbox")).json()["items"]
    for response in (declared, chunked):
        assert response.status_code == 413
        assert error_of(response)["code"] == "body-too-large"
    assert rows == []


async def test_case_31_media_type_and_paging_limits(api: Api) -> None:
    """Case 31: text/plain is 415; limit 501, 0 or text is 400 invalid-query naming limit."""
    async with api.running(agent([])) as (_, client):
        plain = await client.post(
            "/v1/agents/ops/inbox",
            content=b'{"text": "hi"}',
            headers={"Content-Type": "text/plain"},
        )
        with_charset = await client.post(
            "/v1/agents/ops/inbox",
            content=b'{"text": "hi"}',
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
        limits = [await client.get(f"/v1/agents?limit={v}") for v in ("501", "0", "ten")]
        biggest = await client.get("/v1/agents?limit=500")
    assert plain.status_code == 415 and error_of(plain)["code"] == "unsupported-media-type"
    assert with_charset.status_code == 202
    for response in limits:
        assert response.status_code == 400
        assert (error_of(response)["code"], error_of(response)["field"]) == (
            "invalid-query",
            "limit",
        )
    assert biggest.status_code == 200


async def test_unknown_route_and_method_use_the_error_shape(api: Api) -> None:
    """Unknown paths are 404 route-not-found and a wrong method 405 method-not-allowed, both
    in the error shape."""
    async with api.running(agent([])) as (_, client):
        outside = await client.get("/schema")
        inside = await client.get("/v1/agents/ops/nothing")
        method = await client.delete("/v1/agents")
    assert outside.status_code == 404 and error_of(outside)["code"] == "route-not-found"
    assert inside.status_code == 404 and error_of(inside)["code"] == "route-not-found"
    assert method.status_code == 405 and error_of(method)["code"] == "method-not-allowed"


class BrokenHost(Host):
    """A host whose agent description fails, to reach the API's last-resort error path."""

    def profile(self, agent_id: str) -> DefinitionSummary | None:
        raise RuntimeError("secret internals of the failure")


async def test_internal_error_has_no_trace_and_a_request_id(
    api: Api, logs: list[dict[str, Any]]
) -> None:
    """An unexpected failure is 500 internal with X-Request-Id; the body holds no trace and the
    log entry carries the same id."""
    store = await SqliteStore.open(api.path, now_ms=api.clock.now_ms())
    try:
        async with (
            BrokenHost(store, [agent([])], clock=api.clock, ids=api.ids) as host,
            api.client(host) as client,
        ):
            response = await client.get("/v1/agents/ops")
            fine = await client.get("/v1/health")
    finally:
        await store.aclose()
    assert response.status_code == 500
    assert error_of(response)["code"] == "internal"
    assert "secret" not in response.text and "Traceback" not in response.text
    rid = response.headers["X-Request-Id"]
    assert [e["request_id"] for e in logs if e["event"] == "request failed"] == [rid]
    assert fine.headers["X-Request-Id"] != rid


async def test_no_cors_headers_are_sent(api: Api) -> None:
    """A browser's Origin gets no CORS header back, on a read or a preflight."""
    async with api.running(agent([])) as (_, client):
        origin = {"Origin": "http://evil.example"}
        read = await client.get("/v1/agents", headers=origin)
        preflight = await client.options(
            "/v1/agents/ops/inbox",
            headers={**origin, "Access-Control-Request-Method": "POST"},
        )
    for response in (read, preflight):
        assert not [h for h in response.headers if h.lower().startswith("access-control")]


async def test_writes_answer_503_while_the_host_stops(api: Api) -> None:
    """Once the host stops, health says shutting-down, a post is 503 shutting-down, and reads
    still answer."""
    async with api.running(agent([])) as (host, client):
        host.stop()
        health = (await client.get("/v1/health")).json()
        refused = await client.post("/v1/agents/ops/inbox", json={"text": "late"})
        read = await client.get("/v1/agents/ops/inbox")
    assert health["status"] == "shutting-down"
    assert refused.status_code == 503 and error_of(refused)["code"] == "shutting-down"
    assert read.status_code == 200


async def test_openapi_document_lists_the_endpoints(api: Api) -> None:
    """The OpenAPI document is served at /v1/openapi.json and names the served endpoints."""
    async with api.running(agent([])) as (_, client):
        response = await client.get("/v1/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.")
    paths = set(document["paths"])
    assert "/v1/agents/{agentId}/inbox" in paths
    assert "/v1/runs/{runId}/epochs/{epoch}/served" in paths
    assert "/v1/openapi.json" not in paths


async def test_a_deciding_header_sent_twice_and_oversized_headers_are_refused(api: Api) -> None:
    """Host, Origin, Authorization, Content-Type and Content-Length may come once (400
    ``duplicate-header``: a foreign Origin followed by our own must not pass as ours), and
    headers holding more than 16 KiB in all are 431 ``headers-too-large``, however they arrive
    (docs/api.md#connection-limits)."""
    async with api.running(agent([answer("hi")])) as (host, client):
        own = "http://127.0.0.1:8765"
        twice = [
            await client.post(
                "/v1/agents/ops/inbox",
                json={"text": "hi"},
                headers=[(name, first), (name, second)],
            )
            for name, first, second in (
                ("Origin", "http://evil.example", own),
                ("Content-Type", "text/plain", "application/json"),
                ("Authorization", "Bearer junk", "Bearer junk2"),
            )
        ]
        big = await client.get("/v1/agents", headers={"X-Big": "a" * 20_000})
        fine = await client.get("/v1/agents", headers={"X-Big": "a" * 8_000})
        posted = await host.reader.inbox("ops")
    assert [r.status_code for r in twice] == [400, 400, 400]
    assert [error_of(r)["code"] for r in twice] == ["duplicate-header"] * 3
    assert [error_of(r)["field"] for r in twice] == ["origin", "content-type", "authorization"]
    assert posted == []
    assert big.status_code == 431 and error_of(big)["code"] == "headers-too-large"
    assert fine.status_code == 200
