"""Reading a request body as one JSON object, with a 400 that says what is wrong with it
(docs/api.md#validation-and-error-codes): not JSON, nested too deep, a lone surrogate escape,
or JSON that is not an object. Nothing a client sends can make the decoder fail the server."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from afp_runtime.api._problems import ApiError, unknown_field

_SHOWN_BYTES = 800
# A \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one, or a low one with no high before.
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _refused(message: str, raw: bytes) -> ApiError:
    # The whole body is at fault: ``field`` says so, and ``value`` is (the start of) it.
    return ApiError(
        400,
        "invalid-body",
        message,
        field="body",
        value=raw[:_SHOWN_BYTES].decode("utf-8", "replace"),
    )


def json_object(raw: bytes, *, empty_is_object: bool = False) -> dict[str, Any]:
    """The body as a JSON object (``{}`` for an empty body when ``empty_is_object``).

    Raises:
        ApiError: 400 ``invalid-body`` naming the problem.
    """
    if empty_is_object and not raw.strip():
        return {}
    surrogate = _LONE_SURROGATE.search(raw)
    if surrogate is not None:
        escape = surrogate.group(0).decode("ascii")
        raise _refused(
            f"the body holds the lone surrogate escape {escape}: text must be valid Unicode",
            raw,
        )
    try:
        body = msgspec.json.decode(raw)
    except RecursionError:
        raise _refused("the body nests arrays or objects too deeply", raw) from None
    except msgspec.DecodeError as exc:
        if "out of range" in str(exc):  # valid JSON, a number no decoder reads exactly
            raise _refused(f"the body holds a number too large to read: {exc}", raw) from None
        raise _refused(f"the body is not valid JSON: {exc}", raw) from None
    if not isinstance(body, dict):
        raise _refused("the body must be a JSON object", raw)
    return body


def no_body_fields(raw: bytes, what: str) -> None:
    """Refuse a body with any key for a request that takes none (empty and ``{}`` are fine).

    Raises:
        ApiError: 400 ``invalid-body`` when it is not JSON or not an object, 422 naming the
            first key otherwise.
    """
    for field, value in json_object(raw, empty_is_object=True).items():
        raise unknown_field(field, what, value)
