"""The server rules every request passes before routing (docs/api.md#server-rules).

An ASGI wrapper around the app's handler, so it runs for every HTTP request — unknown routes
included — and a refused request never reaches a handler. In order:

1. a correlation id, echoed on every response as ``X-Request-Id``;
2. only paths under ``/v1/`` exist (404 ``route-not-found``);
3. without tokens, the ``Host`` header must name the loopback address and port being served
   (400 ``bad-host``: DNS rebinding); with tokens, every request except ``GET /v1/health``
   needs ``Authorization: Bearer <token>`` of a known principal (401 ``unauthorized``), so a
   client without one cannot probe which routes exist. The principal is put in the scope
   (``_caller.PRINCIPAL_KEY``) for the handlers (docs/api.md#principals-and-tokens);
4. only the routes of the operation table exist (404 ``route-not-found``); a method the path
   does not answer is 405 ``method-not-allowed`` with an ``Allow`` header, and ``OPTIONS`` is
   answered here (204 with ``Allow``), both from the same table as the OpenAPI
   document; ``HEAD`` runs the ``GET`` and sends its status and headers only;
5. a POST whose ``Origin`` names another site is 403 ``cross-origin``, with or without a body
   (a page elsewhere cannot make a browser act on the API);
6. the body may not exceed the limit: refused from ``Content-Length`` before reading, and counted
   while reading otherwise (413 ``body-too-large``). The body is read here in full and handed to
   the app afterwards, so the handler only ever sees a body within the limit;
7. a POST that carries a body, or names a content type, must say ``application/json`` (415
   ``unsupported-media-type``): a form's content type is refused even when the form is empty. A
   POST without a body and without a content type (``resume``, ``dismiss``, ``abandon``) passes.

The port the ``Host`` header must carry is the one given to the app, or else the port of the
socket the request arrived on (the ASGI ``server`` of the scope).
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, MutableMapping
from typing import Any

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from afp_runtime.api._caller import PRINCIPAL_KEY
from afp_runtime.api._operations import allowed_methods
from afp_runtime.api._problems import REQUEST_ID_HEADER, REQUEST_ID_KEY, ApiError
from afp_runtime.api.inspector._render import wants_html
from afp_runtime.api.inspector.pages import page_methods, public_page
from afp_runtime.api.inspector.session import Sessions
from afp_runtime.api.principals import Principal, Principals

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
# The headers the rules below decide by: each may come once.
_SINGLE_HEADERS = frozenset({"host", "origin", "authorization", "content-type", "content-length"})
MAX_HEADER_BYTES = 16 * 1024
# On every inspector response (docs/inspector.md#server-rules): no inline script, no asset from
# elsewhere, no framing, nothing sniffed or cached.
PAGE_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class _TooLarge(Exception):
    """The body grew past the limit while it was read."""


class _Answered(Exception):
    """The guard answered the request itself (``OPTIONS``)."""

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        super().__init__(status)
        self.status = status
        self.headers = headers


class Guard:
    """Wraps the app's ASGI handler with the server rules.

    Args:
        app: the wrapped ASGI handler.
        principals: the principals whose tokens are accepted, or None when serving without
            tokens.
        sessions: the inspector's sessions of those principals (None without tokens).
        max_body_bytes: the request body limit.
        port: the port the ``Host`` header must name (default: the socket's).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        principals: Principals | None,
        sessions: Sessions | None,
        max_body_bytes: int,
        port: int | None,
    ) -> None:
        self.app = app
        self._principals = principals
        self._sessions = sessions
        self.max_body_bytes = max_body_bytes
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = secrets.token_hex(8)
        raw_scope: MutableMapping[str, Any] = scope  # type: ignore[assignment]
        raw_scope[REQUEST_ID_KEY] = rid

        page = not scope["path"].startswith("/v1/")

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                headers.append((REQUEST_ID_HEADER.lower().encode(), rid.encode()))
                if page:
                    headers.extend(PAGE_HEADERS)
                message["headers"] = headers
            await send(message)

        try:
            receive = await self._check(scope, receive)
        except ApiError as error:
            accept = next((v for k, v in scope.get("headers", []) if k.lower() == b"accept"), b"")
            html = page and wants_html(scope["path"], accept.decode("latin-1") or None)
            await _send_error(send_with_id, error, html=html)
            return
        except _Answered as answer:
            await _send(send_with_id, answer.status, answer.headers)
            return
        if scope["method"] == "HEAD":  # type: ignore[typeddict-item]
            # The server keeps its own scope (it knows not to send a body for HEAD); the app
            # sees a GET whose body is dropped, and an endless stream ends after its headers.
            head_scope: Any = {**scope, "method": "GET"}
            head_send, head_receive = _headers_only(send_with_id, receive)
            await self.app(head_scope, head_receive, head_send)
            return
        await self.app(scope, receive, send_with_id)

    async def _check(self, scope: Scope, receive: Receive) -> Receive:
        headers = _headers(scope)
        path: str = scope["path"]
        method: str = scope["method"]  # type: ignore[typeddict-item]
        if not path.startswith("/v1/"):
            return await self._check_page(scope, receive, headers, path, method)
        if self._principals is None:
            self._check_host(scope, headers.get("host"))
        elif not (method in ("GET", "HEAD") and path == "/v1/health"):
            _enter(scope, self._check_token(headers.get("authorization")))
        allowed = allowed_methods(path)
        if allowed is None:
            raise ApiError(404, "route-not-found", f"no endpoint answers {path[:200]}")
        _check_method(path, method, allowed)
        if method == "POST":
            _check_origin(headers, scope, "the API takes no request sent by another site's page")
        return await self._body(receive, headers, method, "application/json", strict=True)

    async def _check_page(
        self, scope: Scope, receive: Receive, headers: dict[str, str], path: str, method: str
    ) -> Receive:
        """The rules for the inspector's pages (docs/inspector.md#server-rules): the API's
        ``Host`` check without a token; with one, the session cookie (or the bearer token) on
        every page but the sign-in form and the assets, a page asked for without it answered
        by a redirect to the form; a POST only from a page of this origin, as a form."""
        allowed = page_methods(path)
        if allowed is None:
            raise ApiError(404, "route-not-found", f"no endpoint answers {path[:200]}")
        if self._principals is None:
            self._check_host(scope, headers.get("host"))
        elif not public_page(path):
            principal = self._page_signed_in(headers)
            if principal is None:
                if method in ("GET", "HEAD"):
                    raise _Answered(303, {"Location": "/login", "Cache-Control": "no-store"})
                raise ApiError(401, "unauthorized", "sign in to the inspector first")
            _enter(scope, principal)
        _check_method(path, method, {*allowed, "OPTIONS", *(["HEAD"] if "GET" in allowed else [])})
        if method == "POST":
            # A form posted from another site's page (SameSite=Strict already keeps the cookie
            # off it; this refuses it without a token too).
            _check_origin(headers, scope, "a form may only be posted from this inspector")
        return await self._body(receive, headers, method, "application/x-www-form-urlencoded")

    async def _body(
        self,
        receive: Receive,
        headers: dict[str, str],
        method: str,
        media_type: str,
        *,
        strict: bool = False,
    ) -> Receive:
        """The body within the limit, read in full for a POST (which must say ``media_type``
        when it carries one, and with ``strict`` whenever it names a content type at all) and
        handed on; other methods' bodies never reach a handler."""
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise self._too_large()
        if method != "POST":  # the only method with a body that reaches a handler
            return receive
        try:
            body = await self._read_body(receive)
        except _TooLarge:
            raise self._too_large() from None
        declared_type = headers.get("content-type")
        kind = (declared_type or "").split(";", 1)[0].strip().lower()
        # An empty form still names its content type: strictly, naming any other is refused,
        # so a browser's form (always text/plain, urlencoded or multipart) never gets through.
        if (body or (strict and declared_type is not None)) and kind != media_type:
            raise ApiError(
                415,
                "unsupported-media-type",
                f"a POST with a body must carry Content-Type: {media_type}",
                field="Content-Type",
                value=headers.get("content-type", ""),
            )
        return _replay(body, receive)

    def _page_signed_in(self, headers: dict[str, str]) -> Principal | None:
        assert self._principals is not None and self._sessions is not None
        found = self._sessions.signed_in(headers.get("cookie"))
        return found or self._principals.bearer(headers.get("authorization"))

    def _too_large(self) -> ApiError:
        return ApiError(
            413,
            "body-too-large",
            f"the request body may hold at most {self.max_body_bytes} bytes",
        )

    def _check_host(self, scope: Scope, host: str | None) -> None:
        port = self.port
        if port is None:
            server = scope.get("server")
            port = server[1] if server and server[1] is not None else None
        suffix = f":{port}" if port is not None else ""
        allowed = {name + suffix for name in _LOOPBACK_NAMES}
        if host is None or host.lower() not in allowed:
            raise ApiError(
                400,
                "bad-host",
                "without a token the API answers only requests addressed to its loopback "
                "address and port",
                field="Host",
                value=host or "",
            )

    def _check_token(self, authorization: str | None) -> Principal:
        assert self._principals is not None
        principal = self._principals.bearer(authorization)
        if principal is None:
            raise ApiError(
                401,
                "unauthorized",
                "this API needs Authorization: Bearer <token>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return principal

    async def _read_body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _enter(scope: Scope, principal: Principal) -> None:
    """Hand the request's principal to the handlers."""
    raw_scope: MutableMapping[str, Any] = scope  # type: ignore[assignment]
    raw_scope[PRINCIPAL_KEY] = principal


def _check_origin(headers: dict[str, str], scope: Scope, message: str) -> None:
    """403 ``cross-origin`` for a request a page of another site sent (``Origin: null`` of a
    sandboxed or local page included)."""
    origin = headers.get("origin")
    if origin is not None and _foreign(origin, scope.get("scheme", "http"), headers.get("host")):
        raise ApiError(403, "cross-origin", message, field="Origin", value=origin)


def _foreign(origin: str, scheme: str, host: str | None) -> bool:
    """Whether an ``Origin`` names another site than the one the request was sent to: another
    scheme (``https://`` to a plain-HTTP server is another origin) or another ``Host``."""
    given_scheme, sep, given_host = origin.partition("://")
    return not sep or given_scheme.lower() != scheme.lower() or given_host != host


def _check_method(path: str, method: str, allowed: Collection[str]) -> None:
    """405 with ``Allow`` for a method the path does not answer; ``OPTIONS`` answered here."""
    allow = {"Allow": ", ".join(sorted(allowed))}
    if method not in allowed:
        raise ApiError(
            405,
            "method-not-allowed",
            f"{method[:20]} is not allowed on {path[:200]}; it answers {allow['Allow']}",
            headers=allow,
        )
    if method == "OPTIONS":
        raise _Answered(204, allow)


def _headers(scope: Scope) -> dict[str, str]:
    """Request headers by lower-case name, decoded as latin-1. Headers past ``MAX_HEADER_BYTES``
    in all are 431 ``headers-too-large`` (h11 bounds only headers that arrive in pieces); a
    header the rules decide by, sent twice, is 400 ``duplicate-header``, since which of the two
    counts would differ between a proxy, a browser and this server."""
    raw = scope.get("headers", [])
    if sum(len(name) + len(value) for name, value in raw) > MAX_HEADER_BYTES:
        raise ApiError(
            431,
            "headers-too-large",
            f"the request's headers may hold at most {MAX_HEADER_BYTES} bytes",
        )
    headers: dict[str, str] = {}
    for name_bytes, value_bytes in raw:
        name = name_bytes.decode("latin-1").lower()
        if name in headers and name in _SINGLE_HEADERS:
            raise ApiError(
                400, "duplicate-header", f"the {name} header may be sent once", field=name
            )
        headers[name] = value_bytes.decode("latin-1")
    return headers


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then defers to the client's."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _headers_only(send: Send, receive: Receive) -> tuple[Send, Receive]:
    """A send that ends the response right after its headers, and a receive that reports the
    client gone once it has (so a streaming handler stops)."""
    ended = False

    async def send_headers(message: Message) -> None:
        nonlocal ended
        if ended:
            return
        if message["type"] == "http.response.start":
            await send(message)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            ended = True

    async def receive_until_ended() -> Any:
        if ended:
            return {"type": "http.disconnect"}
        return await receive()

    return send_headers, receive_until_ended


async def _send(send: Send, status: int, headers: dict[str, str], body: bytes = b"") -> None:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _send_error(send: Send, error: ApiError, *, html: bool = False) -> None:
    if html:
        body, media_type = error.page(), "text/html; charset=utf-8"
    else:
        body, media_type = error.encoded(), "application/json"
    own_headers = {"content-type": media_type, "content-length": str(len(body))}
    await _send(send, error.status, {**own_headers, **error.headers}, body)
