"""The OpenAPI document tells the truth (docs/api.md#the-openapi-document): bodies, the one
error shape, every status, typed parameters, an example per operation that decodes as its
answer, the routing table agreeing with the app; 405 with ``Allow``, ``OPTIONS`` and ``HEAD``."""

from __future__ import annotations

import re
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from afp_runtime.agents import checkins
from afp_runtime.api import create_app
from afp_runtime.api._openapi import captured_examples, example_of
from afp_runtime.api._operation_parts import ALWAYS
from afp_runtime.api._operations import OPERATIONS
from afp_runtime.api.constants import ANSWER_LIMIT, NOTE_LIMIT
from afp_runtime.testing import answer

from .conftest import Api, agent, error_of, post, serving, settle


async def _document(api: Api) -> dict[str, Any]:
    async with api.running(agent([])) as (_, client):
        response = await client.get("/v1/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/vnd.oai.openapi+json")
    document: dict[str, Any] = response.json()
    return document


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]


def _shape(path: str) -> str:
    """A route's path with every parameter name erased (Litestar and the table name them
    differently)."""
    return re.sub(r"\{[^}]+\}", "{}", path)


async def test_the_table_and_the_app_route_the_same_operations(api: Api) -> None:
    """Every operation the app routes under ``/v1/`` is in the document with the same method,
    and the document lists nothing the app does not route (the document itself aside)."""
    async with api.host(agent([])) as host:
        app = create_app(host)
    routed = {
        (method, _shape(route.path))
        for route in app.routes
        for method in getattr(route, "methods", ())
        if method not in ("HEAD", "OPTIONS")
        and route.path != "/v1/openapi.json"
        # The inspector's pages are HTML for people, not operations of the API.
        and route.path.startswith("/v1/")
    }
    documented = {(method, _shape(path)) for method, path, _ in _operations(await _document(api))}
    assert routed == documented
    assert len(documented) == len(OPERATIONS) == 38


async def test_every_post_documents_its_body_and_the_answer_bodies_follow_the_host(
    api: Api,
) -> None:
    """The inbox, answer and abandon bodies are JSON schemas with their limits; the answer's
    value allows text or an approval decision with the host's own limits."""
    document = await _document(api)
    posts = {path: op for method, path, op in _operations(document) if method == "POST"}
    schemas = document["components"]["schemas"]
    for path in (
        "/v1/agents/{agentId}/inbox",
        "/v1/agents/{agentId}/questions/{questionId}/answer",
        "/v1/agents/{agentId}/questions/{questionId}/abandon",
    ):
        body = posts[path]["requestBody"]["content"]["application/json"]["schema"]
        assert body["$ref"].startswith("#/components/schemas/")
    inbox = schemas["InboxPostBody"]
    assert inbox["required"] == ["text"]
    assert inbox["properties"]["text"]["maxLength"] == 32_000
    assert posts["/v1/agents/{agentId}/inbox"]["requestBody"]["required"] is True
    abandon = posts["/v1/agents/{agentId}/questions/{questionId}/abandon"]
    assert abandon["requestBody"]["required"] is False
    text, decision = schemas["AnswerBody"]["properties"]["value"]["anyOf"]
    assert (ANSWER_LIMIT, NOTE_LIMIT) == (checkins.ANSWER_LIMIT, checkins.NOTE_LIMIT)
    assert text["maxLength"] == ANSWER_LIMIT
    assert decision["properties"]["decision"]["enum"] == ["approve", "decline"]


async def test_errors_are_one_component_on_every_operation_with_every_status(api: Api) -> None:
    """Every operation's error statuses (400, 401, 404, 413, 503 and its own) point at the
    one Error component, whose shape is {error: {code, message, …}}; no Litestar shape."""
    document = await _document(api)
    schemas = document["components"]["schemas"]
    assert schemas["Error"]["required"] == ["error"]
    detail = schemas[schemas["Error"]["properties"]["error"]["$ref"].rsplit("/", 1)[1]]
    assert {"code", "message", "field", "value"} <= set(detail["properties"])
    assert not any("status_code" in str(schema) for schema in schemas.values())
    statuses: dict[tuple[str, str], set[str]] = {}
    for method, path, operation in _operations(document):
        responses = operation["responses"]
        statuses[(method, path)] = set(responses)
        for status in ALWAYS:
            error = responses[str(status)]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/Error"}, (method, path, status)
    inbox = statuses[("POST", "/v1/agents/{agentId}/inbox")]
    assert {"200", "202", "403", "409", "413", "415", "422"} <= inbox
    assert "429" in statuses[("GET", "/v1/events")]


async def test_parameters_are_typed_and_patterned(api: Api) -> None:
    """limit, epoch, n, fromSeq are integers with bounds, wire/expand/fromLog booleans, ids
    strings with the patterns the handlers check, cursor the pattern of the cursors handed out."""
    document = await _document(api)
    seen: dict[str, dict[str, Any]] = {}
    for _, _, operation in _operations(document):
        for parameter in operation["parameters"]:
            assert "schema" in parameter and parameter["schema"].get("type")
            seen[parameter["name"]] = parameter["schema"]
    for name in ("limit", "epoch", "n", "fromSeq", "fromEpoch", "turn"):
        assert seen[name]["type"] == "integer", name
    for name in ("wire", "expand", "fromLog", "follow"):
        assert seen[name]["type"] == "boolean", name
    for name in ("agentId", "runId", "messageId", "questionId", "summaryFingerprint", "cursor"):
        assert seen[name]["type"] == "string" and seen[name]["pattern"].startswith("^"), name


async def test_every_operation_has_an_example_that_decodes_as_its_answer(api: Api) -> None:
    """Each operation carries an example, and each JSON example decodes (strictly) as the
    type the handler answers with: examples are real answers, not sketches."""
    document = await _document(api)
    captured = await anyio.to_thread.run_sync(captured_examples)
    for op in OPERATIONS:
        content = document["paths"][op.path][op.method.lower()]["responses"][str(op.status)]
        if op.status == 204:  # a removal answers no body
            assert "content" not in content and op.response is None, op.operation_id
            continue
        [(media_type, entry)] = content["content"].items()
        assert entry.get("example") is not None, op.operation_id
        if media_type == "application/json":
            msgspec.convert(example_of(op, captured), op.response, strict=True)


async def test_a_method_the_path_does_not_answer_is_405_with_allow_before_content_type(
    api: Api,
) -> None:
    """A bodyless POST to a read-only path is 405 (not 415) and Allow names its methods; a
    DELETE on the inbox is 405 with GET, HEAD, OPTIONS, POST."""
    async with api.running(agent([])) as (_, client):
        bodyless = await client.post("/v1/agents/ops/runs")
        deleted = await client.delete("/v1/agents/ops/inbox")
        unknown = await client.post("/v1/agents/ops/nothing-here")
    assert bodyless.status_code == 405 and error_of(bodyless)["code"] == "method-not-allowed"
    assert bodyless.headers["allow"] == "GET, HEAD, OPTIONS"
    assert deleted.status_code == 405
    assert deleted.headers["allow"] == "GET, HEAD, OPTIONS, POST"
    assert unknown.status_code == 404 and error_of(unknown)["code"] == "route-not-found"


async def test_options_lists_every_method_of_the_path(api: Api) -> None:
    """OPTIONS on the inbox answers 204 with GET, HEAD, OPTIONS and POST; on a run's resume
    OPTIONS and POST."""
    async with api.running(agent([])) as (_, client):
        inbox = await client.options("/v1/agents/ops/inbox")
        resume = await client.options("/v1/runs/run-1/resume")
    assert inbox.status_code == 204 and inbox.content == b""
    assert inbox.headers["allow"] == "GET, HEAD, OPTIONS, POST"
    assert resume.headers["allow"] == "OPTIONS, POST"


async def test_head_answers_the_get_headers_without_a_body(api: Api) -> None:
    """HEAD on a GET route answers its status and headers with no body; on an unknown agent
    404; a POST-only path refuses HEAD with 405."""
    async with api.running(agent([answer("hi")])) as (host, client):
        await post(client, "hello")
        await settle(host)
        got = await client.get("/v1/agents/ops/inbox")
        head = await client.head("/v1/agents/ops/inbox")
        missing = await client.head("/v1/agents/nobody")
        refused = await client.head("/v1/runs/run-1/resume")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == got.headers["content-length"]
    assert missing.status_code == 404
    assert refused.status_code == 405


@pytest.mark.timeout(60)
async def test_head_on_an_event_stream_ends_after_its_headers(api: Api) -> None:
    """HEAD on a live event stream (a real socket) answers 200 text/event-stream and ends at
    once, where a GET would stream until the client leaves."""
    async with (
        api.host(agent([])) as host,
        serving(api.app(host)) as base,
        httpx.AsyncClient(base_url=base, timeout=5) as client,
    ):
        with anyio.fail_after(10):
            head = await client.head("/v1/agents/ops/events")
            again = await client.get("/v1/health")
    assert head.status_code == 200
    assert head.headers["content-type"].startswith("text/event-stream")
    assert head.content == b""
    assert again.status_code == 200
