"""Slow and idle clients, and too many of them, against the real server on a loopback socket
(docs/api.md#connection-limits). Timeouts are fractions of a second here, so nothing waits long;
every wait is bounded by ``fail_after`` well past them, and a server without the bounds never
gets there."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from anyio.abc import SocketStream

from afp_runtime.api._connections import ConnectionLimits, connection_cap
from afp_runtime.errors import ConfigError

from .conftest import Api, agent, serving

FAST = ConnectionLimits(header_timeout_s=0.4, body_timeout_s=0.4, keep_alive_s=0.4)
# Past every timeout above with room for a loaded machine; a server without them stays open.
BOUND_S = 4.0


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def _connect(url: str, local: str = "127.0.0.1") -> SocketStream:
    return await anyio.connect_tcp("127.0.0.1", _port(url), local_host=local)


async def _read_until_closed(stream: SocketStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    with anyio.fail_after(BOUND_S):
        while True:
            try:
                data += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                return data


async def _refused(url: str, local: str = "127.0.0.1") -> bytes:
    async with await _connect(url, local) as stream:
        return await _read_until_closed(stream)


def _health(url: str) -> bytes:
    return f"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:{_port(url)}\r\n\r\n".encode()


async def test_headers_sent_byte_by_byte_are_cut_off_while_others_are_answered(
    api: Api,
) -> None:
    """A client that keeps sending header bytes, slowly, never completing them, is
    disconnected after the header timeout; a normal client is answered meanwhile."""
    async with api.host(agent([])) as host, serving(api.app(host), limits=FAST) as url:
        slow = await _connect(url)
        head = f"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:{_port(url)}\r\nX-Pad: ".encode()
        closed = False
        with anyio.fail_after(BOUND_S):
            for byte in head + b"a" * 10_000:
                try:
                    await slow.send(bytes([byte]))
                    with anyio.move_on_after(0.05):
                        await slow.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                    closed = True
                    break
        await slow.aclose()
        assert closed
        async with httpx.AsyncClient(base_url=url) as client:
            assert (await client.get("/v1/health")).status_code == 200


async def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(
    api: Api,
) -> None:
    async with (
        api.host(agent([])) as host,
        serving(api.app(host), limits=FAST) as url,
        await _connect(url) as silent,
    ):
        assert await _read_until_closed(silent) == b""


async def test_a_body_shorter_than_its_content_length_is_answered_408(api: Api) -> None:
    """The headers promise 100 bytes, 5 arrive: 408 ``body-timeout`` after the body timeout,
    and the connection is closed."""
    async with api.host(agent([])) as host, serving(api.app(host), limits=FAST) as url:
        async with await _connect(url) as stream:
            await stream.send(
                (
                    f"POST /v1/agents/ops/inbox HTTP/1.1\r\nHost: 127.0.0.1:{_port(url)}\r\n"
                    'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"tex'
                ).encode()
            )
            answer = await _read_until_closed(stream)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 ")
        assert json.loads(body)["error"]["code"] == "body-timeout"
        assert await host.reader.inbox("ops") == []


async def test_an_idle_keep_alive_connection_is_closed_after_the_bound(api: Api) -> None:
    """After a response, a connection with no next request is closed after ``keep_alive_s``;
    one that starts the next request and stalls is closed after the header timeout."""
    async with api.host(agent([])) as host, serving(api.app(host), limits=FAST) as url:
        async with await _connect(url) as idle:
            await idle.send(_health(url))
            answer = await _read_until_closed(idle)
        assert answer.startswith(b"HTTP/1.1 200 ") and answer.count(b"HTTP/1.1") == 1

        async with await _connect(url) as trickling:
            await trickling.send(_health(url))
            with anyio.fail_after(BOUND_S):
                first = await trickling.receive()
            assert first.startswith(b"HTTP/1.1 200 ")
            await trickling.send(b"G")  # the next request begins, and goes no further
            await _read_until_closed(trickling)


async def test_connections_past_the_per_client_and_total_limits_are_refused(api: Api) -> None:
    """Two connections per client, four in all: a third from one address and a fifth in all are
    answered 503 ``too-many-connections`` and closed at once, while a client within the limits
    is answered."""
    limits = ConnectionLimits(header_timeout_s=30, max_connections=4, max_connections_per_client=2)
    async with api.host(agent([])) as host, serving(api.app(host), limits=limits) as url:
        held = [await _connect(url), await _connect(url)]
        refused = await _refused(url)
        head, _, body = refused.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503 ")
        assert json.loads(body)["error"]["code"] == "too-many-connections"
        assert "this client" in json.loads(body)["error"]["message"]
        held.append(await _connect(url, "127.0.0.2"))

        transport = httpx.AsyncHTTPTransport(local_address="127.0.0.3")
        async with httpx.AsyncClient(base_url=url, transport=transport) as client:
            assert (await client.get("/v1/health")).status_code == 200
            # Four open now (the client's connection is kept alive): a fifth is refused.
            refused = await _refused(url, "127.0.0.4")
            assert refused.startswith(b"HTTP/1.1 503 ")
            assert b"the server holds its limit of 4" in refused
        for stream in held:
            await stream.aclose()
        # Once they are gone, the same address is served again.
        async with httpx.AsyncClient(base_url=url) as client:
            with anyio.fail_after(BOUND_S):
                while True:
                    try:
                        response = await client.get("/v1/health")
                    except httpx.TransportError:
                        response = None
                    if response is not None and response.status_code == 200:
                        break
                    await anyio.sleep(0.05)


def test_the_total_limit_stays_below_the_descriptor_limit() -> None:
    """A quarter of the descriptors (at least 128) stay free for the store and tools."""
    assert connection_cap(512, 1024) == 512
    assert connection_cap(5000, 1024) == 768
    assert connection_cap(512, 256) == 128
    assert connection_cap(512, 100) == 1


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"header_timeout_s": 0}, "api.headerTimeoutS"),
        ({"body_timeout_s": float("nan")}, "api.bodyTimeoutS"),
        ({"keep_alive_s": -1}, "api.keepAliveS"),
        ({"max_connections": 0}, "api.maxConnections"),
        ({"max_connections_per_client": True}, "api.maxConnectionsPerClient"),
        # No bound at all, or one that closes every connection, is no setting either.
        ({"header_timeout_s": 1e308}, "api.headerTimeoutS"),
        ({"keep_alive_s": 1e-9}, "api.keepAliveS"),
        ({"body_timeout_s": 1e-300}, "api.bodyTimeoutS"),
        ({"max_connections": 10**17}, "api.maxConnections"),
        ({"max_connections": 8, "max_connections_per_client": 9}, "api.maxConnectionsPerClient"),
    ],
)
def test_bad_limits_are_refused_naming_them(options: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ConnectionLimits(**options)  # type: ignore[arg-type]
    assert caught.value.context["field"] == field
