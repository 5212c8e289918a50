"""API: the local HTTP API (Litestar, served by uvicorn) over a running host.

The server stack loads at first use of its names (``create_app``, ``ApiServer``...), so the
response shapes and view builders (``afp_runtime.api.shapes``, ``afp_runtime.api.views``),
which ``afp`` prints too, import without it.
"""

from __future__ import annotations

import typing as _typing

from afp_runtime._lazy import lazy_names as _lazy_names
from afp_runtime.api.constants import (
    DEFAULT_HOST,
    DEFAULT_KEEPALIVE_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_STREAMS,
    DEFAULT_PORT,
    MAX_BODY_CEILING,
    MIN_TOKEN_CHARS,
)

if _typing.TYPE_CHECKING:
    from afp_runtime.api._connections import ConnectionLimits
    from afp_runtime.api.app import create_app
    from afp_runtime.api.server import (
        ApiServer,
        check_binding,
        check_token,
        is_loopback,
        open_listener,
    )
    from afp_runtime.api.serving import serve_until_stopped

_LAZY = {
    "ConnectionLimits": "afp_runtime.api._connections",
    "create_app": "afp_runtime.api.app",
    "ApiServer": "afp_runtime.api.server",
    "check_binding": "afp_runtime.api.server",
    "check_token": "afp_runtime.api.server",
    "is_loopback": "afp_runtime.api.server",
    "open_listener": "afp_runtime.api.server",
    "serve_until_stopped": "afp_runtime.api.serving",
}


__getattr__ = _lazy_names("afp_runtime.api", _LAZY, globals())


__all__ = [
    "ApiServer",
    "ConnectionLimits",
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
