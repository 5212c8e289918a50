"""Path and query parameters: patterns, numbers, flags and paging (docs/api.md#server-rules,
docs/api.md#validation-and-error-codes).

Every parameter arrives as text and is checked here, so a bad one is a 400 naming the field
(``invalid-path-param`` for the path, ``invalid-query`` for the query). Nothing from a request
is ever used to build a path or SQL text: values only reach parameterized queries.

Paging: ``limit`` is 1..500 (default 50; some lists cap it lower) and ``cursor`` is opaque to
clients. Here a cursor is ``o<offset>`` into the list the endpoint computes (``CURSOR``); an
offset past the end is an empty last page, and anything else is an unknown cursor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Final, Generic, TypeVar

import msgspec
from litestar import params as _litestar_params

from afp_runtime.api._problems import ApiError

T = TypeVar("T")

AGENT_ID: Final = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
RUN_ID: Final = re.compile(r"^[A-Za-z0-9._-]{1,80}$")
MESSAGE_ID: Final = RUN_ID
TOOL_CALL_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
IDEMPOTENCY_KEY: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
NUMBER: Final = re.compile(r"^[1-9][0-9]{0,9}$")
COUNT: Final = re.compile(r"^(0|[1-9][0-9]{0,9})$")
FINGERPRINT: Final = re.compile(r"^[0-9a-f]{64}$")
ROW_KIND: Final = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
EVENT_PREFIX: Final = re.compile(r"^[a-z][a-z0-9.-]{0,63}$")
CURSOR: Final = re.compile(r"^o(0|[1-9][0-9]{0,9})$")

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def _marker(kind: str, name: str | None = None) -> Any:
    """The ``Annotated`` marker of a ``query``, ``header`` or ``path`` parameter.

    Litestar 2.25 replaced ``Parameter(query=…)`` by ``QueryParameter`` (and so on); both are
    supported.
    """
    modern = getattr(_litestar_params, f"{kind.title()}Parameter", None)
    if modern is not None:
        return modern() if name is None else modern(name=name)
    legacy: dict[str, Any] = {} if name is None else {kind: name}
    return _litestar_params.Parameter(**legacy)


def query(name: str) -> Any:
    """The ``Annotated`` marker of the query parameter ``name`` (its wire name: ``fromSeq``)."""
    return _marker("query", name)


def header(name: str) -> Any:
    """The ``Annotated`` marker of the request header ``name``."""
    return _marker("header", name)


# Every path parameter is taken as text and checked by its pattern in the handler.
PathText = Annotated[str, _marker("path")]
# The paging parameters of every list (``limit_of``, ``offset_of``).
Limit = Annotated[str | None, query("limit")]
Cursor = Annotated[str | None, query("cursor")]


def path_param(field: str, value: str, pattern: re.Pattern[str]) -> str:
    """``value`` when it matches ``pattern``; else 400 ``invalid-path-param`` naming ``field``."""
    if pattern.fullmatch(value) is None:
        raise ApiError(
            400,
            "invalid-path-param",
            f"{field} must match {pattern.pattern}",
            field=field,
            value=value,
        )
    return value


def number_param(field: str, value: str) -> int:
    """A path number (``epoch``, ``n``). Its pattern is ``NUMBER``, but any numeric text (``0``
    and long digit strings included) reads as a number that names nothing, so the caller
    answers 404 for it; text that is not numeric is 400 ``invalid-path-param``."""
    if not value.isascii() or not value.isdigit() or len(value) > 20:
        path_param(field, value, NUMBER)
    return int(value)


def _bad_query(field: str, message: str, value: object) -> ApiError:
    return ApiError(400, "invalid-query", message, field=field, value=value)


def query_text(field: str, value: str | None, pattern: re.Pattern[str]) -> str | None:
    """An optional query value that must match ``pattern``."""
    if value is None:
        return None
    if pattern.fullmatch(value) is None:
        raise _bad_query(field, f"{field} must match {pattern.pattern}", value)
    return value


def query_int(field: str, value: str | None, *, minimum: int = 0) -> int | None:
    """An optional non-negative integer query value (at least ``minimum``)."""
    if value is None:
        return None
    if COUNT.fullmatch(value) is None or int(value) < minimum:
        raise _bad_query(field, f"{field} must be an integer >= {minimum}", value)
    return int(value)


def query_flag(field: str, value: str | None) -> bool:
    """An optional boolean query value: ``true``/``false`` (or ``1``/``0``); absent is False."""
    if value is None:
        return False
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise _bad_query(field, f"{field} must be true or false", value)


def query_choice(field: str, value: str | None, choices: Sequence[str]) -> str | None:
    """An optional query value from a closed vocabulary."""
    if value is None or value in choices:
        return value
    raise _bad_query(field, f"{field} must be one of {', '.join(choices)}", value)


def limit_of(value: str | None, *, maximum: int = MAX_LIMIT) -> int:
    """The page size: 1..``maximum``, default 50 (or ``maximum`` when that is lower)."""
    if value is None:
        return min(DEFAULT_LIMIT, maximum)
    if NUMBER.fullmatch(value) is None or int(value) > maximum:
        raise _bad_query("limit", f"limit must be an integer from 1 to {maximum}", value)
    return int(value)


def encode_cursor(offset: int) -> str:
    """The opaque cursor of an offset."""
    return f"o{offset}"


def offset_of(cursor: str | None) -> int:
    """The offset a cursor stands for; 0 without one; 400 for a cursor this API never hands out."""
    if cursor is None:
        return 0
    if CURSOR.fullmatch(cursor) is None:
        raise _bad_query("cursor", "cursor is not one this API handed out", cursor)
    return int(cursor[1:])


class Page(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    """One page of a list: its items and the cursor of the next page (null on the last)."""

    items: list[T]
    next: str | None


def page_of(items: Sequence[T], *, limit: int, cursor: str | None) -> Page[T]:
    """The page of ``items`` that ``cursor`` and ``limit`` select."""
    start = offset_of(cursor)
    end = start + limit
    return Page(items=list(items[start:end]), next=encode_cursor(end) if end < len(items) else None)
