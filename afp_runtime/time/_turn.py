"""The time layer's state of one turn on a run, and the small rules the loop extension applies
to a call or a schema (docs/time.md#deciding-each-call).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from afp_runtime.extensions import At
from afp_runtime.messages import ToolCall, ToolSchema
from afp_runtime.records import LedgerRow, QuestionRow
from afp_runtime.time._clock import ClockRow, TimeClock
from afp_runtime.time._convert import PeriodContext
from afp_runtime.time._decide import TIME_QUOTE, TIME_QUOTE_DESCRIPTION, CallDecision, CallToBind
from afp_runtime.time._declare import Period, facts_of, forms_of
from afp_runtime.time._texts import abandoned_observation, filled_note, unsettled_observation
from afp_runtime.time._windows import TurnWindows, turn_windows_of
from afp_runtime.tools import PlannedCall, Tool, ToolOutcome, unrun_outcome


class TimeTurn:
    """The turn's clock and time rows, kept on the run (rebuilt from the ledger at seed)."""

    def __init__(self, clock: TimeClock, rows: Sequence[LedgerRow], turn: int) -> None:
        self.clock = clock
        # Typed, as filed or as the store read them (docs/storage.md#typed-ledger-rows).
        self.rows: list[LedgerRow] = list(rows)
        self.turn = turn
        self.windows: TurnWindows = turn_windows_of(rows, turn)
        # Per call of this run: its latest decision (for the ``call`` row and drift).
        self.decisions: dict[str, CallDecision] = {}
        # Rows filed since the last bundle that carried rows (the next closing or pause
        # bundle appends them to the ledger).
        self.pending: list[dict[str, Any]] = []

    def add(self, rows: Sequence[LedgerRow]) -> None:
        """File ``rows`` on the turn (the next bundle commits them)."""
        self.rows.extend(rows)
        self.pending.extend(msgspec.to_builtins(row) for row in rows)
        self.windows = turn_windows_of(self.rows, self.turn)

    @property
    def zone(self) -> str | None:
        """The person's zone, None while it is unknown (docs/time.md#unknown-zone)."""
        return self.clock.zone if self.clock.zone_source != "unknown" else None

    def context(
        self, tool: Tool | None, *, zone: str | None = None, agent_zone: str | None
    ) -> PeriodContext:
        """What a conversion for ``tool`` needs: the turn's now, the zone, the tool's step."""
        return PeriodContext(
            now=self.clock.now_instant,
            zone=zone if zone is not None else self.zone,
            agent_zone=agent_zone,
            granularity_ms=facts_of(period_of(tool)).granularity_ms,
        )


def has_forms(tool: Tool | None) -> bool:
    """Whether calls to ``tool`` are decided by the time layer (a period with forms)."""
    return tool is not None and isinstance(tool.period, Period) and bool(forms_of(tool.period))


def period_of(tool: Tool | None) -> Period:
    """The period of a tool the time layer decides calls to."""
    assert tool is not None and isinstance(tool.period, Period)
    return tool.period


# -- seed ---------------------------------------------------------------------------------------


def answered_zone(questions: Sequence[QuestionRow], ledger: Sequence[LedgerRow]) -> str | None:
    """The zone the person gave in an earlier turn whose clock zone was unknown
    (docs/time.md#unknown-zone): the latest answered ``zone`` question of such a turn (a zone answer
    files no row of its own; the question keeps it)."""
    unknown_turns = {
        row.turn for row in ledger if isinstance(row, ClockRow) and row.zone_source == "unknown"
    }
    zone = None
    for question in questions:
        asked = (question.detail or {}).get("question") or {}
        if (
            question.kind == "time"
            and question.status == "answered"
            and asked.get("format") == "zone"
            and question.turn in unknown_turns
            and isinstance(question.answer, str)
        ):
            zone = question.answer
    return zone


def with_time_quote(schema: ToolSchema) -> ToolSchema:
    """The served schema with the optional ``_timeQuote`` property (docs/time.md#sent-window-path
    step 4)."""
    input_schema = dict(schema.input_schema)
    properties = dict(input_schema.get("properties") or {})
    properties[TIME_QUOTE] = {"type": "string", "description": TIME_QUOTE_DESCRIPTION}
    input_schema["properties"] = properties
    return msgspec.structs.replace(schema, input_schema=input_schema)


def filled_outcome(outcome: ToolOutcome, decision: CallDecision | None) -> ToolOutcome:
    """A filled call's observation says where its period came from (docs/time.md#fill-path)."""
    note = filled_note(decision.row) if decision is not None else None
    if note is None or outcome.status != "ok":
        return outcome
    content = f"{outcome.content}\n\n{note}"
    return msgspec.structs.replace(
        outcome, content=content, result_chars=outcome.result_chars + len(note) + 2
    )


def unanswered_time(call: ToolCall, question: QuestionRow) -> ToolOutcome:
    """The observation of a call whose time question closed without a usable answer."""
    if question.status == "unsettled":
        return unrun_outcome(call, "not-dispatched", unsettled_observation(call.name))
    return unrun_outcome(call, "not-dispatched", abandoned_observation(call.name))


def call_to_bind(plan: PlannedCall, quote: str | None, at: At) -> CallToBind:
    """What deciding a call to a period tool binds: the call, its tool's forms and facts."""
    tool = plan.tool
    period = period_of(tool)
    return CallToBind(
        tool_call_id=plan.call.id,
        tool_name=plan.call.name,
        turn=at.turn,
        iteration=at.iteration,
        args=dict(plan.call.args),
        forms=forms_of(period),
        facts=facts_of(period),
        missing=period.missing,
        quote=quote,
    )
