"""The API's operations, one table (docs/api.md#the-openapi-document).

Each operation's parameters (typed, with the patterns the handlers check), request body, every
status it can answer and an example. The document (``_openapi``) is written from this table and
the guard answers 405 and ``OPTIONS`` from it, so the two cannot drift apart;
``tests/api/test_openapi.py`` holds the table to the app's routes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from afp_runtime.api._bodies import AbandonBody, AnswerBody, InboxPostBody, NoBody
from afp_runtime.api._params import (
    AGENT_ID,
    CURSOR,
    EVENT_PREFIX,
    FINGERPRINT,
    MAX_LIMIT,
    MESSAGE_ID,
    ROW_KIND,
    RUN_ID,
    TOOL_CALL_ID,
    Page,
)
from afp_runtime.api.constants import INBOX_STATUSES, MAX_SERVED_PAGE, QUESTION_STATUSES
from afp_runtime.api.shapes import (
    AgentView,
    AnswerAccepted,
    CallView,
    DismissAccepted,
    FoldedMessages,
    FoldedSpanView,
    Health,
    InboxMessage,
    InboxPosted,
    QuestionView,
    ResumeAccepted,
)
from afp_runtime.app import ConformanceReport, EpochEntry, Receipt, ServedView
from afp_runtime.store import RunRow, StoredBundle

# -- parameters -------------------------------------------------------------------------------


def _path(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": schema,
        "description": description,
    }


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {**_path(name, schema, description), "in": "query", "required": False}


def _pattern(regex: re.Pattern[str]) -> dict[str, Any]:
    return {"type": "string", "pattern": regex.pattern}


_NUMBER = {"type": "integer", "minimum": 1, "maximum": 9_999_999_999}
_FLAG = {"type": "boolean"}

AGENT = _path("agentId", _pattern(AGENT_ID), "the agent")
RUN = _path("runId", _pattern(RUN_ID), "the run")
MESSAGE = _path("messageId", _pattern(MESSAGE_ID), "the inbox message")
QUESTION = _path("questionId", _pattern(RUN_ID), "the question")
FOLD = _path("summaryFingerprint", _pattern(FINGERPRINT), "the summary message's fingerprint")
EPOCH = _path("epoch", _NUMBER, "the model call's number within the run, from 1")
CALL = _path("n", _NUMBER, "the model call's number over the agent's life, from 1")


def _paging(maximum: int = MAX_LIMIT) -> list[dict[str, Any]]:
    return [
        _query(
            "limit",
            {"type": "integer", "minimum": 1, "maximum": maximum, "default": min(50, maximum)},
            "items per page",
        ),
        _query("cursor", _pattern(CURSOR), "the `next` of the previous page"),
    ]


TURN = _query("turn", _NUMBER, "one turn")
TYPES = _query(
    "types",
    {
        "type": "string",
        "pattern": rf"^{EVENT_PREFIX.pattern[1:-1]}(,{EVENT_PREFIX.pattern[1:-1]})*$",
    },
    "a comma list of event type prefixes",
)
FOLLOW = _query(
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

# -- operations -------------------------------------------------------------------------------

ALWAYS = (400, 401, 404, 413, 503)
"""Statuses every operation may answer: a bad parameter or Host header, a missing token, an
unknown route or thing, a body past the limit, a store that cannot be read (or a stopping host)."""

STATUS_TEXT = {
    200: "OK",
    202: "Accepted",
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


Window = dict[str, Any]
Row = dict[str, Any]

_QUESTION_EXAMPLE = {
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


_EVENT_EXAMPLE = 'id: 3f2a-12\nevent: turn.ended\ndata: {"type":"turn.ended"}\n\n'


def _page(item: Any) -> dict[str, Any]:
    return {"items": [item], "next": None}


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "GET",
        "/v1/health",
        "Health (needs no token)",
        "host",
        Health,
    ),
    Operation(
        "GET",
        "/v1/metrics",
        "Metrics in the Prometheus text format (telemetry on)",
        "host",
        str,
        text="text/plain; version=0.0.4; charset=utf-8",
        example="# HELP afp_runs_total runs ended\n# TYPE afp_runs_total counter\n"
        'afp_runs_total{afp_run_status="answered"} 3\n',
    ),
    Operation(
        "GET",
        "/v1/agents",
        "List agents",
        "agents",
        Page[AgentView],
        params=tuple(_paging()),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}",
        "One agent",
        "agents",
        AgentView,
        params=(AGENT,),
    ),
    Operation(
        "POST",
        "/v1/agents/{agentId}/inbox",
        "Post a message",
        "inbox",
        InboxPosted,
        params=(AGENT,),
        status=202,
        body=InboxPostBody,
        errors=(403, 409, 415, 422),
        also={200: "the same idempotency key and text again: the original acknowledgement"},
        example={
            "messageId": "msg-01a2336e-0c2",
            "agentId": "demo",
            "acceptedAt": "2026-12-01T21:06:19.000Z",
            "status": "queued",
            "position": 3,
        },
        links={
            "message": {
                "operationId": "getAgentsAgentIdInboxMessageId",
                "parameters": {
                    "agentId": "$request.path.agentId",
                    "messageId": "$response.body#/messageId",
                },
            }
        },
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/inbox",
        "List the inbox",
        "inbox",
        Page[InboxMessage],
        params=(
            AGENT,
            _query(
                "status",
                {"type": "string", "enum": list(INBOX_STATUSES)},
                "only messages in this status",
            ),
            *_paging(),
        ),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/inbox/{messageId}",
        "One inbox message",
        "inbox",
        InboxMessage,
        params=(AGENT, MESSAGE),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/runs",
        "An agent's runs, newest first",
        "runs",
        Page[RunRow],
        params=(AGENT, *_paging()),
        links={
            "run": {
                "operationId": "getRunsRunId",
                "parameters": {"runId": "$response.body#/items/0/runId"},
            }
        },
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/calls/{n}",
        "The agent's n-th model call",
        "served",
        CallView,
        params=(AGENT, CALL),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/window-records",
        "Window records of the agent",
        "window",
        Page[Window],
        params=(AGENT, _query("runId", _pattern(RUN_ID), "one run's records"), TURN, *_paging()),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/folded",
        "Folded spans",
        "window",
        Page[FoldedSpanView],
        params=(AGENT, *_paging()),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/folded/{summaryFingerprint}",
        "One folded span",
        "window",
        FoldedSpanView,
        params=(AGENT, FOLD),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/folded/{summaryFingerprint}/messages",
        "A folded span's original messages",
        "window",
        FoldedMessages,
        params=(AGENT, FOLD, _query("fromLog", _FLAG, "read them from the commit log"), *_paging()),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/findings",
        "Findings ledger rows",
        "findings",
        Page[Row],
        params=(
            AGENT,
            _query("kind", _pattern(ROW_KIND), "one row kind"),
            TURN,
            _query("toolCallId", _pattern(TOOL_CALL_ID), "one tool call's rows"),
            *_paging(),
        ),
        example=_page({"kind": "basis", "toolCallId": "c1", "basis": "direct"}),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/questions",
        "Questions a paused turn waits on",
        "questions",
        Page[QuestionView],
        params=(
            AGENT,
            _query(
                "status",
                {"type": "string", "enum": list(QUESTION_STATUSES)},
                "which questions (default open)",
            ),
            *_paging(),
        ),
        example=_page(_QUESTION_EXAMPLE),
    ),
    Operation(
        "POST",
        "/v1/agents/{agentId}/questions/{questionId}/answer",
        "Answer a question",
        "questions",
        AnswerAccepted,
        params=(AGENT, QUESTION),
        body=AnswerBody,
        errors=(403, 409, 415, 422),
        example={
            "status": "accepted",
            "question": {
                **_QUESTION_EXAMPLE,
                "status": "answered",
                "answer": "db-2",
                "answeredAt": "2026-12-01T21:07:02.118Z",
            },
        },
    ),
    Operation(
        "POST",
        "/v1/agents/{agentId}/questions/{questionId}/abandon",
        "Close a question unanswered",
        "questions",
        AnswerAccepted,
        params=(AGENT, QUESTION),
        body=AbandonBody,
        body_required=False,
        errors=(403, 409, 415, 422),
        example={
            "status": "abandoned",
            "question": {
                **_QUESTION_EXAMPLE,
                "status": "abandoned",
                "answeredAt": "2026-12-01T21:07:02.118Z",
            },
        },
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}",
        "One run",
        "runs",
        RunRow,
        params=(RUN,),
        links={
            "epochs": {
                "operationId": "getRunsRunIdEpochs",
                "parameters": {"runId": "$response.body#/runId"},
            }
        },
    ),
    Operation(
        "POST",
        "/v1/runs/{runId}/resume",
        "Resume a held or stalled run",
        "runs",
        ResumeAccepted,
        params=(RUN,),
        body=NoBody,
        body_required=False,
        status=202,
        errors=(403, 409, 415, 422),
        example={"runId": "run-01a2336e-0c4", "agentId": "demo", "status": "accepted"},
    ),
    Operation(
        "POST",
        "/v1/runs/{runId}/dismiss",
        "Dismiss a held run",
        "runs",
        DismissAccepted,
        params=(RUN,),
        body=NoBody,
        body_required=False,
        errors=(403, 409, 415, 422),
        example={
            "runId": "run-01a2336e-0c4",
            "agentId": "demo",
            "messageId": "msg-01a2336e-0c2",
            "status": "dismissed",
        },
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/commits",
        "A run's commit log",
        "runs",
        Page[StoredBundle],
        params=(
            RUN,
            _query("fromSeq", {**_NUMBER, "minimum": 0}, "from this bundle"),
            _query("expand", _FLAG, "resolve message lists into messages"),
            *_paging(),
        ),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/epochs",
        "A run's model calls",
        "served",
        Page[EpochEntry],
        params=(RUN, *_paging()),
        links={
            "served": {
                "operationId": "getRunsRunIdEpochsEpochServed",
                "parameters": {
                    "runId": "$request.path.runId",
                    "epoch": "$response.body#/items/0/epoch",
                },
            }
        },
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/epochs/{epoch}",
        "One model call",
        "served",
        EpochEntry,
        params=(RUN, EPOCH),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/epochs/{epoch}/served",
        "What the model was sent",
        "served",
        ServedView,
        params=(RUN, EPOCH),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/epochs/{epoch}/receipt",
        "The call's receipt",
        "served",
        Receipt,
        params=(RUN, EPOCH),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/epochs/{epoch}/conformance",
        "The call's view checked against its receipt",
        "served",
        ConformanceReport,
        params=(
            RUN,
            EPOCH,
            _query("wire", {**_FLAG, "default": True}, "re-encode and check the request bytes"),
        ),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/served",
        "Served views of a run",
        "served",
        Page[ServedView],
        params=(
            RUN,
            _query("fromEpoch", _NUMBER, "the first epoch"),
            *_paging(MAX_SERVED_PAGE),
        ),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/window-records",
        "A run's window records",
        "window",
        Page[Window],
        params=(RUN, *_paging()),
        example=_page({"strategy": "sliding-window", "iteration": 2}),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/events",
        "One agent's events (SSE)",
        "events",
        str,
        params=(AGENT, TYPES, FOLLOW, LAST_EVENT_ID),
        errors=(429,),
        stream=True,
        example=_EVENT_EXAMPLE,
    ),
    Operation(
        "GET",
        "/v1/events",
        "Every agent's events (SSE)",
        "events",
        str,
        params=(
            {
                "name": "agent",
                "in": "query",
                "required": False,
                "style": "form",
                "explode": True,
                "schema": {"type": "array", "items": _pattern(AGENT_ID)},
                "description": "only these agents (repeatable)",
            },
            TYPES,
            FOLLOW,
            LAST_EVENT_ID,
        ),
        errors=(429,),
        stream=True,
        example=_EVENT_EXAMPLE,
    ),
)


EXTRA_ROUTES: dict[str, frozenset[str]] = {"/v1/openapi.json": frozenset({"GET"})}
"""Routes the app serves that are not operations of the document (the document itself)."""


def _template_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile("".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts))


def _route_table() -> tuple[tuple[re.Pattern[str], frozenset[str]], ...]:
    methods: dict[str, set[str]] = {}
    for op in OPERATIONS:
        methods.setdefault(op.path, set()).add(op.method)
    for path, extra in EXTRA_ROUTES.items():
        methods.setdefault(path, set()).update(extra)
    return tuple((_template_pattern(path), frozenset(found)) for path, found in methods.items())


_ROUTES: Final = _route_table()


def allowed_methods(path: str) -> frozenset[str] | None:
    """The methods a request path answers (``HEAD`` with ``GET``, and ``OPTIONS``), or None
    when no route has this path."""
    found: set[str] = set()
    for pattern, methods in _ROUTES:
        if pattern.fullmatch(path) is not None:
            found |= methods
    if not found:
        return None
    if "GET" in found:
        found.add("HEAD")
    return frozenset({*found, "OPTIONS"})
