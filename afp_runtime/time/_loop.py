"""Time as a loop extension (docs/time.md; agents with ``time`` only).

* ``seed`` of a turn's first run fixes the clock and reads the person's words once; both are
  filed as ledger rows (``clock``, ``time-reading``). Continuation runs read them back.
* ``context`` adds the served time line and the optional ``_timeQuote`` property of every tool
  with period forms.
* ``tool-calls`` decides every call to such a tool before anything runs (``call-window`` rows):
  a refused call gets its observation, a filled one its written values, and a call waiting for
  an open reading makes the whole batch pause with a time question (docs/time.md#the-time-question).
* at dispatch each such call gets its ``call`` row (``dispatchedAt``, drift) and ``ctx.time``.
* the answer run's ``settle`` files ``time-answer`` rows and second ``call-window`` rows.

Everything that may load a zone file runs in a worker thread, through the run's ``offload``
(zones load lazily, and a file read must not block the event loop).

Readings settled here, beyond what docs/time.md#deciding-each-call states:

* The conversation's answered zone (docs/time.md#unknown-zone) is the zone of the latest
  ``time-answer`` row filed
  in a turn whose clock zone was unknown.
* A zone answer files no row; the mention is resolved again with that zone and the batch pauses
  again with a ``time-range`` question (new id). Approvals already answered in the batch keep
  their answers (their question ids stay in the new pending batch).
* An abandoned time question, and one closed ``unsettled``, answer the waiting calls
  ``not-dispatched`` with their own observation texts; their rows stay ``not-filled``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import msgspec

from afp_runtime.errors import TimeReaderError
from afp_runtime.extensions import (
    Ask,
    At,
    Filed,
    Piece,
    RunExtension,
    RunStart,
    Seeded,
    SeedInput,
    Settled,
)
from afp_runtime.messages import Message, ToolCall, ToolSchema
from afp_runtime.records import Clock, LedgerRow, QuestionRow
from afp_runtime.time._clock import (
    ClockRow,
    MessageTime,
    TimeClock,
    clock_row,
    message_time_from_wire,
    turn_clock,
)
from afp_runtime.time._config import TimeConfig, time_config_to_wire
from afp_runtime.time._convert import PeriodContext
from afp_runtime.time._decide import (
    TIME_QUOTE,
    CallDecision,
    CallToBind,
    decide_call,
    refusal_of_all,
    without_time_quote,
)
from afp_runtime.time._declare import facts_of, forms_of
from afp_runtime.time._dispatching import Dispatching
from afp_runtime.time._facts import form_facts, tool_facts
from afp_runtime.time._question import TimeQuestion, time_answer_row, time_question
from afp_runtime.time._reading_rows import TimeReadingRow, read_message
from afp_runtime.time._resolve import resolve
from afp_runtime.time._rows import TIME_ROW_TYPES, CallWindowRow, call_window_of_call
from afp_runtime.time._texts import refusal_observation, time_line
from afp_runtime.time._turn import (
    TimeTurn,
    answered_zone,
    call_to_bind,
    filled_outcome,
    has_forms,
    period_of,
    unanswered_time,
    with_time_quote,
)
from afp_runtime.time._windows import OpenMention, OpenReading
from afp_runtime.time._zones import is_zone_name, preload_zones
from afp_runtime.tools import PlannedCall, Tool, ToolOutcome, plan_call, unrun_outcome


class TimeExtension:
    """The time extension of an agent with ``time``."""

    name = "time"

    def __init__(self, config: TimeConfig) -> None:
        self.config = config

    def shape(self) -> Any:
        return time_config_to_wire(self.config)

    def start(self, run: RunStart) -> TimeRun:
        return TimeRun(self.config, run)


class TimeRun(RunExtension):
    """One run of an agent with time: the turn's clock and rows (``state``), None until seed and
    for a continuation of a turn that filed no clock (then the run has no time layer)."""

    def __init__(self, config: TimeConfig, run: RunStart) -> None:
        self.config = config
        self.kind = run.kind
        self.tools_by_name = run.tools_by_name
        self.clock: Clock = run.clock
        self.offload = run.offload
        self.state: TimeTurn | None = None
        self.quotes: dict[str, str | None] = {}

    async def _preload(self, clock: TimeClock, agent_zone: str | None) -> None:
        """Load the turn's zones in a worker thread, so the stages never read a zone file on
        the event loop."""
        names = {name for name in (clock.zone, agent_zone) if name and is_zone_name(name)}
        await self.offload(preload_zones, sorted(names))

    # -- seed -----------------------------------------------------------------------------------

    async def seed(self, seed: SeedInput) -> Seeded:
        """A first run fixes the clock and reads the person's words (rows to file); a
        continuation reads the turn's rows back (nothing to file)."""
        if self.kind != "initial":
            self.state = await self._continuation(seed.ledger, seed.turn)
            return Seeded()
        try:
            self.state = await self._first_run(seed)
        except TimeReaderError as exc:
            # docs/time.md#readers: a reader whose output is unusable holds the turn.
            return Seeded(hold=("time-reader", exc.message))
        return Seeded(rows=[msgspec.to_builtins(row) for row in self.state.rows])

    async def _first_run(self, seed: SeedInput) -> TimeTurn:
        """The clock and reading rows of a turn's first run (read once, docs/time.md#readers).

        Raises:
            TimeReaderError: the reader's output is not shaped ``{mentions: [...]}``.
        """
        config = self.config
        text = seed.text
        assert text is not None
        earlier_zone = answered_zone(await seed.answered_questions(), seed.ledger)

        def work() -> tuple[TimeClock, list[Any]]:
            time: MessageTime | None = None
            if seed.message_time is not None:
                time = message_time_from_wire(seed.message_time)
            clock = turn_clock(
                time,
                agent_zone=config.zone,
                answered_zone=earlier_zone,
                accepted_at_ms=seed.accepted_at_ms,
            )
            rows = [
                clock_row(clock, turn=seed.turn),
                *read_message(text, clock=clock, config=config, turn=seed.turn),
            ]
            return clock, rows

        clock, rows = await self.offload(work)
        await self._preload(clock, config.zone)
        return TimeTurn(clock, list(rows), seed.turn)

    async def _continuation(self, ledger: Sequence[LedgerRow], turn: int) -> TimeTurn | None:
        """The turn's time rows as filed by its earlier runs, typed as the store read them;
        None when it filed no clock."""
        rows = [row for row in ledger if isinstance(row, TIME_ROW_TYPES) and row.turn == turn]
        clock_row = next((row for row in rows if isinstance(row, ClockRow)), None)
        if clock_row is None:
            return None
        clock = clock_row.clock
        await self._preload(clock, self.config.zone)
        return TimeTurn(clock, rows, turn)

    # -- context --------------------------------------------------------------------------------

    def serve_tools(
        self, tools: Sequence[Tool], schemas: tuple[ToolSchema, ...], history: Sequence[Message]
    ) -> tuple[ToolSchema, ...]:
        if self.state is None:
            return schemas
        # Every tool with period forms may say which words its period came from
        # (docs/time.md#sent-window-path).
        return tuple(
            with_time_quote(schema) if has_forms(tool) else schema
            for tool, schema in zip(tools, schemas, strict=True)
        )

    def request_lines(self) -> list[Piece]:
        if self.state is None:
            return []
        # docs/time.md#the-served-time-line: the turn's clock, at the end of every request of the
        # turn.
        clock = self.state.clock
        text = time_line(clock.now_instant, clock.zone, zone_unknown=clock.zone_source == "unknown")
        return [{"role": "user", "reason": "time-line", "text": text}]

    # -- tool-calls -----------------------------------------------------------------------------

    def peel(
        self, calls: Sequence[ToolCall], at: At, history: Sequence[Message]
    ) -> tuple[tuple[ToolCall, ...], Filed]:
        """Peel ``_timeQuote`` off calls to period tools (it never reaches the tool,
        docs/time.md#which-path-a-call-takes)."""
        self.quotes = {}
        if self.state is None:
            return tuple(calls), Filed()
        clean = []
        for call in calls:
            tool = self.tools_by_name.get(call.name)
            if not has_forms(tool) or call.args_text is not None:
                clean.append(call)
                continue
            quote = call.args.get(TIME_QUOTE)
            self.quotes[call.id] = quote if isinstance(quote, str) else None
            if TIME_QUOTE in call.args:
                call = msgspec.structs.replace(call, args=without_time_quote(call.args))
            clean.append(call)
        return tuple(clean), Filed()

    async def decide(
        self, planned: Sequence[PlannedCall], at: At
    ) -> tuple[list[PlannedCall], list[Ask]]:
        """Decide every call to a period tool before anything runs
        (docs/time.md#deciding-each-call); returns the batch as it will run and the time question
        when a call waits for the person."""
        state = self.state
        if state is None:
            return list(planned), []
        agent_zone = self.config.zone
        binds = [
            (index, call_to_bind(item, self.quotes.get(item.call.id), at), item)
            for index, item in enumerate(planned)
            if item.runnable and has_forms(item.tool)
        ]

        def work() -> list[CallDecision]:
            return [
                decide_call(bind, state.windows, state.context(item.tool, agent_zone=agent_zone))
                for _, bind, item in binds
            ]

        decisions = await self.offload(work) if binds else []
        result = list(planned)
        asking: list[CallToBind] = []
        for (index, bind, item), decision in zip(binds, decisions, strict=True):
            state.decisions[bind.tool_call_id] = decision
            result[index] = self._apply(item, decision)
            if decision.asks:
                asking.append(bind)
        state.add([decision.row for decision in decisions])
        if not asking:
            return result, []
        # docs/time.md#when-the-batch-asks, docs/time.md#question-shapes: calls wait only on the
        # turn's single open mention (docs/time.md#what-follows-for-filling).
        assert state.windows.open
        return result, [await self._question_for(state.windows.open[0], asking)]

    def _apply(self, item: PlannedCall, decision: CallDecision) -> PlannedCall:
        """The planned call after its decision: refused (never runs) or with its arguments."""
        row = decision.row
        if row.how == "refused":
            period = period_of(item.tool)
            declared = facts_of(period)
            forms = forms_of(period)
            # docs/time.md#refused-calls: explain with the facts that refused it: a sent window
            # was judged with its form's facts, a fill with the tool's (the largest cap among its
            # forms).
            facts = (
                form_facts(forms[row.form], declared)
                if row.form is not None and row.form < len(forms)
                else tool_facts(forms, declared)
            )
            text = refusal_observation(
                item.call.name, row.refused or "no-form-holds", facts, argument=row.argument
            )
            return PlannedCall(
                call=item.call, tool=item.tool, outcome=unrun_outcome(item.call, "refused", text)
            )
        if decision.arguments == dict(item.call.args):
            return item
        return plan_call(
            msgspec.structs.replace(item.call, args=decision.arguments), self.tools_by_name
        )

    async def _question_for(self, mention: OpenMention, binds: Sequence[CallToBind]) -> Ask:
        """The question about ``mention`` for the calls waiting on it, with what judging its
        answers needs (kept on the question: the API judges answers without the loop)."""
        state = self.state
        assert state is not None
        ctx = PeriodContext(
            now=state.clock.now_instant, zone=state.zone, agent_zone=self.config.zone
        )
        question = await self.offload(partial(time_question, mention, binds, ctx, turn=state.turn))
        detail = {
            "question": msgspec.to_builtins(question),
            "facts": [msgspec.to_builtins(tool_facts(b.forms, b.facts)) for b in binds],
            "binds": [msgspec.to_builtins(b) for b in binds],
            "now": state.clock.now,
            "personZone": state.zone,
            "maxAnswerRepeats": self.config.max_answer_repeats,
        }
        return ("time", question.prompt, question.tool_call_ids, detail)

    def observed(self, outcome: ToolOutcome) -> ToolOutcome:
        if self.state is None:
            return outcome
        return filled_outcome(outcome, self.state.decisions.get(outcome.tool_call_id))

    # -- dispatch -------------------------------------------------------------------------------

    def dispatching(self) -> Dispatching | None:
        return Dispatching(self) if self.state is not None else None

    # -- settle (answers) -----------------------------------------------------------------------

    async def settle(
        self, calls: Sequence[ToolCall], questions: Sequence[QuestionRow], at: At
    ) -> Settled:
        """Every period call of a paused batch keeps its decision; calls waiting on a time
        question get theirs (docs/time.md#recording-an-accepted-answer). After a zone answer the
        mention is read again in that zone and asked as a range, unless no reading can serve."""
        if self.state is None:
            return Settled()
        timed, mention, binds = await self._settle_time(calls, questions, at)
        if mention is None:
            return Settled(planned=timed)
        refused = await self._refuse_unreachable(mention, binds, calls, at)
        if refused is not None:
            return Settled(planned={**timed, **refused})
        ask = await self._question_for(mention, binds)
        kept = tuple(q.question_id for q in questions if q.kind != "time")
        return Settled(planned=timed, asks=[ask], kept_question_ids=kept)

    async def _settle_time(
        self, calls: Sequence[ToolCall], questions: Sequence[QuestionRow], at: At
    ) -> tuple[dict[str, PlannedCall], OpenMention | None, list[CallToBind]]:
        """Apply the closed time questions of a paused batch.

        Returns the planned calls decided again (by call id; their ``time-answer`` and second
        ``call-window`` rows wait for the settle bundle), and — after a zone answer — the mention
        resolved again with the calls waiting on it (the batch then asks a ``time-range``
        question).
        """
        state = self.state
        assert state is not None
        by_id = {call.id: call for call in calls}
        planned: dict[str, PlannedCall] = {}
        waiting_ids = {i for q in questions if q.kind == "time" for i in q.tool_call_ids}
        for call in calls:
            # A call of the batch not waiting on a time question keeps the decision filed before
            # the pause (docs/time.md#recording-an-accepted-answer: only waiting calls get a
            # second row): refused stays refused.
            if call.id in waiting_ids:
                continue
            decided = self._kept_decision(call)
            if decided is not None:
                planned[call.id] = decided
        for question in questions:
            if question.kind != "time" or question.detail is None:
                continue
            waiting = [by_id[i] for i in question.tool_call_ids if i in by_id]
            if question.status != "answered":
                for call in waiting:
                    tool = self.tools_by_name.get(call.name)
                    planned[call.id] = PlannedCall(
                        call=call, tool=tool, outcome=unanswered_time(call, question)
                    )
                continue
            asked = msgspec.convert(question.detail["question"], TimeQuestion)
            binds = [msgspec.convert(b, CallToBind) for b in question.detail.get("binds", [])]
            if asked.format == "zone":
                mention = await self._resolve_again(asked.mention, str(question.answer))
                return planned, mention, binds
            row = time_answer_row(
                asked, str(question.answer), iteration=at.iteration, typed_zone=state.clock.zone
            )
            state.add([row])
            for call, bind in zip(waiting, binds, strict=False):
                tool = self.tools_by_name.get(call.name)
                if tool is None or not has_forms(tool):
                    continue
                ctx = state.context(tool, agent_zone=self.config.zone)
                decision = await self.offload(decide_call, bind, state.windows, ctx)
                state.decisions[call.id] = decision
                state.add([decision.row])
                item = plan_call(call, self.tools_by_name)
                if item.runnable:
                    item = self._apply(item, decision)
                planned[call.id] = item
        return planned, None, []

    def _kept_decision(self, call: ToolCall) -> PlannedCall | None:
        """The planned call from the call's latest ``call-window`` row of this turn, if it has
        one (a continuation run dispatches it as decided then: refused, or with its arguments)."""
        state = self.state
        tool = self.tools_by_name.get(call.name)
        if state is None or not has_forms(tool):
            return None
        row = call_window_of_call(state.rows, call.id, state.turn)
        if row is None:
            return None
        decision = CallDecision(row=row, arguments=without_time_quote(call.args))
        state.decisions[call.id] = decision
        item = plan_call(msgspec.structs.replace(call, args=decision.arguments), self.tools_by_name)
        return self._apply(item, decision) if item.runnable else item

    async def _refuse_unreachable(
        self,
        mention: OpenMention,
        binds: Sequence[CallToBind],
        calls: Sequence[ToolCall],
        at: At,
    ) -> dict[str, PlannedCall] | None:
        """After a zone answer: when readings exist but every waiting call rejects every one of
        them, no question is asked and the calls are refused with the first reading's code
        (docs/time.md#question-shapes, docs/time.md#fill-path step 4); None when a question is
        worth asking."""
        state = self.state
        assert state is not None
        if not mention.readings:
            return None
        by_id = {call.id: call for call in calls}
        ctx = PeriodContext(now=state.clock.now_instant, agent_zone=self.config.zone)
        refusals = await self.offload(
            lambda: [refusal_of_all(bind, mention.readings, ctx) for bind in binds]
        )
        if any(code is None for code in refusals):
            return None
        planned: dict[str, PlannedCall] = {}
        for bind, code in zip(binds, refusals, strict=True):
            row = CallWindowRow(
                turn=bind.turn,
                iteration=at.iteration,
                tool_call_id=bind.tool_call_id,
                tool_name=bind.tool_name,
                how="refused",
                refused=code,
            )
            state.add([row])
            call = by_id.get(bind.tool_call_id)
            if call is None:
                continue
            decision = CallDecision(row=row, arguments=without_time_quote(call.args))
            state.decisions[call.id] = decision
            planned[call.id] = self._apply(plan_call(call, self.tools_by_name), decision)
        return planned

    async def _resolve_again(self, mention_index: int, zone: str) -> OpenMention:
        state = self.state
        assert state is not None
        reading = next(
            row
            for row in state.rows
            if isinstance(row, TimeReadingRow) and row.mention == mention_index
        )
        parses = list(reading.parses or ())
        policy = self.config.policy
        work = partial(resolve, parses, clock=state.clock, policy=policy, zone_answer=zone)
        resolution = await self.offload(work)
        readings = tuple(
            OpenReading(range=c.range, zone=c.zone, lookback=c.lookback, candidate=i)
            for i, c in enumerate(resolution.candidates)
        )
        return OpenMention(mention=mention_index, quote=reading.quote or "", readings=readings)

    def take_rows(self) -> list[dict[str, Any]]:
        if self.state is None:
            return []
        rows, self.state.pending = self.state.pending, []
        return rows
