"""API errors: one JSON shape for every failure, never a stack trace (docs/api.md#server-rules,
docs/api.md#validation-and-error-codes).

``{"error": {"code", "message", "field"?, "value"?}}``: ``code`` is a short stable code,
``field`` names the path, query or body field, ``value`` echoes the offending input truncated
to 200 code points. ``ApiError`` is the API's own control-flow exception: raised by handlers and
helpers, turned into that body by the exception handlers registered here. Domain errors that
reach the app unhandled are mapped too (a stopping host is 503 ``shutting-down``, a store that
cannot be read 503 ``store-unavailable``); anything else is 500 ``internal``, logged with the
request's correlation id, which the response echoes in ``X-Request-Id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, MethodNotAllowedException, NotFoundException

from afp_runtime._logging import get_logger
from afp_runtime.api.inspector._render import problem_page, wants_html
from afp_runtime.errors import LeaseLost, NotOwner, StoreDamaged, StoreUnavailable
from afp_runtime.host import HostStopping

log = get_logger()

VALUE_LIMIT = 200
REQUEST_ID_KEY = "afp_request_id"
REQUEST_ID_HEADER = "X-Request-Id"
# Seconds a client is asked to wait before sending a write the store refused again.
RETRY_AFTER_S = 5


class ErrorDetail(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The inside of an error body."""

    code: str
    message: str
    field: str | None = None
    value: str | None = None
    reason: str | None = None


class ErrorBody(msgspec.Struct, frozen=True, kw_only=True):
    """Every error response's body."""

    error: ErrorDetail


def shown_value(value: object) -> str:
    """The offending input as text, truncated to 200 code points."""
    try:
        text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    except (TypeError, ValueError, UnicodeError):
        text = repr(value)
    # Lone surrogates cannot be written as UTF-8 JSON: they are shown as U+FFFD.
    return "".join(
        "\ufffd" if 0xD800 <= ord(char) <= 0xDFFF else char for char in text[:VALUE_LIMIT]
    )


_NO_VALUE: Any = object()


class ApiError(Exception):
    """A request the API answers with an error body.

    Args:
        status: the HTTP status.
        code: the stable error code (docs/api.md#validation-and-error-codes).
        message: a readable explanation in our own words.
        field: the path, query or body field at fault.
        value: the offending input (truncated when rendered).
        headers: extra response headers (``WWW-Authenticate``).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        value: object = _NO_VALUE,
        headers: Mapping[str, str] | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        # A JSON null the client sent is shown as ``null``; only no value at all is left out.
        self.value = None if value is _NO_VALUE else shown_value(value)
        self.headers = dict(headers or {})

    def body(self) -> ErrorBody:
        """The error body."""
        return ErrorBody(
            error=ErrorDetail(
                code=self.code,
                message=self.message,
                field=self.field,
                value=self.value,
                reason=self.reason,
            )
        )

    def encoded(self) -> bytes:
        """The error body as JSON bytes."""
        return msgspec.json.encode(self.body())

    def page(self) -> bytes:
        """The error as the inspector's page (docs/inspector.md#errors)."""
        return problem_page(
            self.status, self.code, self.message, field=self.field, value=self.value
        )


def not_found(code: str, message: str, *, field: str, value: object) -> ApiError:
    """404 ``code``: the thing a path field names does not exist."""
    return ApiError(404, code, message, field=field, value=value)


def invalid_body(field: str, message: str, value: object = _NO_VALUE) -> ApiError:
    """422 ``invalid-body``: a field of the body is refused (``value`` left out: it is missing)."""
    return ApiError(422, "invalid-body", message, field=field, value=value)


def unknown_field(
    field: str, what: str, value: object, *, takes: Iterable[str] = (), hint: str = ""
) -> ApiError:
    """422 ``invalid-body`` for a key ``what`` does not have, naming the keys it takes (and a
    ``hint`` when the client's key shows what it meant); the key is the client's input, so it
    is cut like a value (to 200 code points) in both ``field`` and the message."""
    shown = shown_value(field)
    fields = sorted(takes)
    said = f"; it takes {', '.join(fields)}" if fields else "; it takes no fields"
    return invalid_body(shown, f"{shown} is not a field of {what}{said}{hint}", value)


def not_hosted(agent_id: str) -> ApiError:
    """409 ``agent-not-hosted``: a write to an agent this host does not run."""
    return ApiError(409, "agent-not-hosted", f"agent {agent_id!r} is not run by this host")


def request_id(request: Request[Any, Any, Any]) -> str | None:
    """The correlation id the guard gave this request."""
    value = request.scope.get(REQUEST_ID_KEY)
    return value if isinstance(value, str) else None


def _response(request: Request[Any, Any, Any], error: ApiError) -> Response[Any]:
    # The guard adds X-Request-Id to every response, errors included.
    if wants_html(request.url.path, request.headers.get("accept")):
        return Response(
            error.page(),
            status_code=error.status,
            headers=dict(error.headers),
            media_type="text/html",
        )
    return Response(
        error.body(),
        status_code=error.status,
        headers=dict(error.headers),
        media_type="application/json",
    )


def on_api_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Render an ``ApiError``."""
    assert isinstance(exc, ApiError)
    return _response(request, exc)


def on_http_exception(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Render the framework's own HTTP errors (unknown route, wrong method…) in our shape."""
    if isinstance(exc, NotFoundException):
        error = ApiError(404, "route-not-found", f"no endpoint answers {request.url.path}")
    elif isinstance(exc, MethodNotAllowedException):
        error = ApiError(
            405,
            "method-not-allowed",
            f"{request.method} is not allowed on {request.url.path}",
            headers=exc.headers or {},
        )
    else:
        status = exc.status_code if isinstance(exc, HTTPException) else 400
        error = ApiError(status, "bad-request", "the request could not be read")
    return _response(request, error)


def on_host_stopping(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A write while the host stops: 503 ``shutting-down``."""
    return _response(request, ApiError(503, "shutting-down", "the host is shutting down"))


def on_not_owner(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A message or answer from a principal other than the owner: 403 ``not-owner``."""
    message = exc.message if isinstance(exc, NotOwner) else "not the conversation's owner"
    return _response(request, ApiError(403, "not-owner", message, field="from"))


def on_lease_lost(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A write to an agent another host holds now: 409 ``agent-not-leased``."""
    message = "another host holds this agent now; write through that host"
    return _response(request, ApiError(409, "agent-not-leased", message))


def on_store_unavailable(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """The store cannot be reached or written: 503 ``store-unavailable`` with ``Retry-After``.
    A write answered so is not acknowledged; sent again with its idempotency key it is stored
    once. The host's store state logs the fault once per change (health says ``degraded``);
    each request only at debug, so a full disk under load does not flood the log."""
    if isinstance(exc, StoreUnavailable):
        # The app's ``ApiContext`` (``_context.STATE_KEY``; that module imports this one).
        context = request.app.state.get("afp")
        state = getattr(getattr(context, "host", None), "store_state", None)
        if state is not None:
            state.failed(exc)
    log.debug("store unavailable", error=str(exc), request_id=request_id(request))
    message = "the store cannot be reached or written now; nothing was acknowledged, try later"
    cause = exc.cause if isinstance(exc, StoreUnavailable) else "unreachable"
    return _response(
        request,
        ApiError(
            503,
            "store-unavailable",
            message,
            reason=cause,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        ),
    )


def on_store_damaged(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A stored row that does not read back: 503 ``store-damaged``, naming the row (the
    store's own words; ``afp doctor`` lists every such row)."""
    log.warning("store damaged", error=str(exc), request_id=request_id(request))
    found = exc.message if isinstance(exc, StoreDamaged) else "a stored row does not read back"
    message = f"{found}; the store is damaged there: run afp doctor"
    return _response(request, ApiError(503, "store-damaged", message))


def on_internal(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Anything unexpected: 500 ``internal``; the trace goes to the log, never to the client."""
    rid = request_id(request)
    log.error(
        "request failed",
        request_id=rid,
        method=request.method,
        path=request.url.path,
        exc_info=exc,
    )
    message = "the server failed to answer; quote the X-Request-Id when reporting it"
    return _response(request, ApiError(500, "internal", message))


EXCEPTION_HANDLERS: Mapping[Any, Any] = {
    ApiError: on_api_error,
    HTTPException: on_http_exception,
    HostStopping: on_host_stopping,
    NotOwner: on_not_owner,
    LeaseLost: on_lease_lost,
    StoreUnavailable: on_store_unavailable,
    StoreDamaged: on_store_damaged,
    Exception: on_internal,
}
