"""What a paused turn asks and how it goes on, as ``afp run``, ``afp answer`` and ``afp abandon``
print it (docs/api.md#the-pause-loop): each open question with the command that answers it, as it
runs in the shell it was printed in, and what continues the turn once it is answered."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

import anyio.to_thread

from afp_runtime.cli._exits import Refused
from afp_runtime.cli._parser import DEFAULT_DB
from afp_runtime.cli._show import command_name, say
from afp_runtime.records import QuestionRow
from afp_runtime.store import Store, shown_location

PLACEHOLDER = "<your answer>"
"""The value a printed answer command carries for a question that takes text."""


async def afp_command() -> str:
    """``command_name()`` read off the event loop (it looks at the file system)."""
    return await anyio.to_thread.run_sync(command_name)


def store_words(db: str) -> list[str]:
    """``--db`` as a printed command needs it: nothing when this shell finds the store without
    it (``AFP_DB``, else ``./afp.db``), else the store as given, a URL's password ``***``."""
    if db == (os.environ.get("AFP_DB") or DEFAULT_DB):
        return []
    return ["--db", shown_location(db)]


def command(afp: str, *words: str) -> str:
    """A command line that a POSIX shell reads back into exactly ``words``."""
    return " ".join(shlex.quote(word) for word in (afp, *words))


def answer_command(afp: str, row: QuestionRow, db: str) -> str:
    """The command that answers ``row``: ``approve`` for an approval, a quoted placeholder for a
    question that takes text."""
    value = "approve" if row.kind == "approval" else PLACEHOLDER
    return command(afp, "answer", row.agent_id, row.question_id, value, *store_words(db))


def show_questions(rows: Sequence[QuestionRow], *, afp: str, db: str) -> None:
    """Each question's id, kind and prompt (as data: ``say`` pictures control characters), and
    the command that answers it."""
    for row in rows:
        prompt = row.prompt.replace("\n", "\n    ")
        say(f"  question {row.question_id} ({row.kind}): {prompt}")
        other = (
            "(or: decline)" if row.kind == "approval" else f"(your text in place of {PLACEHOLDER})"
        )
        say(f"    answer: {answer_command(afp, row, db)}   {other}")


async def open_questions(store: Store, agent_id: str, turn: int) -> list[QuestionRow]:
    """The questions turn ``turn`` still waits on."""
    return [row for row in await store.questions(agent_id, status="open") if row.turn == turn]


async def not_held(
    store: Store,
    agent_id: str,
    *,
    now_ms: int,
    instead: str = "answer without --run and it picks the turn up within its poll interval",
) -> None:
    """Refuse (exit 5, before anything is written) when a live host holds the agent: it runs
    the agent's turns itself, and a second driver here would race it (a tool run twice)."""
    claim = await store.agent_claim(agent_id, now_ms=now_ms)
    if claim is not None and claim.live:
        raise Refused(
            f"host {claim.host_id!r} holds agent {agent_id!r} and continues its turns itself: "
            f"{instead} (a host that was killed holds it until its lease runs out)"
        )


async def show_how_it_goes_on(store: Store, row: QuestionRow, *, db: str, now_ms: int) -> None:
    """After ``afp answer`` or ``afp abandon`` without ``--run``: the questions the turn still
    waits on, else who continues it (the host that holds the agent, or a command here)."""
    afp = await afp_command()
    waiting = await open_questions(store, row.agent_id, row.turn)
    if waiting:
        say(f"turn {row.turn} goes on once these are answered too:")
        show_questions(waiting, afp=afp, db=db)
        return
    claim = await store.agent_claim(row.agent_id, now_ms=now_ms)
    if claim is not None and claim.live:
        say(
            f"host {claim.host_id} holds agent {row.agent_id}: it continues turn {row.turn} "
            "within its poll interval"
        )
        return
    here = command(afp, "run", "CONFIG", *store_words(db))
    say(
        f"no host holds agent {row.agent_id}, so turn {row.turn} waits: {here} continues it "
        "here (CONFIG: the agent's config file), or a host (afp serve) picks it up within its "
        "poll interval"
    )
