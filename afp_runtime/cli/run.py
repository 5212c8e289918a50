"""``afp run`` and ``afp demo``: drive an agent of a config file on the store, in this process.

``afp run`` exits by how the last turn it touched stopped (0 answered, 6 paused, 7 stalled,
8 held...; docs/api.md#exit-codes), and its ``--json`` rows always carry ``errorKind`` and
``error`` (``null`` when the run answered).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread
import msgspec

from afp_runtime.agents import Agent, read_config
from afp_runtime.api.shapes import AnswerAccepted
from afp_runtime.api.views import question_view
from afp_runtime.app import EventRecorder, RunOutcome, SystemClock, TimeOrderedIds, drive
from afp_runtime.cli import pausing, writes
from afp_runtime.cli._exits import EXIT_OK, TURN_EXITS
from afp_runtime.cli._show import add_row, command_name, out, print_json, say, table
from afp_runtime.cli.reads import opened, reader, window_records
from afp_runtime.demo import QUESTIONS
from afp_runtime.errors import ConfigError
from afp_runtime.records import IterationEnded, OpenTurn, QuestionRow, ReceiptMinted, ToolEnded
from afp_runtime.store import shown_location


async def definition_from(path: str, agent: str | None) -> Agent:
    """The agent ``agent`` (default: the first) of a config file, read off the event loop."""
    config, agents = await anyio.to_thread.run_sync(read_config, path)
    for definition in agents:
        if agent is None or definition.agent_id == agent:
            return definition
    names = ", ".join(a.id for a in config.agents)
    raise ConfigError(f"{path} declares no agent {agent!r} (it declares: {names})", path=path)


async def _drive(
    args: Any, messages: Sequence[str], definition: Agent | None = None
) -> tuple[Agent, list[RunOutcome], EventRecorder, OpenTurn | None]:
    """Finish the agent's unfinished work, post ``messages``, answer them; also the turn left
    open at the end (one that may not run now: a stall not yet due, a pause, a hold)."""
    if definition is None:
        definition = await definition_from(args.config, args.agent)
    clock = SystemClock()
    recorder = EventRecorder()
    driven = await drive(
        args.db,
        definition,
        messages,
        clock=clock,
        ids=TimeOrderedIds(clock.now_ms),
        sinks=[recorder],
    )
    return definition, list(driven.outcomes), recorder, driven.open_turn


def outcome_row(
    outcome: RunOutcome, questions: Sequence[QuestionRow] | None = None
) -> dict[str, Any]:
    """A run's outcome in wire form with ``errorKind`` and ``error`` always present, and a
    paused run's open ``questions`` (the API's question shape)."""
    row = msgspec.to_builtins(outcome)
    assert isinstance(row, dict)
    row = {**row, "errorKind": outcome.error_kind, "error": outcome.error}
    if questions is not None:
        row["questions"] = msgspec.to_builtins([question_view(q) for q in questions])
    return row


def _print_outcome(outcome: RunOutcome) -> None:
    label = f"turn {outcome.turn} ({outcome.kind} run {outcome.run_id})"
    if outcome.status == "answered":
        say(f"{label}: {outcome.final_answer}")
    else:
        why = f" ({outcome.error_kind}) {outcome.error}" if outcome.error_kind else ""
        say(f"{label}: {outcome.status}{why}")


def _print_outcomes(outcomes: Sequence[RunOutcome]) -> None:
    for outcome in outcomes:
        _print_outcome(outcome)


async def _asked(db: str, agent_id: str, turns: set[int]) -> dict[int, list[QuestionRow]]:
    """The open questions of each of ``turns`` (none read when no turn paused)."""
    if not turns:
        return {}
    async with reader(db) as store:
        rows = await store.questions(agent_id, status="open")
    return {turn: [row for row in rows if row.turn == turn] for turn in turns}


class _Asking:
    """Prints a paused turn's questions and how it goes on (docs/api.md#the-pause-loop)."""

    def __init__(self, args: Any, asked: dict[int, list[QuestionRow]], afp: str) -> None:
        self.args, self.asked, self.afp = args, asked, afp

    def show(self, turn: int) -> None:
        questions = self.asked.get(turn, [])
        pausing.show_questions(questions, afp=self.afp, db=self.args.db)
        config = shlex.quote(self.args.config)
        which = "the last answer" if len(questions) > 1 else "the answer"
        say(
            f"  then: add --run {config} to {which} to continue the turn here, or let a "
            "running host (afp serve) pick it up"
        )


async def _report(
    args: Any,
    agent_id: str,
    outcomes: Sequence[RunOutcome],
    waiting: OpenTurn | None,
    *,
    queued: bool = False,
    answer: AnswerAccepted | None = None,
) -> int:
    """Print what the runs did as ``afp run`` does (a paused turn with its questions and the
    commands that answer them) and return the exit code of the last turn touched. ``answer``:
    ``afp answer --run``'s answer, which ``--json`` prints beside the rows."""
    idle = waiting if not outcomes and waiting is not None else None
    paused = {o.turn for o in outcomes if o.status == "paused"}
    paused |= {idle.turn} if idle is not None and idle.status == "paused" else set()
    asked = await _asked(args.db, agent_id, paused)
    if args.json:
        rows = [
            outcome_row(o, asked.get(o.turn) if o.status == "paused" else None) for o in outcomes
        ]
        print_json(rows if answer is None else {"answer": answer, "runs": rows})
    else:
        asking = _Asking(args, asked, await pausing.afp_command() if asked else "afp")
        for outcome in outcomes:
            _print_outcome(outcome)
            if outcome.status == "paused":
                asking.show(outcome.turn)
        if idle is not None:
            # Nothing ran because the open turn may not run now (a stall not yet due, a pause,
            # a hold): that is what the caller needs to hear, with that turn's exit code.
            why = f" ({idle.error_kind}) {idle.error}" if idle.error_kind else ""
            behind = "; the message waits behind it" if queued else ""
            say(f"turn {idle.turn} is {idle.status}{why}{behind}")
            if idle.status == "paused":
                asking.show(idle.turn)
        elif not outcomes:
            say("nothing to do: no unfinished turn and no message (use --message)")
    if idle is not None:
        return TURN_EXITS.get(idle.status, EXIT_OK)
    return TURN_EXITS.get(outcomes[-1].status, EXIT_OK) if outcomes else EXIT_OK


async def cmd_run(args: Any) -> int:
    """Run an agent config once: finish unfinished work, then answer ``--message``."""
    messages = [args.message] if args.message else []
    definition = await definition_from(args.config, args.agent)
    try:
        async with opened(args.db) as store:
            await pausing.not_held(
                store,
                definition.agent_id,
                now_ms=SystemClock().now_ms(),
                instead="send it the message through the host (afp send) and it answers it",
            )
    except BaseException:
        await definition.aclose()
        raise
    definition, outcomes, _, waiting = await _drive(args, messages, definition)
    return await _report(args, definition.agent_id, outcomes, waiting, queued=bool(messages))


async def answer_and_run(args: Any) -> int:
    """``afp answer … --run CONFIG`` (and ``afp abandon … --run CONFIG``): close the question,
    then go on with its turn in this process as ``afp run CONFIG`` would, printing what that
    prints and exiting as it exits. Refused before anything is written when the config has no
    such agent or a live host holds the agent (it would race the host)."""
    definition = await definition_from(args.config, args.agent)
    try:
        async with writes.writer(args.db) as store:
            row, accepted = await writes.close_question(store, args, here=True)
    except BaseException:
        await definition.aclose()
        raise
    if not args.json:
        say(f"{row.question_id} {row.status}")
    _, outcomes, _, waiting = await _drive(args, [], definition)
    return await _report(args, definition.agent_id, outcomes, waiting, answer=accepted)


async def cmd_demo(args: Any) -> int:
    """The demo: a standing agent answering a few messages, continuing its conversation."""
    if not await anyio.Path(args.config).is_file():
        # Said before the store is opened, so a wrong folder leaves no empty store behind.
        raise ConfigError(
            f"cannot read config {args.config}: no such file (run afp demo in the project "
            "folder, or give --config)",
            path=str(args.config),
        )
    async with opened(args.db) as store:
        state = await store.conversation_state("demo")
    done = state.turn if state is not None else 0
    messages = [QUESTIONS[(done + i) % len(QUESTIONS)] for i in range(args.turns)]
    definition, outcomes, recorder, _ = await _drive(args, messages)
    _print_outcomes(outcomes)
    async with reader(args.db) as store:
        agents = {a.agent_id: a for a in await store.agents()}
        spans = await store.folded_spans(definition.agent_id)
        records = await window_records(store, [o.run_id for o in outcomes])
    agent = agents[definition.agent_id]
    tool_calls = recorder.payloads(ToolEnded)
    grid = table("what", "", title=f"standing agent {definition.agent_id!r}")
    add_row(
        grid,
        [
            "this run",
            f"{len(outcomes)} runs, {len(recorder.of_type(IterationEnded))} "
            f"iterations, {len(recorder.of_type(ReceiptMinted))} model calls, "
            f"{len(tool_calls)} tool calls",
        ],
    )
    add_row(
        grid,
        ["tools called", ", ".join(sorted({e.tool_name for e in tool_calls})) or "-"],
    )
    add_row(
        grid,
        [
            "conversation",
            f"{agent.turn} turns, {agent.messages} messages, "
            f"{agent.model_calls} model calls in all",
        ],
    )
    removed = sum(r.get("removedMessageCount", 0) for r in records)
    pinned = sorted(
        {p["toolName"] for r in records for p in (r.get("observations") or {}).get("pinned", [])}
    )
    add_row(
        grid,
        [
            "window",
            f"{len(records)} records this run, {removed} messages folded out; "
            f"pins held: {', '.join(pinned) or 'none'}",
        ],
    )
    add_row(grid, ["folds", f"{len(spans)} folded spans kept with the conversation"])
    add_row(grid, ["status", agent.status])
    shown = shown_location(args.db)
    if "://" not in shown:
        shown = str(await anyio.Path(args.db).resolve())
    add_row(grid, ["data", shown])
    grid.show_header = False
    out.print(grid)
    db = shown_location(args.db)
    afp = await anyio.to_thread.run_sync(command_name)
    say("next:")
    say(f"  {afp} runs demo --db {db}                 # every run of the agent")
    say(f"  {afp} commits demo:last --db {db}         # the commit log of the last run")
    say(f"  {afp} window --agent demo --db {db}       # what each window visit did")
    if spans:
        fp = spans[-1].summary_fingerprint[:12]
        say(f"  {afp} folded demo {fp} --messages --db {db}   # a fold's originals")
    say("  scripts/demo                               # continue the same conversation")
    return EXIT_OK
