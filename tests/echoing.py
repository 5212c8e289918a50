"""A model endpoint that echoes the credentials it was sent (issue 34 item 3).

A real HTTP server on 127.0.0.1 (``http.server`` in a background thread) that answers every
POST, on the OpenAI-compatible path (``/v1/chat/completions``) or the Anthropic one
(``/v1/messages``), with 401 and the vendor's error shape, its message quoting the request's
``Authorization`` and ``x-api-key`` headers as careless proxies and test servers do.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_KEY = "sk-echo-0123456789abcdefOPENAI"
ANTHROPIC_KEY = "sk-ant-echo-0123456789abcdefANTH"
BASIC_USER = "robot"
BASIC_PASSWORD = "pw-basic-Zx81q"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        said = (
            f"invalid credentials: Authorization: {self.headers.get('Authorization')}, "
            f"x-api-key: {self.headers.get('x-api-key')}"
        )
        if self.path.endswith("/messages"):
            error: Any = {
                "type": "error",
                "error": {"type": "authentication_error", "message": said},
            }
        else:
            error = {"error": {"message": said, "type": "invalid_request_error", "code": None}}
        body = json.dumps(error).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True


@contextmanager
def echoing_provider() -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT``) of a running echoing endpoint."""
    httpd = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
