"""The API's own JSON shapes (docs/api.md#json-shapes); all keys camelCase.

Committed records keep their stored fields as they are (``acceptedAtMs``, ``foldedAtMs``…);
values the API itself adds (``acceptedAt``) are ISO 8601 instants with ``Z``. Documented fields
that have no value are ``null`` rather than absent, so a client sees every field of a shape.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from afp_runtime.app import ConformanceReport, EpochEntry, ServedView, reasons_for
from afp_runtime.messages import Message, Usage
from afp_runtime.records import StoreFault


def iso_instant(ms: int) -> str:
    """Epoch milliseconds as an ISO 8601 instant with milliseconds and ``Z``."""
    moment = datetime.fromtimestamp(ms // 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


class _Shape(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Base of response shapes."""


class Health(_Shape, frozen=True, kw_only=True):
    """``GET /v1/health``; ``host_id`` names the host that answered (its lease id);
    ``store_check`` is the start-up store check (docs/host.md#after-an-unclean-stop);
    ``store_fault`` says why the status is ``degraded``, null otherwise
    (docs/host.md#hosts-and-a-failing-store)."""

    status: Literal["ok", "starting", "shutting-down", "damaged", "degraded"]
    version: str
    schema_version: int
    host_id: str
    store_check: Literal["not-needed", "checking", "ok", "damaged"]
    store_fault: StoreFault | None = None


class AgentView(_Shape, frozen=True, kw_only=True):
    """One agent: its conversation counters and its definition (the live one when hosted
    here, else the summary the store keeps, null when it keeps none).

    ``continues_with`` says what continues an ``interrupted`` agent, null otherwise
    (docs/host.md#status-values)."""

    agent_id: str
    status: str
    hosted: bool
    model: str | None
    provider: str | None
    window_strategy: str | None
    turn: int
    model_calls: int
    messages: int
    inbox_depth: int
    pending_question: str | None
    open_questions: list[QuestionView]
    active_run: str | None
    time_zone: str | None
    usage_totals: Usage
    created_at_ms: int
    continues_with: str | None = None


class InboxPosted(_Shape, frozen=True, kw_only=True):
    """The acknowledgement of ``POST …/inbox``."""

    message_id: str
    agent_id: str
    accepted_at: str
    status: Literal["queued"]
    position: int


class InboxMessage(_Shape, frozen=True, kw_only=True):
    """One inbox message as stored, with the run and outcome of its turn when known."""

    message_id: str
    agent_id: str
    position: int
    text: str
    status: str
    accepted_at_ms: int
    turn: int | None
    idempotency_key: str | None
    sender: str | None = msgspec.field(name="from")
    time: dict[str, Any] | None = None
    run_id: str | None = None
    answer: str | None = None
    error_kind: str | None = None
    error: str | None = None


class QuestionView(_Shape, frozen=True, kw_only=True):
    """A check-in question (docs/host.md#question-kinds); ``askedAt``/``answeredAt`` are ISO
    instants."""

    question_id: str
    agent_id: str
    run_id: str
    turn: int
    kind: str
    prompt: str
    tool_call_ids: list[str]
    asked_at: str
    status: str
    repeat: int
    answer: Any = None
    answered_at: str | None = None
    format: str | None = None
    mention: int | None = None
    quote: str | None = None
    choices: list[Any] | None = None
    free_entry: bool | None = None
    zone: str | None = None
    refused: Any = None


class AnswerAccepted(_Shape, frozen=True, kw_only=True):
    """The result of ``POST …/questions/{id}/answer`` or ``…/abandon``: ``accepted``,
    ``abandoned``, ``re-asked`` (a time answer refused; the question carries ``refused`` and
    its next ``repeat``) or ``unsettled`` (refused once too often; the calls do not run)."""

    status: Literal["accepted", "abandoned", "re-asked", "unsettled"]
    question: QuestionView


class DismissAccepted(_Shape, frozen=True, kw_only=True):
    """The result of ``POST /v1/runs/{runId}/dismiss``."""

    run_id: str
    agent_id: str
    message_id: str
    status: Literal["dismissed"]


class ResumeAccepted(_Shape, frozen=True, kw_only=True):
    """The acknowledgement of ``POST /v1/runs/{runId}/resume``."""

    run_id: str
    agent_id: str
    status: Literal["accepted"]


# The OpenAPI document names these ``ServedView``, ``EpochEntry`` and ``ConformanceReport``, as
# clients know them; the view itself (compared, checked, exported) never carries ``reasons``.
class ExplainedView(ServedView, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A served view as the doors answer it: the view's own fields, then ``reasons``, each of
    its gap kinds with its sentence (docs/api.md#reasons-in-words)."""

    reasons: dict[str, str]


class ExplainedEpoch(EpochEntry, frozen=True, kw_only=True, rename="camel"):
    """An epoch listing entry as the doors answer it, with ``reasons`` for its ``gaps``
    (docs/api.md#reasons-in-words)."""

    reasons: dict[str, str]


class ExplainedReport(ConformanceReport, frozen=True, kw_only=True, rename="camel"):
    """A conformance report as the doors answer it, with ``reasons`` for its ``gaps``
    (docs/api.md#reasons-in-words)."""

    reasons: dict[str, str]


def explained_view(view: ServedView) -> ExplainedView:
    """``view`` with the sentence of each of its gap kinds."""
    fields = {name: getattr(view, name) for name in view.__struct_fields__}
    return ExplainedView(**fields, reasons=reasons_for(gap.gap for gap in view.gaps))


def explained_epoch(entry: EpochEntry) -> ExplainedEpoch:
    """``entry`` with the sentence of each of its gap kinds."""
    fields = {name: getattr(entry, name) for name in entry.__struct_fields__}
    return ExplainedEpoch(**fields, reasons=reasons_for(entry.gaps))


def explained_report(report: ConformanceReport) -> ExplainedReport:
    """``report`` with the sentence of each of its gap kinds."""
    fields = {name: getattr(report, name) for name in report.__struct_fields__}
    return ExplainedReport(**fields, reasons=reasons_for(report.gaps))


class CallView(_Shape, frozen=True, kw_only=True):
    """The agent's n-th model call: where it sits and what it was sent (with the sentences of
    the view's gaps)."""

    agent_call: int
    run_id: str
    epoch: int
    view: ExplainedView


class FoldedSpanView(_Shape, frozen=True, kw_only=True):
    """A folded span without its messages (shape owned by docs/window.md#folding)."""

    summary_fingerprint: str
    run_id: str
    iteration: int
    folded_at_ms: int
    model: str
    message_count: int
    removed_stage_ids: list[str]
    retained: str


class FoldedMessages(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a folded span's original messages and where they were read from."""

    items: list[Message]
    next: str | None
    source: Literal["span", "log"]
