"""API: the local HTTP API (Litestar, served by uvicorn) over a running host."""

from afp_runtime.api.app import (
    DEFAULT_KEEPALIVE_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_STREAMS,
    create_app,
)
from afp_runtime.api.server import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    MAX_BODY_CEILING,
    MIN_TOKEN_CHARS,
    ApiServer,
    check_binding,
    check_token,
    is_loopback,
    open_listener,
)
from afp_runtime.api.serving import serve_until_stopped

__all__ = [
    "ApiServer",
    "DEFAULT_HOST",
    "DEFAULT_KEEPALIVE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_STREAMS",
    "DEFAULT_PORT",
    "MAX_BODY_CEILING",
    "MIN_TOKEN_CHARS",
    "check_binding",
    "check_token",
    "create_app",
    "is_loopback",
    "open_listener",
    "serve_until_stopped",
]
