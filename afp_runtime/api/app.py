"""The app factory: a Litestar app over a running host
(docs/api.md#the-http-api-and-the-afp-command).

``create_app(host, token=…, principals=…)`` wires the endpoints of ``agents``, ``runs`` and
``events``, the error shape of ``_problems``, and the server rules of ``_guard`` (which wrap the
app's ASGI handler, so they run before routing). The OpenAPI document served at
``GET /v1/openapi.json`` is the one ``_openapi`` writes from its table of operations; Litestar's
own schema generation is off. No CORS middleware is installed, so no CORS header is ever sent.
"""

from __future__ import annotations

import functools
from types import MappingProxyType

import anyio
import msgspec
from litestar import Litestar, Response, get
from litestar.datastructures import State

from afp_runtime._version import VERSION
from afp_runtime.api import (
    agents,
    events,
    findings,
    inbox,
    questions,
    recall,
    runs,
    schedules,
    window,
)
from afp_runtime.api._context import STATE_KEY, ApiContext
from afp_runtime.api._guard import Guard
from afp_runtime.api._problems import EXCEPTION_HANDLERS
from afp_runtime.api.constants import (
    DEFAULT_KEEPALIVE_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_STREAMS,
    MAX_BODY_CEILING,
)
from afp_runtime.api.inspector import pages
from afp_runtime.api.inspector.session import Sessions
from afp_runtime.api.principals import Principals
from afp_runtime.api.server import check_token
from afp_runtime.errors import ConfigError
from afp_runtime.host import Host

_OPENAPI_MEDIA_TYPE = "application/vnd.oai.openapi+json"


@functools.cache
def _document_bytes() -> bytes:
    from afp_runtime.api import _openapi

    return msgspec.json.encode(_openapi.document(version=VERSION))


@get("/v1/openapi.json")
async def openapi_document() -> Response[bytes]:
    """The OpenAPI document of this API (built once, off the event loop)."""
    body = await anyio.to_thread.run_sync(_document_bytes)
    return Response(body, media_type=_OPENAPI_MEDIA_TYPE)


def _principals(token: str | None, principals: Principals | None) -> Principals | None:
    """Every principal the server knows (the single token's admin too); None for none."""
    known = Principals.of_token(token) if token is not None else Principals([])
    if principals is not None:
        known = known + principals
    return known if len(known) else None


def create_app(
    host: Host,
    *,
    token: str | None = None,
    principals: Principals | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    port: int | None = None,
    keepalive_s: float = DEFAULT_KEEPALIVE_S,
    max_streams: int = DEFAULT_MAX_STREAMS,
) -> Litestar:
    """The local HTTP API over ``host``.

    Args:
        host: the running host (its store, workers, inbox and events); every read goes
            through its store.
        token: the single bearer token, standing for the admin principal ``admin``.
        principals: the principals of a token file (docs/api.md#principals-and-tokens). With
            neither, requests need no token and the ``Host`` header must name the loopback
            address; with either, every request but health must carry a known one.
        max_body_bytes: the request body limit (1 .. 8 MiB).
        port: the port the ``Host`` header must name (default: the serving socket's).
        keepalive_s: seconds between keep-alive comments on idle event streams.
        max_streams: event streams open at once.

    Raises:
        ConfigError: a token shorter than 32 characters (``api.token``) or a body limit out of
            range (``api.maxBodyBytes``).
    """
    check_token(token)
    if isinstance(max_body_bytes, bool) or not 1 <= max_body_bytes <= MAX_BODY_CEILING:
        raise ConfigError(
            f"api.maxBodyBytes must be from 1 to {MAX_BODY_CEILING}, not {max_body_bytes!r}",
            field="api.maxBodyBytes",
        )
    known = _principals(token, principals)
    # Sessions are signed with a secret made here and held only in memory, on the host's
    # clock: nothing on disk makes one, and a restart ends them all (docs/inspector.md).
    sessions = Sessions(known, now_ms=host.clock.now_ms) if known is not None else None
    context = ApiContext(host, keepalive_s=keepalive_s, max_streams=max_streams)

    app = Litestar(
        route_handlers=[
            *agents.HANDLERS,
            *inbox.HANDLERS,
            *window.HANDLERS,
            *recall.HANDLERS,
            *findings.HANDLERS,
            *questions.HANDLERS,
            *schedules.HANDLERS,
            *runs.HANDLERS,
            *events.HANDLERS,
            *pages.HANDLERS,
            openapi_document,
        ],
        state=State(
            {STATE_KEY: context, pages.PAGES_KEY: pages.Pages(principals=known, sessions=sessions)}
        ),
        template_config=pages.template_config(),
        exception_handlers=dict(EXCEPTION_HANDLERS),
        openapi_config=None,
        type_encoders={MappingProxyType: dict},
        logging_config=None,
        request_max_body_size=None,
        debug=False,
    )
    # The server rules run before routing, for every request (unknown routes included).
    app.asgi_handler = Guard(
        app.asgi_handler,
        principals=known,
        sessions=sessions,
        max_body_bytes=max_body_bytes,
        port=port,
    )
    return app
