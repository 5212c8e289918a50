"""The request bodies, as the OpenAPI document shows them (docs/api.md#the-openapi-document).

The handlers check every field themselves, so that a refusal names the field in this API's error
shape; these Structs exist only to be rendered as schemas. ``body_schemas`` sets the constraints
a Struct cannot carry (lengths, patterns, descriptions) on the generated components.
"""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.api._params import IDEMPOTENCY_KEY
from afp_runtime.api.constants import ANSWER_LIMIT, NOTE_LIMIT, SENDER_LIMIT, TEXT_LIMIT

_STRICT_INSTANT = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})$"
)
_ZONE_NAME = r"^(UTC|GMT|[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)+)$"


class TimeWindow(msgspec.Struct, kw_only=True):
    """A window a UI set with the message: ``from`` strictly before ``to``."""

    start: str = msgspec.field(name="from")
    end: str = msgspec.field(name="to")


class MessageTimeBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """The message's time (agents with time enabled only: else 422 ``time-not-enabled``)."""

    now: str | None = None
    zone: str | None = None
    window: TimeWindow | None = None


class InboxPostBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """``POST …/inbox``: a person's message."""

    text: str
    idempotencyKey: str | None = None
    sender: str | None = msgspec.field(default=None, name="from")
    time: MessageTimeBody | None = None


class AnswerBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """``POST …/answer``: the answer (by the question's kind) and the answering principal."""

    value: Any
    sender: str | None = msgspec.field(default=None, name="from")


class AbandonBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """``POST …/abandon``: who closes the question (an empty body is the same as ``{}``)."""

    sender: str | None = msgspec.field(default=None, name="from")


class NoBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``POST …/resume`` and ``…/dismiss`` take no fields: an empty body or ``{}``."""


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional top-level field: the handlers read ``null`` as the field left out."""
    return {"anyOf": [schema, {"type": "null"}]}


def body_schemas(components: dict[str, Any]) -> None:
    """Constraints the Structs above cannot carry, set on their generated components."""
    text = {"type": "string", "minLength": 1, "maxLength": TEXT_LIMIT}
    sender = _or_null(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": SENDER_LIMIT,
            "description": "the principal (the owner check: docs/host.md#the-owner-check)",
        }
    )
    instant = {"type": "string", "format": "date-time", "pattern": _STRICT_INSTANT}
    inbox = components["InboxPostBody"]["properties"]
    inbox["text"] = {**text, "description": "the person's words"}
    inbox["idempotencyKey"] = _or_null(
        {
            "type": "string",
            "pattern": IDEMPOTENCY_KEY.pattern,
            "description": "a retry with the same key and text is the same message (200)",
        }
    )
    inbox["from"] = sender
    inbox["time"] = _or_null({"$ref": "#/components/schemas/MessageTimeBody"})
    when = components["MessageTimeBody"]["properties"]
    when["now"] = _or_null({**instant, "description": "the instant the words speak from"})
    when["zone"] = _or_null(
        {
            "type": "string",
            "pattern": _ZONE_NAME,
            "maxLength": 64,
            "description": "a zone name of the tz database (Area/Location, UTC or GMT)",
        }
    )
    when["window"] = _or_null({"$ref": "#/components/schemas/TimeWindow"})
    window = components["TimeWindow"]
    window["properties"] = {"from": instant, "to": {**instant, "description": "after from"}}
    window["additionalProperties"] = False
    components["AnswerBody"]["properties"]["from"] = sender
    components["AnswerBody"]["properties"]["value"] = {
        "description": "by the question's kind (422 invalid-answer when it does not fit): a "
        "tool's question or a time question takes text, an approval takes a decision",
        "anyOf": [
            {"type": "string", "minLength": 1, "maxLength": ANSWER_LIMIT},
            {
                "type": "object",
                "required": ["decision"],
                "additionalProperties": False,
                "properties": {
                    "decision": {"enum": ["approve", "decline"]},
                    "note": {"type": "string", "maxLength": NOTE_LIMIT},
                },
            },
        ],
    }
    components["AbandonBody"]["properties"]["from"] = sender
