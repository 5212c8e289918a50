"""The API's operations, one table (docs/api.md#the-openapi-document).

Each operation's parameters (typed, with the patterns the handlers check), request body, every
status it can answer and an example. The document (``_openapi``) is written from this table and
the guard answers 405 and ``OPTIONS`` from it, so the two cannot drift apart;
``tests/api/test_openapi.py`` holds the table to the app's routes.
"""

from __future__ import annotations

import re
from typing import Any, Final

from afp_runtime.api._bodies import AbandonBody, AnswerBody, InboxPostBody, NoBody
from afp_runtime.api._operation_parts import (
    AGAINST,
    AGENT,
    CALL,
    EPOCH,
    FLAG,
    FOLD,
    FOLLOW,
    LAST_EVENT_ID,
    MESSAGE,
    NUMBER,
    QUESTION,
    QUESTION_EXAMPLE,
    RUN,
    TURN,
    TYPES,
    Operation,
    paging,
    query,
    text_pattern,
)
from afp_runtime.api._params import AGENT_ID, ROW_KIND, RUN_ID, TOOL_CALL_ID, Page
from afp_runtime.api._schedule_operations import SCHEDULE_OPERATIONS
from afp_runtime.api.constants import INBOX_STATUSES, MAX_SERVED_PAGE, QUESTION_STATUSES
from afp_runtime.api.recall import OPERATIONS as RECALL_OPERATIONS
from afp_runtime.api.shapes import (
    AgentView,
    AnswerAccepted,
    CallView,
    DismissAccepted,
    ExplainedEpoch,
    ExplainedReport,
    ExplainedView,
    FoldedMessages,
    FoldedSpanView,
    Health,
    InboxMessage,
    InboxPosted,
    QuestionView,
    ResumeAccepted,
)
from afp_runtime.app import CallDiff, Receipt, reasons_for
from afp_runtime.store import RunRow, StoredBundle

Window = dict[str, Any]
Row = dict[str, Any]

_EVENT_EXAMPLE = 'id: 3f2a-12\nevent: turn.ended\ndata: {"type":"turn.ended"}\n\n'

_REFUSALS: list[Row] = [{"reason": "inside-keep-window", "turnIndex": 4, "messageIndex": 6}]
_WINDOW_RECORD = {
    "strategy": "sliding-window",
    "iteration": 2,
    "refusals": _REFUSALS,
    "reasons": reasons_for(r["reason"] for r in _REFUSALS),
}


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
        params=tuple(paging()),
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
            query(
                "status",
                {"type": "string", "enum": list(INBOX_STATUSES)},
                "only messages in this status",
            ),
            *paging(),
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
        params=(AGENT, *paging()),
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
        "/v1/agents/{agentId}/calls/{n}/diff",
        "What changed from one of the agent's calls to another",
        "served",
        CallDiff,
        params=(AGENT, CALL, AGAINST),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/window-records",
        "Window records of the agent",
        "window",
        Page[Window],
        params=(AGENT, query("runId", text_pattern(RUN_ID), "one run's records"), TURN, *paging()),
    ),
    Operation(
        "GET",
        "/v1/agents/{agentId}/folded",
        "Folded spans",
        "window",
        Page[FoldedSpanView],
        params=(AGENT, *paging()),
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
        params=(AGENT, FOLD, query("fromLog", FLAG, "read them from the commit log"), *paging()),
    ),
    *RECALL_OPERATIONS,
    Operation(
        "GET",
        "/v1/agents/{agentId}/findings",
        "Findings ledger rows",
        "findings",
        Page[Row],
        params=(
            AGENT,
            query("kind", text_pattern(ROW_KIND), "one row kind"),
            TURN,
            query("toolCallId", text_pattern(TOOL_CALL_ID), "one tool call's rows"),
            *paging(),
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
            query(
                "status",
                {"type": "string", "enum": list(QUESTION_STATUSES)},
                "which questions (default open)",
            ),
            *paging(),
        ),
        example=_page(QUESTION_EXAMPLE),
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
                **QUESTION_EXAMPLE,
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
                **QUESTION_EXAMPLE,
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
            query("fromSeq", {**NUMBER, "minimum": 0}, "from this bundle"),
            query("expand", FLAG, "resolve message lists into messages"),
            *paging(),
        ),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/epochs",
        "A run's model calls",
        "served",
        Page[ExplainedEpoch],
        params=(RUN, *paging()),
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
        ExplainedEpoch,
        params=(RUN, EPOCH),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/epochs/{epoch}/served",
        "What the model was sent",
        "served",
        ExplainedView,
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
        ExplainedReport,
        params=(
            RUN,
            EPOCH,
            query("wire", {**FLAG, "default": True}, "re-encode and check the request bytes"),
        ),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/served",
        "Served views of a run",
        "served",
        Page[ExplainedView],
        params=(
            RUN,
            query("fromEpoch", NUMBER, "the first epoch"),
            *paging(MAX_SERVED_PAGE),
        ),
    ),
    Operation(
        "GET",
        "/v1/runs/{runId}/window-records",
        "A run's window records",
        "window",
        Page[Window],
        params=(RUN, *paging()),
        example=_page(_WINDOW_RECORD),
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
                "schema": {"type": "array", "items": text_pattern(AGENT_ID)},
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
    *SCHEDULE_OPERATIONS,
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
