"""How the API shows stored things: agents, inbox messages, questions (docs/api.md#json-shapes).

Litestar-free, so ``afp`` prints the very same bodies without loading the HTTP stack.
"""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.api.constants import INTERRUPTED_CONTINUES
from afp_runtime.api.shapes import AgentView, InboxMessage, QuestionView, iso_instant
from afp_runtime.app import MessageOutcome
from afp_runtime.records import QuestionRow
from afp_runtime.store import AgentRow, DefinitionSummary, Store


async def agent_view(
    reader: Store,
    row: AgentRow,
    profile: DefinitionSummary | None,
    *,
    now_ms: int,
    live: str | None = None,
) -> AgentView:
    """One agent's summary (``GET /v1/agents/{id}``; ``afp agent`` prints the same from the
    store, where no host profile is known).

    ``live`` is the status a host door gives (the stored one when this host holds the agent,
    ``not-leased`` otherwise), None from the store alone. The definition is ``profile``'s, the
    hosting host's, else the summary the store keeps (docs/storage.md#definition-summaries).
    """
    status = await shown_status(reader, row, now_ms=now_ms, live=live)
    state = await reader.conversation_state(row.agent_id)
    turn = state.open_turn if state is not None else None
    queued = await reader.inbox(row.agent_id, status="queued")
    open_questions = await reader.questions(row.agent_id, status="open")
    known: DefinitionSummary | None = profile or row.definition
    return AgentView(
        agent_id=row.agent_id,
        status=status,
        hosted=profile is not None,
        model=known.model if known is not None else None,
        provider=known.provider if known is not None else None,
        window_strategy=known.window_strategy if known is not None else None,
        turn=row.turn,
        model_calls=row.model_calls,
        messages=row.messages,
        inbox_depth=len(queued),
        pending_question=open_questions[0].question_id if open_questions else None,
        open_questions=[question_view(q) for q in open_questions],
        active_run=turn.last_run_id if turn is not None and turn.status == "running" else None,
        time_zone=known.time_zone if known is not None else None,
        usage_totals=row.usage_totals,
        created_at_ms=row.created_at_ms,
        continues_with=INTERRUPTED_CONTINUES if status == "interrupted" else None,
    )


async def shown_status(reader: Store, row: AgentRow, *, now_ms: int, live: str | None) -> str:
    """The status a door shows (docs/host.md#status-values): ``interrupted`` for a turn left
    ``running`` that no live host holds (no claim under an unexpired lease at ``now_ms``, the
    caller's clock), else ``live`` when a host door gives one, else the stored status."""
    if row.status == "running" and live in (None, "not-leased"):
        claim = await reader.agent_claim(row.agent_id, now_ms=now_ms)
        if claim is None or not claim.live:
            return "interrupted"
    return live or row.status


def inbox_message(found: MessageOutcome) -> InboxMessage:
    """A message's outcome as the API shows it (``afp inbox`` prints the same): the inbox row's
    own fields, by the same names, then its latest run and the answer or why there is none."""
    return InboxMessage(
        **msgspec.structs.asdict(found.row),
        run_id=found.run_id,
        answer=found.answer,
        error_kind=found.error_kind,
        error=found.error,
    )


def question_view(row: QuestionRow) -> QuestionView:
    """A stored question as the API shows it."""
    return QuestionView(
        question_id=row.question_id,
        agent_id=row.agent_id,
        run_id=row.run_id,
        turn=row.turn,
        kind=row.kind,
        prompt=row.prompt,
        tool_call_ids=list(row.tool_call_ids),
        asked_at=iso_instant(row.asked_at_ms),
        status=row.status,
        repeat=row.repeat,
        answer=row.answer,
        answered_at=iso_instant(row.answered_at_ms) if row.answered_at_ms is not None else None,
        **_time_fields(row),
    )


def _time_fields(row: QuestionRow) -> dict[str, Any]:
    """What a time question shows besides the common fields (docs/time.md#question-shapes)."""
    if row.kind != "time" or row.detail is None:
        return {}
    asked = row.detail.get("question") or {}
    fields: dict[str, Any] = {
        "format": asked.get("format"),
        "mention": asked.get("mention"),
        "quote": asked.get("quote"),
        "choices": list(asked.get("choices") or []),
        "free_entry": bool(asked.get("freeEntry", True)),
        "zone": asked.get("zone"),
    }
    refused = row.detail.get("refused")
    if refused is not None:
        fields["refused"] = {key: refused.get(key) for key in ("answer", "reason", "why")}
    return fields
