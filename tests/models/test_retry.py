"""Retries of both HTTP adapters through send_with_retries, and the mapping of httpx errors.

The retry loop's sleep is a fake that records the seconds asked for, and its random source is
fixed, so no test waits on the wall clock.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from afp_runtime.errors import ModelCallError
from afp_runtime.messages import ModelRequest, user
from afp_runtime.models import (
    AnthropicModel,
    Attempt,
    OpenAICompatModel,
    RetryPolicy,
    backoff_s,
    send_with_retries,
)
from afp_runtime.models._http import HttpModel
from afp_runtime.models._http_reading import parse_retry_after

UNIT = 0.5


@dataclass(frozen=True)
class Adapter:
    """How to build one adapter and what its provider answers on success."""

    name: str
    make: Callable[..., HttpModel]
    ok_body: dict[str, Any]
    error_body: dict[str, Any]


ADAPTERS = [
    Adapter(
        name="openai-compatible",
        make=lambda url, **kw: OpenAICompatModel(base_url=url + "/v1", model="m", **kw),
        ok_body={"choices": [{"message": {"content": "done"}, "finish_reason": "stop"}]},
        error_body={"error": {"message": "slow down", "type": "rate_limit_error"}},
    ),
    Adapter(
        name="anthropic",
        make=lambda url, **kw: AnthropicModel(model="m", api_key="k", base_url=url, **kw),
        ok_body={"type": "message", "content": [{"type": "text", "text": "done"}]},
        error_body={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
    ),
]
REQUEST = ModelRequest(model="m", system="Be brief.", messages=(user("hello"),))


class Sleeps:
    """A fake sleep: records the seconds asked for and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture(name="adapter", params=ADAPTERS, ids=[a.name for a in ADAPTERS])
def fixture_adapter(request: pytest.FixtureRequest) -> Adapter:
    """Each HTTP adapter in turn."""
    return request.param


@pytest.fixture(name="model")
async def fixture_model(adapter: Adapter, server) -> AsyncIterator[HttpModel]:
    """The adapter under test, pointed at the local server."""
    model = adapter.make(server.url)
    yield model
    await model.aclose()


async def retried(model: HttpModel, policy: RetryPolicy, sleeps: Sleeps) -> Any:
    """Send REQUEST through the retry loop with the fake sleep and a fixed random unit."""
    return await send_with_retries(
        model, model.encode(REQUEST), sleep=sleeps, random=lambda: UNIT, policy=policy
    )


@pytest.mark.parametrize(
    ("attempt", "unit", "expected"),
    [(1, 0.5, 0.5), (2, 0.5, 1.0), (3, 0.25, 1.0), (6, 1.0, 30.0), (10, 0.1, 3.0), (1, 0.0, 0.0)],
)
def test_backoff_is_full_jitter_under_the_cap(attempt, unit, expected) -> None:
    """The wait after attempt a is unit * min(cap, base * 2^(a-1))."""
    policy = RetryPolicy(base_s=1.0, cap_s=30.0)

    assert backoff_s(policy, attempt, unit) == pytest.approx(expected)


async def test_429_and_5xx_are_retried_with_jittered_backoff(adapter, model, server) -> None:
    """A 429 and a 503 are retried after jittered exponential waits, then the reply arrives."""
    server.reply(429, json_body=adapter.error_body, send_date=False)
    server.reply(503, body=b"upstream down")
    server.reply(json_body=adapter.ok_body)
    sleeps = Sleeps()

    reply, attempts = await retried(model, RetryPolicy(base_s=1.0, cap_s=30.0), sleeps)

    assert reply.content == "done"
    assert sleeps.waits == [UNIT * 1.0, UNIT * 2.0]
    assert attempts == (
        Attempt(error_kind="rate-limited", status=429, waited_ms=500),
        Attempt(error_kind="server", status=503, waited_ms=1000),
    )
    bodies = {received.body for received in server.received}
    assert bodies == {model.encode(REQUEST).body}
    assert len(server.received) == 3


async def test_attempts_are_bounded_and_waits_capped(adapter, model, server) -> None:
    """Persistent 5xx stop after max_attempts sends, each wait under the cap."""
    for status in (500, 502, 503, 529, 504, 500):
        server.reply(status, body=b"{}")
    sleeps = Sleeps()
    policy = RetryPolicy(max_attempts=5, base_s=1.0, cap_s=3.0)

    with pytest.raises(ModelCallError) as caught:
        await retried(model, policy, sleeps)

    assert sleeps.waits == [UNIT * 1.0, UNIT * 2.0, UNIT * 3.0, UNIT * 3.0]
    assert len(server.received) == 5
    assert caught.value.error_kind == "server"
    assert caught.value.status == 504
    assert [a.status for a in caught.value.attempts] == [500, 502, 503, 529, 504]
    assert adapter.name in str(caught.value)


async def test_retry_after_seconds_is_honoured_exactly(adapter, model, server) -> None:
    """A Retry-After in seconds is waited exactly, instead of the jittered backoff."""
    server.reply(429, json_body=adapter.error_body, headers={"Retry-After": "7"})
    server.reply(503, body=b"{}", headers={"Retry-After": "0"})
    server.reply(json_body=adapter.ok_body)
    sleeps = Sleeps()

    reply, attempts = await retried(model, RetryPolicy(), sleeps)

    assert reply.content == "done"
    assert sleeps.waits == [7.0, 0.0]
    assert [a.waited_ms for a in attempts] == [7000, 0]


async def test_retry_after_http_date_is_measured_from_the_date_header(
    adapter, model, server
) -> None:
    """A Retry-After HTTP-date waits its distance from the response's Date header."""
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    later = "Wed, 21 Oct 2015 07:28:42 GMT"
    server.reply(503, body=b"{}", headers={"Retry-After": later, "Date": date})
    server.reply(json_body=adapter.ok_body)
    sleeps = Sleeps()

    reply, _ = await retried(model, RetryPolicy(), sleeps)

    assert reply.content == "done"
    assert sleeps.waits == [42.0]


async def test_retry_after_date_without_date_header_falls_back_to_backoff(
    adapter, model, server
) -> None:
    """A Retry-After HTTP-date with no Date to measure from is ignored: backoff applies."""
    server.reply(
        429, body=b"{}", headers={"Retry-After": "Wed, 21 Oct 2015 07:28:42 GMT"}, send_date=False
    )
    server.reply(json_body=adapter.ok_body)
    sleeps = Sleeps()

    await retried(model, RetryPolicy(base_s=2.0), sleeps)

    assert sleeps.waits == [UNIT * 2.0]


async def test_retry_after_above_the_cap_raises_at_once(model, server) -> None:
    """A Retry-After longer than retry_after_cap_s fails at once, with no wait and no resend."""
    server.reply(429, body=b"{}", headers={"Retry-After": "301"})
    sleeps = Sleeps()

    with pytest.raises(ModelCallError) as caught:
        await retried(model, RetryPolicy(retry_after_cap_s=300.0), sleeps)

    assert sleeps.waits == []
    assert len(server.received) == 1
    assert caught.value.error_kind == "rate-limited"
    assert caught.value.retry_after_s == 301.0


async def test_a_truncated_body_is_retried(adapter, model, server) -> None:
    """A body cut short is a network error the loop retries."""
    server.reply(json_body=adapter.ok_body, truncated=True)
    server.reply(json_body=adapter.ok_body)
    sleeps = Sleeps()

    reply, attempts = await retried(model, RetryPolicy(), sleeps)

    assert reply.content == "done"
    assert [a.error_kind for a in attempts] == ["network"]
    assert sleeps.waits == [UNIT]


@pytest.mark.parametrize(
    ("value", "date", "expected"),
    [
        ("120", None, 120.0),
        (" 3 ", None, 3.0),
        ("1.5", None, 1.5),
        ("Wed, 21 Oct 2015 07:29:00 GMT", "Wed, 21 Oct 2015 07:28:00 GMT", 60.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", "Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
        ("Wed, 21 Oct 2015 07:29:00 GMT", None, None),
        ("Wed, 21 Oct 2015 07:29:00 GMT", "garbage", None),
        ("-5", None, None),
        ("soon", "Wed, 21 Oct 2015 07:28:00 GMT", None),
        (None, None, None),
    ],
)
def test_parse_retry_after(value, date, expected) -> None:
    """Retry-After reads as seconds or as an HTTP-date against Date; anything else is None."""
    assert parse_retry_after(value, date) == expected


def _all_subclasses(root: type[Exception]) -> set[type[Exception]]:
    found = {root}
    for sub in root.__subclasses__():
        found |= _all_subclasses(sub)
    return found


HTTPX_EXCEPTIONS = sorted(
    {
        cls
        for root in (httpx.HTTPError, httpx.StreamError, httpx.InvalidURL, httpx.CookieConflict)
        for cls in _all_subclasses(root)
        if cls.__module__.startswith("httpx")
    },
    key=lambda cls: cls.__name__,
)


def _instance(cls: type[Exception], request: httpx.Request) -> Exception:
    """Build one httpx exception the way httpx itself raises it."""
    if issubclass(cls, httpx.HTTPStatusError):
        response = httpx.Response(503, request=request, content=b"{}")
        return cls("status", request=request, response=response)
    if issubclass(cls, httpx.RequestError):
        return cls("simulated failure", request=request)
    takes_nothing = not inspect.signature(cls.__init__).parameters.keys() - {"self"}
    if issubclass(cls, httpx.StreamError) and takes_nothing:
        return cls()
    return cls("simulated failure")


def test_the_exception_list_covers_what_a_request_can_raise() -> None:
    """The walk over httpx's exception tree finds the classes a request can raise."""
    expected = {
        httpx.ConnectTimeout,
        httpx.ReadTimeout,
        httpx.WriteTimeout,
        httpx.PoolTimeout,
        httpx.ConnectError,
        httpx.ReadError,
        httpx.WriteError,
        httpx.CloseError,
        httpx.RemoteProtocolError,
        httpx.LocalProtocolError,
        httpx.ProxyError,
        httpx.UnsupportedProtocol,
        httpx.DecodingError,
        httpx.TooManyRedirects,
        httpx.StreamConsumed,
        httpx.StreamClosed,
        httpx.ResponseNotRead,
        httpx.RequestNotRead,
        httpx.InvalidURL,
    }
    assert expected <= set(HTTPX_EXCEPTIONS)


KIND_OF = {
    httpx.DecodingError: "bad-response",
    httpx.TooManyRedirects: "bad-request",
    httpx.InvalidURL: "bad-request",
    httpx.CookieConflict: "bad-request",
    httpx.HTTPStatusError: "server",
}


@pytest.mark.parametrize("exc_class", HTTPX_EXCEPTIONS, ids=lambda cls: cls.__name__)
async def test_every_httpx_exception_becomes_a_model_call_error(adapter, exc_class) -> None:
    """Each httpx exception a request can raise is re-raised as ModelCallError, cause chained."""
    raised: list[Exception] = []

    def handler(request: httpx.Request) -> httpx.Response:
        exc = _instance(exc_class, request)
        raised.append(exc)
        raise exc

    model = adapter.make("http://model.test", transport=httpx.MockTransport(handler))
    try:
        with pytest.raises(ModelCallError) as caught:
            await model.send(REQUEST)
    finally:
        await model.aclose()

    assert caught.value.__cause__ is raised[0]
    assert caught.value.provider == adapter.name
    assert str(caught.value).startswith(f"{adapter.name}: ")
    assert caught.value.error_kind == KIND_OF.get(exc_class, "network")
    assert caught.value.retryable is (caught.value.error_kind != "bad-request")


async def test_a_mock_transport_reply_decodes(adapter) -> None:
    """The same adapter decodes a provider reply served by an httpx MockTransport."""
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200, json=adapter.ok_body)

    model = adapter.make("http://model.test", transport=httpx.MockTransport(handler))
    reply = await model.send(REQUEST)
    await model.aclose()

    assert reply.content == "done"
    assert seen == [model.encode(REQUEST).body]
