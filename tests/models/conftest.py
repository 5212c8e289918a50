"""A real local HTTP server for the adapter tests, scripted per test.

The server runs ``http.server.ThreadingHTTPServer`` on 127.0.0.1 in a background thread. Each
test queues the responses it wants, in order; the server records every request it receives
(method, path, headers, body bytes). Two extra modes exercise failures: ``truncated`` announces a
longer ``Content-Length`` than it sends and then closes the connection, and ``delay_s`` waits
before answering (for client timeouts). A streamed response (``LocalServer.stream``) is sent with
chunked transfer coding, one HTTP chunk per piece given and flushed after each, so the client
sees the byte stream cut where the test cut it; it may end cleanly, be cut off (``cut``: the
connection closes mid-body) or stall (``stall``: it waits, sending nothing, until the test ends).

The test (event-loop) side only appends to a deque and reads a list, which take no lock, so
blockbuster never sees the loop thread wait on the server thread.
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from afp_runtime.models import AnthropicModel, OpenAICompatModel


@dataclass(frozen=True)
class Scripted:
    """One response the server will give."""

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    truncated: bool = False
    delay_s: float = 0.0
    send_date: bool = True
    chunks: tuple[bytes, ...] | None = None
    cut: bool = False
    stall: bool = False


@dataclass(frozen=True)
class Received:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass
class LocalServer:
    """The handle a test uses: queue responses, read what was received."""

    url: str = ""
    received: list[Received] = field(default_factory=list)
    script: collections.deque[Scripted] = field(default_factory=collections.deque)
    release: threading.Event = field(default_factory=threading.Event)

    def reply(
        self,
        status: int = 200,
        *,
        json_body: Any = None,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
        truncated: bool = False,
        delay_s: float = 0.0,
        send_date: bool = True,
    ) -> None:
        """Queue one response; ``json_body`` is encoded as JSON when given.

        A ``Date`` header is added, as real servers do, unless ``headers`` names one or
        ``send_date`` is false.
        """
        pairs = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body).encode("utf-8")
            pairs.setdefault("Content-Type", "application/json")
        self.script.append(
            Scripted(
                status=status,
                body=body,
                headers=tuple(pairs.items()),
                truncated=truncated,
                delay_s=delay_s,
                send_date=send_date and "date" not in {k.lower() for k in pairs},
            )
        )

    def stream(
        self,
        chunks: list[bytes] | tuple[bytes, ...],
        *,
        status: int = 200,
        content_type: str = "text/event-stream",
        cut: bool = False,
        stall: bool = False,
    ) -> None:
        """Queue one chunked response sending ``chunks`` one by one (empty ones are skipped)."""
        self.script.append(
            Scripted(
                status=status,
                headers=(("Content-Type", content_type),),
                chunks=tuple(chunk for chunk in chunks if chunk),
                cut=cut,
                stall=stall,
            )
        )


def _send_chunked(
    handler: BaseHTTPRequestHandler, scripted: Scripted, release: threading.Event
) -> None:
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    for chunk in scripted.chunks or ():
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        handler.wfile.flush()
    if scripted.stall:
        release.wait(60)
    if scripted.cut or scripted.stall:
        handler.close_connection = True
        return
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def _handler_for(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Each streamed piece leaves at once (Nagle would hold small writes for an ACK).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Stay quiet: the tests read ``received`` instead."""

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            server.received.append(
                Received(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
            )
            try:
                scripted = server.script.popleft()
            except IndexError:
                scripted = Scripted(status=599, body=b'{"error": "no scripted response left"}')
            if scripted.delay_s and server.release.wait(scripted.delay_s):
                self.close_connection = True
                return
            self.send_response_only(scripted.status)
            if scripted.send_date:
                self.send_header("Date", self.date_time_string())
            for name, value in scripted.headers:
                self.send_header(name, value)
            if scripted.chunks is not None:
                _send_chunked(self, scripted, server.release)
                return
            announced = len(scripted.body) + (64 if scripted.truncated else 0)
            self.send_header("Content-Length", str(announced))
            if scripted.truncated:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(scripted.body)
            self.wfile.flush()
            if scripted.truncated:
                self.close_connection = True

        do_GET = do_POST

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout tests) is expected; say nothing."""


@pytest.fixture(name="server")
def fixture_server() -> Iterator[LocalServer]:
    """A scripted HTTP server on 127.0.0.1, shut down after the test."""
    handle = LocalServer()
    httpd = _Server(("127.0.0.1", 0), _handler_for(handle))
    handle.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(
        target=httpd.serve_forever, args=(0.02,), name="local-model-server", daemon=True
    )
    thread.start()
    try:
        yield handle
    finally:
        handle.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(name="openai")
async def fixture_openai(server: LocalServer) -> AsyncIterator[OpenAICompatModel]:
    """An OpenAI-compatible adapter pointed at the local server, with a test key."""
    model = OpenAICompatModel(base_url=server.url + "/v1", model="gpt-test", api_key="sk-test")
    yield model
    await model.aclose()


@pytest.fixture(name="anthropic")
async def fixture_anthropic(server: LocalServer) -> AsyncIterator[AnthropicModel]:
    """An Anthropic adapter pointed at the local server, with a test key."""
    model = AnthropicModel(model="claude-test", api_key="ak-test", base_url=server.url)
    yield model
    await model.aclose()
