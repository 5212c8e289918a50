"""A streamed reply that fails gets the named outcome a failed call gets
(docs/loop.md#streaming-replies): an early end, a cut connection and a stall are ``network``, a
malformed event ``bad-response`` naming it, an error event is classified as the same error in a
JSON body, and a retry resends the same bytes and keeps nothing of the failed stream."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from afp_runtime.errors import ModelCallError
from afp_runtime.messages import ModelRequest, user
from afp_runtime.models import (
    AnthropicModel,
    OpenAICompatModel,
    ReplyDelta,
    RetryPolicy,
    send_with_retries,
)
from afp_runtime.models._http import HttpModel
from tests.models._sse_wire import anthropic_events, openai_events, sse

REQUEST = ModelRequest(model="m", messages=(user("hello"),))
OPENAI_OK = {"choices": [{"index": 0, "message": {"content": "done"}, "finish_reason": "stop"}]}
ANTHROPIC_OK = {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}


def openai(url: str, **kw: Any) -> HttpModel:
    return OpenAICompatModel(base_url=url + "/v1", model="m", stream=True, **kw)


def anthropic(url: str, **kw: Any) -> HttpModel:
    return AnthropicModel(model="m", api_key="k", base_url=url, stream=True, **kw)


ADAPTERS: dict[str, tuple[Callable[..., HttpModel], bytes]] = {
    "openai-compatible": (openai, sse(openai_events(OPENAI_OK))),
    "anthropic": (anthropic, sse(anthropic_events(ANTHROPIC_OK))),
}


@pytest.fixture(name="adapter", params=sorted(ADAPTERS))
def fixture_adapter(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def failure(server: Any, adapter: str, **kw: Any) -> tuple[ModelCallError, list[ReplyDelta]]:
    """Send once; the error it fails with and the fragments seen before."""
    model = ADAPTERS[adapter][0](server.url, **kw)
    deltas: list[ReplyDelta] = []
    try:
        with pytest.raises(ModelCallError) as caught:
            await model.send(REQUEST, on_delta=deltas.append)
    finally:
        await model.aclose()
    return caught.value, deltas


def without_terminal(data: bytes) -> bytes:
    """The stream with its terminal event (the last one) left out."""
    events = data.split(b"\n\n")
    return b"\n\n".join(events[:-2]) + b"\n\n"


async def test_a_stream_that_ends_early_is_a_retryable_network_error(server, adapter) -> None:
    """The body ends cleanly but before ``[DONE]``/``message_stop``: ``network``, retryable,
    naming the missing terminal event; the text seen so far was only a live signal."""
    server.stream([without_terminal(ADAPTERS[adapter][1])])
    error, deltas = await failure(server, adapter)
    assert (error.error_kind, error.retryable) == ("network", True)
    assert "ended before its terminal event" in str(error)
    assert "".join(d.text for d in deltas) == "done"


async def test_a_cut_connection_is_a_network_error(server, adapter) -> None:
    data = ADAPTERS[adapter][1]
    server.stream([data[: len(data) // 2]], cut=True)
    error, _ = await failure(server, adapter)
    assert (error.error_kind, error.retryable) == ("network", True)


async def test_a_stall_mid_stream_times_out(server, adapter) -> None:
    """No byte for ``timeout_s`` after the stream began: httpx's read timeout applies to each
    read, and the call fails as a timed-out request (``network``, retryable)."""
    data = ADAPTERS[adapter][1]
    server.stream([data[: data.index(b"\n\n", data.index(b'"don')) + 2]], stall=True)
    error, deltas = await failure(server, adapter, timeout_s=0.5)
    assert (error.error_kind, error.retryable) == ("network", True)
    assert "timed out" in str(error)
    assert deltas  # the stall came after the stream had begun


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ([(None, '{"choices": [')], "chunk 1 is not valid JSON"),
        ([(None, "[1, 2]")], "chunk 1 is list, not a JSON object"),
        ([(None, '{"choices": [{"index": 0, "delta": {"content": 7}}]}')], "delta.content is 7"),
        ([(None, '{"choices": "none"}')], "chunk 1.choices is 'none'"),
    ],
)
async def test_a_malformed_openai_chunk_is_a_bad_response_naming_it(server, events, says) -> None:
    server.stream([sse([*events, (None, "[DONE]")])])
    error, _ = await failure(server, "openai-compatible")
    assert (error.error_kind, error.retryable) == ("bad-response", True)
    assert says in str(error)


@pytest.mark.parametrize(
    ("event", "says"),
    [
        (("content_block_delta", "{not json"), "event content_block_delta is not valid JSON"),
        (
            ("content_block_delta", '{"type": "content_block_delta", "index": 5, "delta": {}}'),
            "block 5, which never started",
        ),
        (("message_start", '{"type": "message_start"}'), "event message_start has no message"),
    ],
)
async def test_a_malformed_anthropic_event_is_a_bad_response_naming_it(server, event, says) -> None:
    start = ("message_start", json.dumps({"type": "message_start", "message": {"content": []}}))
    server.stream([sse([start, event, ("message_stop", '{"type": "message_stop"}')])])
    error, _ = await failure(server, "anthropic")
    assert (error.error_kind, error.retryable) == ("bad-response", True)
    assert says in str(error)


@pytest.mark.parametrize(
    ("error_type", "message", "kind", "retryable"),
    [
        ("overloaded_error", "Overloaded", "server", True),
        ("api_error", "Internal error", "server", True),
        ("rate_limit_error", "slow down", "rate-limited", True),
        ("invalid_request_error", "prompt is too long: 300000 tokens", "context-length", False),
        ("authentication_error", "bad key", "auth", False),
        ("some_new_error", "who knows", "server", True),
    ],
)
async def test_an_anthropic_error_event_is_classified_like_an_error_body(
    server, error_type, message, kind, retryable
) -> None:
    """An ``error`` event mid-stream (after text has begun) is the error the same body at its
    status would be; the message names the event's type and what the provider said."""
    events = anthropic_events(ANTHROPIC_OK)[:4]  # start, ping, block start, first text
    failing = {"type": "error", "error": {"type": error_type, "message": message}}
    server.stream([sse([*events, ("error", json.dumps(failing))])])
    error, deltas = await failure(server, "anthropic")
    assert (error.error_kind, error.retryable, error.status) == (kind, retryable, None)
    assert error_type in str(error) and message in str(error)
    assert deltas


async def test_an_openai_error_chunk_is_classified_like_an_error_body(server) -> None:
    events = openai_events(OPENAI_OK)[:2]
    failing = {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}
    server.stream([sse([*events, (None, json.dumps(failing))])])
    error, _ = await failure(server, "openai-compatible")
    assert (error.error_kind, error.retryable) == ("rate-limited", True)
    assert "Rate limit reached" in str(error)


async def test_a_status_before_the_stream_is_classified_as_today(server, adapter) -> None:
    """A 429 answered instead of a stream is read whole and classified by its status, its
    Retry-After honoured."""
    server.reply(
        429,
        json_body={"error": {"type": "rate_limit_error", "message": "slow"}},
        headers={"Retry-After": "3"},
    )
    error, _ = await failure(server, adapter)
    assert (error.error_kind, error.status, error.retry_after_s) == ("rate-limited", 429, 3.0)


async def test_a_failed_stream_is_retried_with_the_same_bytes(server, adapter) -> None:
    """The retry loop resends the very bytes after a stream that ended early; the reply is the
    second stream's alone (nothing of the first is kept)."""
    make, good = ADAPTERS[adapter]
    model = make(server.url)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    server.stream([without_terminal(good).replace(b"done", b"gone")])
    server.stream([good])
    encoded = model.encode(REQUEST)
    try:
        reply, attempts = await send_with_retries(
            model, encoded, sleep=sleep, random=lambda: 0.5, policy=RetryPolicy()
        )
    finally:
        await model.aclose()
    assert reply.content == "done"
    assert [a.error_kind for a in attempts] == ["network"] and len(waits) == 1
    assert [r.body for r in server.received] == [encoded.body, encoded.body]
