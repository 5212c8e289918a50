"""The pieces the table of API operations is written with (docs/api.md#the-openapi-document):
the parameters the handlers check, the statuses every operation may answer and what each means,
the shape of a server-sent event frame, and ``Operation`` itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from afp_runtime.api._params import (
    AGENT_ID,
    CURSOR,
    EVENT_PREFIX,
    FINGERPRINT,
    MAX_LIMIT,
    MESSAGE_ID,
    RUN_ID,
)

# -- parameters -------------------------------------------------------------------------------


def path_param(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": schema,
        "description": description,
    }


def query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {**path_param(name, schema, description), "in": "query", "required": False}


def text_pattern(regex: re.Pattern[str]) -> dict[str, Any]:
    return {"type": "string", "pattern": regex.pattern}


NUMBER = {"type": "integer", "minimum": 1, "maximum": 9_999_999_999}
FLAG = {"type": "boolean"}

AGENT = path_param("agentId", text_pattern(AGENT_ID), "the agent")
RUN = path_param("runId", text_pattern(RUN_ID), "the run")
MESSAGE = path_param("messageId", text_pattern(MESSAGE_ID), "the inbox message")
QUESTION = path_param("questionId", text_pattern(RUN_ID), "the question")
FOLD = path_param(
    "summaryFingerprint", text_pattern(FINGERPRINT), "the summary message's fingerprint"
)
EPOCH = path_param("epoch", NUMBER, "the model call's number within the run, from 1")
CALL = path_param("n", NUMBER, "the model call's number over the agent's life, from 1")
AGAINST = query(
    "against",
    {**NUMBER, "minimum": 0},
    "the call compared against, by its number over the agent's life (default n - 1)",
)


def paging(maximum: int = MAX_LIMIT) -> list[dict[str, Any]]:
    return [
        query(
            "limit",
            {"type": "integer", "minimum": 1, "maximum": maximum, "default": min(50, maximum)},
            "items per page",
        ),
        query("cursor", text_pattern(CURSOR), "the `next` of the previous page"),
    ]


TURN = query("turn", NUMBER, "one turn")
TYPES = query(
    "types",
    {
        "type": "string",
        "pattern": rf"^{EVENT_PREFIX.pattern[1:-1]}(,{EVENT_PREFIX.pattern[1:-1]})*$",
    },
    "a comma list of event type prefixes",
)
FOLLOW = query(
    "follow",
    {"type": "boolean", "default": True},
    "false: send the history the host still holds (after Last-Event-ID), then close",
)
LAST_EVENT_ID = {
    "name": "Last-Event-ID",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "maxLength": 200},
    "description": "resume after this event id (`<bootId>-<seq>`)",
}


SERVER_SENT_EVENT: Final = {
    "type": "object",
    "description": "One frame of the stream: an event (with its id) or a stream.gap marker",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "description": "the event type, or stream.gap"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "description": "the event envelope (or the gap's reason) as JSON",
        },
        "id": {"type": "string", "pattern": r"^.+-[0-9]+$"},
        "retry": {"type": "integer"},
    },
}

QUESTION_EXAMPLE: Final = {
    "questionId": "q-01a233d7-77a9-7e2c-98cf-7e3706daf89b",
    "agentId": "desk",
    "runId": "run-01a233d7-77a3-7c77-b37b-15f5fda7cf51",
    "turn": 1,
    "kind": "tool-ask",
    "prompt": "which host should the migration run on?",
    "toolCallIds": ["c1"],
    "askedAt": "2026-12-01T21:06:28.617Z",
    "status": "open",
    "repeat": 0,
    "answer": None,
    "answeredAt": None,
    "format": None,
    "mention": None,
    "quote": None,
    "choices": None,
    "freeEntry": None,
    "zone": None,
    "refused": None,
}
"""A question as the question operations answer it (their examples)."""

# -- operations -------------------------------------------------------------------------------

ALWAYS = (400, 401, 404, 413, 503)
"""Statuses every operation may answer: a bad parameter or Host header, a missing token, an
unknown route or thing, a body past the limit, a store that cannot be read (or a stopping host)."""

STATUS_TEXT = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "Done; no body",
    400: "a parameter, header or body is not what this operation takes",
    401: "the token is missing or wrong (when the API has one)",
    403: "not the conversation's owner, a from naming another principal than the token's, or "
    "a request from another site's page",
    404: "no such route, agent, run, epoch, message, question or span",
    409: "the state refuses it (see the error code)",
    413: "the body is larger than the API takes",
    415: "a body or a content type that is not application/json",
    422: "a field of the body is refused (see field and reason)",
    429: "too many event streams are open",
    503: "the host is shutting down, or the store cannot be read",
}


@dataclass(frozen=True)
class Operation:
    """One operation of the API, as the document shows it."""

    method: str
    path: str
    summary: str
    tag: str
    response: Any
    params: tuple[dict[str, Any], ...] = ()
    status: int = 200
    body: type[msgspec.Struct] | None = None
    body_required: bool = True
    errors: tuple[int, ...] = ()
    example: Any = None
    stream: bool = False
    text: str | None = None
    """The media type of a plain-text answer (the metrics), when it is not JSON."""
    also: dict[int, str] = field(default_factory=dict)
    links: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def operation_id(self) -> str:
        words = re.findall(r"[A-Za-z]+", f"{self.method} {self.path.replace('/v1/', ' ')}")
        return words[0].lower() + "".join(w[:1].upper() + w[1:] for w in words[1:])
