"""Running a scenario: one standing agent, a real store (a fresh SQLite file, or a Postgres
database holding no scenario yet), the scripted world, the steps.

The *host* here is what a restart or a crash throws away: the open store, the agent
definition (its scripted model adapters, its window strategy and the strategy's latch) and the
driver. The *world* (``_world.World``) is what outlives it: the virtual clock, the id factory,
the jitter source, the scripts and what was recorded.

Each ``message`` or ``continueFrom`` step drives the agent until its turn is answered, paused or
held: a stall is retried within the step (the clock moves to ``retryAtMs``), and an armed crash
drops the host and opens a fresh one whose ``work()`` recovers the turn. A ``resume`` step
answers or abandons one open question of the paused turn (``app.answer`` /
``app.abandon``, as the API does) and drives the agent the same way: once the batch's last
question is closed, ``work()`` runs the ``answer`` run. The step's runs, answer and window
records are read back from the store afterwards.

Decisions where docs/scenarios.md is silent:

* An answer that does not fit its question's kind (text for an approval, a decision for a tool
  ask, an empty or over-long text) is the runtime's ``InvalidAnswer`` (as the API's 422): the
  scenario stops with that class, its ``reason`` kept, the message starting with the step's
  ``$.turns[i].answer`` path and naming the question, its kind and the reason code.
* A ``question`` position past the open questions is an ``InvalidValue`` at
  ``$.turns[i].question``; resuming when no question is open at all is one at ``$.turns[i]``.
* A ``message`` or ``continueFrom`` step while the previous turn is paused (or held, or anything
  but finished) is an ``InvalidValue`` at ``$.turns[i]`` saying so; nothing is posted.
* A resume step's ``findingsLedger`` and ``timeRows`` hold the rows of the turn added since the
  step began (the message step that paused already showed its own). Both lists come from the
  one ledger, split by ``kind``: ``basis``/``standing``/``conflict`` and the time kinds
  (``clock``, ``time-reading``, ``time-answer``, ``call-window``, ``call``; docs/time.md#row-kinds).
* ``answerStatus`` is what the API answers for the step's answer: ``accepted``; ``re-asked``
  when a time answer was refused and its question stays open (the step then runs nothing and
  ends ``paused``); ``unsettled`` when a refused time answer found the question's repeats used
  up, so it closed unsettled and the answer run went on without its calls
  (docs/time.md#judging-answers; docs/scenarios.md lists only the first two, the API has the third).
  An abandon step says ``accepted``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from afp_runtime.agents import import_checkpoint
from afp_runtime.agents.recall_tool import RecallRow
from afp_runtime.app import StoredRun, answer_status, conform, final_answer
from afp_runtime.app import folded as folded_spans
from afp_runtime.cost import cost_wire
from afp_runtime.errors import (
    InvalidAnswer,
    InvalidValue,
)
from afp_runtime.findings import BasisRow, ConflictRow, StandingRow
from afp_runtime.messages import Cost
from afp_runtime.models import ScriptedModel
from afp_runtime.records import CompactionsWrite, LedgerRow, PermissionRow, ledger_row_to_wire
from afp_runtime.scenario._host import Host
from afp_runtime.scenario._wait import run_wait, schedule_rows
from afp_runtime.scenario._world import Abort, Arm, Crash, World
from afp_runtime.scenario.format import (
    AGENT_ID,
    ContinueFromStep,
    CrashStep,
    MessageStep,
    RestartStep,
    ResumeStep,
    Scenario,
    WaitStep,
    checkpoint_of,
    decode_scenario,
    message_time_of,
)
from afp_runtime.scenario.result import RESULT_FORMAT, RunSummary, ScenarioResult, StepResult
from afp_runtime.store import backend_name, open_store, shown_location, sqlite_path
from afp_runtime.time import TIME_ROW_TYPES


def _caught(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """``exc`` or the first exception of that kind inside (nested) exception groups."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _caught(inner, kind)
            if found is not None:
                return found
    return None


class _Runner:
    """Runs the steps of one scenario in order."""

    def __init__(self, scenario: Scenario, location: str | Path) -> None:
        self.scenario = scenario
        self.world = World(scenario)
        self.host = Host(self.world, location)
        self.pending: list[Arm] = []

    async def run(self) -> ScenarioResult:
        try:
            # Inside: whatever open made before it failed is closed too (a store left open
            # keeps its thread, and the process would never exit).
            await self.host.open()
            steps = [
                await self._step(index, step) for index, step in enumerate(self.scenario.turns)
            ]
            store, _ = self.host.live()
            folded = await folded_spans(store, AGENT_ID)
            run_ids = [r.run_id for r in await store.runs(AGENT_ID)]
        finally:
            await self.host.close()
        served = await self._served(steps, run_ids)
        world = self.world
        return ScenarioResult(
            format=RESULT_FORMAT,
            name=self.scenario.name,
            turns=tuple(steps),
            model_calls=tuple(world.model_calls),
            summarizer_calls=tuple(world.summarizer_calls),
            tool_executions=tuple(e.frozen() for e in world.executions),
            folded=folded,
            served=tuple(served),
        )

    async def _served(self, steps: list[StepResult], run_ids: list[str]) -> list[dict[str, Any]]:
        """Every epoch of every run (abandoned ones included), rebuilt from the store and
        checked against its receipt, bytes re-encoded with the scripted encoder."""
        step_of = {
            run.run_id: step.index
            for step in steps
            if step.runs is not msgspec.UNSET
            for run in step.runs
        }
        encoder = ScriptedModel([], model=self.scenario.agent.model)
        store = await open_store(self.host.location, read_only=True)
        try:
            found = []
            for run_id in run_ids:
                run = StoredRun(store, run_id)
                reports = await conform(run, encoders=lambda _name, _model: encoder)
                found += [
                    {
                        "turn": step_of.get(run_id),
                        "runId": run_id,
                        "epoch": report.epoch,
                        "conforms": report.verdict == "verified",
                        "gaps": list(report.gaps),
                    }
                    for report in reports
                ]
            return found
        finally:
            await store.aclose()

    async def _step(self, index: int, step: Any) -> StepResult:
        self.world.step = index
        if isinstance(step, RestartStep):
            await self.host.close()
            await self.host.open()
            return StepResult(index=index, kind="restart")
        if isinstance(step, CrashStep):
            self.pending.append(Arm(index=index, spec=step))
            return StepResult(index=index, kind="crash")
        path = f"$.turns[{index}]"
        if isinstance(step, WaitStep):
            return await run_wait(self, index, step, path)
        self.world.advance(self.scenario.clock.run_gap_ms)
        ledger_from = 0
        answer_status: str | msgspec.UnsetType = msgspec.UNSET
        if isinstance(step, ResumeStep):
            message_id, ledger_from, answer_status = await self._resume(step, path)
            kind = "resume"
        else:
            await self._require_idle(path)
            if isinstance(step, ContinueFromStep):
                store, _ = self.host.live()
                checkpoint = checkpoint_of(step, path)
                await import_checkpoint(
                    store, AGENT_ID, checkpoint, now_ms=self.world.clock.now_ms(), replace=True
                )
                kind = "continueFrom"
            else:
                assert isinstance(step, MessageStep)
                kind = "message"
            _, driver = self.host.live()
            time = (
                message_time_of(step, path, timed=self.scenario.agent.time is not None)
                if isinstance(step, MessageStep)
                else None
            )
            message_id = (await driver.post(step.message, time=time)).message_id
        self.world.arms, self.pending = self.pending, []
        run_ids = await self.drive()
        self.require_fired(path)
        return await self.report(
            index, kind, message_id, run_ids, ledger_from=ledger_from, answer_status=answer_status
        )

    def require_fired(self, path: str) -> None:
        """Every crash armed for the step at ``path`` fired; the arms are cleared.

        Raises:
            InvalidValue: one never did (named by its crash step's path).
        """
        for arm in self.world.arms:
            if not arm.fired:
                raise InvalidValue(
                    f"$.turns[{arm.index}]: the crash armed here (after {arm.spec.after!r}) "
                    f"was never reached by step {path}",
                    field=f"$.turns[{arm.index}]",
                )
        self.world.arms = []

    async def _require_idle(self, path: str) -> None:
        store, _ = self.host.live()
        state = await store.conversation_state(AGENT_ID)
        if state is None or state.open_turn is None:
            return
        turn = state.open_turn
        if turn.status == "paused":
            waiting = len(await store.questions(AGENT_ID, status="open"))
            raise InvalidValue(
                f"{path}: the previous turn is still paused ({waiting} open question(s)); "
                "a scenario cannot post behind it: resume it first "
                "(docs/host.md#messages-while-paused)",
                field=path,
            )
        raise InvalidValue(
            f"{path}: the previous turn is still {turn.status} "
            f"({turn.error_kind or 'no error'}); a scenario cannot post behind it",
            field=path,
        )

    async def _resume(self, step: ResumeStep, path: str) -> tuple[str, int, str]:
        """Answer or abandon the open question a resume step picks; the question's inbox
        message, how many ledger rows its turn held before (docs/host.md#answering-a-question,
        docs/host.md#abandoning-a-question) and the answer's status (``accepted``, ``re-asked`` or
        ``unsettled``, docs/time.md#judging-answers).

        Raises:
            InvalidValue: no question is open, or ``question`` is past the open ones.
            InvalidAnswer: the answer does not fit the question's kind (path and reason named).
        """
        store, _ = self.host.live()
        waiting = await store.questions(AGENT_ID, status="open")
        if not waiting:
            state = await store.conversation_state(AGENT_ID)
            turn = state.open_turn if state is not None else None
            where = "no turn is open" if turn is None else f"the turn is {turn.status}"
            raise InvalidValue(f"{path}: there is no open question to resume ({where})", field=path)
        position = step.question or 0
        if position >= len(waiting):
            raise InvalidValue(
                f"{path}.question: position {position} is past the {len(waiting)} open "
                "question(s) (0-based, in asking order)",
                field=f"{path}.question",
            )
        question = waiting[position]
        ledger_from = len(await store.ledger(AGENT_ID, turn=question.turn))
        _, driver = self.host.live()
        if step.abandon:
            await driver.abandon(question.question_id)
            return question.message_id, ledger_from, "accepted"
        try:
            row = await driver.answer(question.question_id, step.value())
        except InvalidAnswer as exc:
            where = f"{path}.answer"
            raise InvalidAnswer(
                f"{where}: the answer does not fit question {question.question_id} "
                f"({question.kind}, {question.prompt!r}): {exc.message} (reason {exc.reason})",
                reason=exc.reason,
                field=where,
            ) from None
        return question.message_id, ledger_from, answer_status(row)

    async def drive(self) -> list[tuple[str, str]]:
        """Work the agent until the turn is answered, paused or held; the runs it ran, each
        with the kind it was started as (used when its row was never committed)."""
        runs: list[tuple[str, str]] = []
        while True:
            store, driver = self.host.live()
            state = await store.conversation_state(AGENT_ID)
            assert state is not None
            turn = state.open_turn
            expected = (
                "initial"
                if turn is None
                else {"stalled": "retry", "running": "recovery", "paused": "answer"}.get(
                    turn.status, "operator"
                )
            )
            minted = len(self.world.ids.runs)
            try:
                async with self.world.clock.autojump():
                    await driver.work()
            except BaseException as exc:
                runs += [(run_id, expected) for run_id in self.world.ids.runs[minted:]]
                crash = _caught(exc, Crash)
                if crash is None:
                    abort = _caught(exc, Abort)
                    if isinstance(abort, Abort):
                        raise abort.error from None
                    raise
                # The process died: everything in memory goes; a fresh host recovers the turn.
                await self.host.close()
                await self.host.open()
                continue
            runs += [(run_id, expected) for run_id in self.world.ids.runs[minted:]]
            state = await store.conversation_state(AGENT_ID)
            assert state is not None
            turn = state.open_turn
            if turn is not None and turn.status == "stalled" and turn.retry_at_ms is not None:
                self.world.advance_to(turn.retry_at_ms)
                continue
            return runs

    async def report(
        self,
        index: int,
        kind: str,
        message_id: str,
        run_ids: list[tuple[str, str]],
        *,
        ledger_from: int = 0,
        answer_status: str | msgspec.UnsetType = msgspec.UNSET,
    ) -> StepResult:
        store, _ = self.host.live()
        rows = await store.runs(AGENT_ID)
        by_id = {row.run_id: row for row in rows}
        runs = []
        for run_id, expected in run_ids:
            row = by_id.get(run_id)
            if row is None or run_id in self.world.crashed:
                # A crash cut it: its row (if any commit made one) still says "running".
                run_kind = row.kind if row is not None else expected
                runs.append(RunSummary(run_id=run_id, kind=run_kind, status="crashed"))
            else:
                runs.append(RunSummary(run_id=run_id, kind=row.kind, status=row.status))
        state = await store.conversation_state(AGENT_ID)
        assert state is not None
        message = await store.inbox_message(message_id)
        outcome = (
            state.open_turn.status
            if state.open_turn is not None
            else ("halted" if message is not None and message.status == "halted" else "answered")
        )
        turn_runs = [row.run_id for row in rows if row.message_id == message_id]
        costs = [by_id[r].cost for r in turn_runs if by_id[r].cost is not None]
        cost = (
            cost_wire(sum((c for c in costs if c is not None), Cost())) if costs else msgspec.UNSET
        )
        halted: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
        if outcome == "halted":
            last = by_id[turn_runs[-1]]
            halted = {"errorKind": last.error_kind, "error": last.error}
        compactions: list[dict[str, Any]] = []
        answer: str | msgspec.UnsetType = msgspec.UNSET
        for run_id in turn_runs:
            for bundle in await store.bundles(run_id):
                for write in bundle.writes:
                    if isinstance(write, CompactionsWrite):
                        compactions.extend(write.value)
                said = final_answer(bundle)
                if said is not None and outcome == "answered":
                    answer = said
        ledger = (
            await store.ledger(AGENT_ID, turn=message.turn)
            if message is not None and message.turn is not None
            else []
        )
        ledger = ledger[ledger_from:]
        return StepResult(
            index=index,
            kind=kind,
            run_id=runs[-1].run_id if runs else msgspec.UNSET,
            outcome=outcome,
            answer_status=answer_status,
            runs=tuple(runs),
            answer=answer,
            cost=cost,
            halted=halted,
            compactions=tuple(compactions),
            findings_ledger=_wire(r for r in ledger if isinstance(r, FINDINGS_ROW_TYPES)),
            # Only when the agent has a gate, so other results keep their bytes.
            permissions=_wire(r for r in ledger if isinstance(r, PermissionRow)) or msgspec.UNSET,
            time_rows=_wire(r for r in ledger if isinstance(r, TIME_ROW_TYPES)),
            schedule_rows=schedule_rows(ledger),
            # Only when the agent recalled, so other results keep their bytes.
            recall_rows=_wire(r for r in ledger if isinstance(r, RecallRow)) or msgspec.UNSET,
        )


FINDINGS_ROW_TYPES = (BasisRow, StandingRow, ConflictRow)


def _wire(rows: Iterable[LedgerRow]) -> tuple[dict[str, Any], ...]:
    """Typed ledger rows rendered to the wire maps a result shows."""
    return tuple(ledger_row_to_wire(row) for row in rows)


async def run_scenario(scenario: Scenario | bytes | str, *, db_path: str | Path) -> ScenarioResult:
    """Run one scenario offline and return its result (docs/scenarios.md).

    Args:
        scenario: the scenario file's bytes or text, or a decoded ``Scenario``.
        db_path: where the store is created: a SQLite file (path or ``sqlite:`` URL) that must
            not exist yet, or a Postgres database URL whose database holds no scenario agent
            yet (docs/scenarios.md#on-postgres).

    Raises:
        InvalidValue: the scenario is malformed, the store is not fresh, arms a crash that is
            never reached, posts
            behind a paused or held turn, or resumes when no question is open (or past the open
            ones); the message names the JSON path of the step.
        TimeNotEnabled: a message step carries ``time`` while ``agent.time`` is null.
        InvalidAnswer: a resume step's answer does not fit its question's kind; ``reason`` is
            the runtime's code, and the message names ``$.turns[i].answer`` and the reason.
        ScriptExhausted: the provider's (or the summarizer's) replies ran out; names the call.
        AfpError: a declaration the runtime refuses (a tool, its period, ``agent.time``, a
            strategy), with the JSON path in front.
    """
    if not isinstance(scenario, bytes | str):
        # A struct built in code skipped the decoder's constraints: check it as a file would be.
        scenario = msgspec.json.encode(scenario)
    scenario = decode_scenario(scenario)
    location: str | Path = db_path
    text = os.fspath(db_path)
    if backend_name(db_path) == "postgres":
        await _require_fresh_database(text)
    else:
        location = sqlite_path(db_path)
        if await anyio.Path(location).exists():
            raise InvalidValue(
                f"db_path {os.fspath(location)!r} already exists; a scenario runs on a fresh "
                "database file",
                field="db_path",
            )
    return await _Runner(scenario, location).run()


async def _require_fresh_database(url: str) -> None:
    """Refuse a Postgres database that holds the scenario's agent already (an earlier run).

    Raises:
        InvalidValue: it does (the URL named with its password masked).
    """
    store = await open_store(url)
    try:
        taken = await store.conversation_state(AGENT_ID) is not None
    finally:
        await store.aclose()
    if taken:
        raise InvalidValue(
            f"db_path {shown_location(url)!r} holds a scenario agent already; a scenario runs "
            "on a fresh database (create an empty one)",
            field="db_path",
        )
