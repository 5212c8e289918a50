"""An agent driven in this process, without a host (docs/python.md,
docs/api.md#the-afp-command): the Python ``Store``, ``afp run`` / ``afp demo`` and the scenario
runner.

``LocalAgent`` is the one place these doors post, close questions, work, resume and dismiss;
the loop's ``AgentDriver`` runs the turns. ``drive`` is ``afp run``'s whole use case: open the
store, finish what an earlier process left, post the messages, answer them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import msgspec

from afp_runtime.agents import Agent
from afp_runtime.app.questions import abandon, answer
from afp_runtime.loop import AgentDriver, Emitter, EventSink, IdFactory, LoopHooks, RunOutcome
from afp_runtime.mcp import sessions_open
from afp_runtime.records import Clock, OpenTurn, QuestionRow
from afp_runtime.store import Store, open_store


class LocalAgent(AgentDriver):
    """One agent's turns run on ``store`` in this process, one at a time (the caller serialises):
    the loop's driver (``post``, ``work``, ``resume``, ``dismiss``) with the question writes and
    the open turn a door needs besides.

    Args:
        store: the open (writer) store.
        definition: the agent.
        clock: the clock its turns run on.
        ids: the run and message id factory.
        sinks: where the events go.
        rng: the random source of retry jitter.
        hooks: loop hooks (the scenario runner's crash points).
    """

    def __init__(
        self,
        store: Store,
        definition: Agent,
        *,
        clock: Clock,
        ids: IdFactory,
        sinks: Sequence[EventSink] = (),
        rng: random.Random | None = None,
        hooks: LoopHooks | None = None,
    ) -> None:
        super().__init__(
            store,
            definition,
            clock=clock,
            ids=ids,
            emitter=Emitter(list(sinks)),
            rng=rng,
            hooks=hooks,
        )
        self.writer = store

    async def answer(
        self, question_id: str, value: Any, *, sender: str | None = None
    ) -> QuestionRow:
        """Answer a question of the paused turn durably (``app.answer``); ``work`` runs on."""
        return await answer(
            self.writer,
            self.agent_id,
            question_id,
            value,
            clock=self.clock,
            sender=sender,
            shared=self.definition.shared,
        )

    async def abandon(self, question_id: str, *, sender: str | None = None) -> QuestionRow:
        """Close a question unanswered (``app.abandon``); ``work`` runs on."""
        return await abandon(
            self.writer,
            self.agent_id,
            question_id,
            clock=self.clock,
            sender=sender,
            shared=self.definition.shared,
        )

    async def open_turn(self) -> OpenTurn | None:
        """The agent's open turn, None when it has none."""
        state = await self.writer.conversation_state(self.agent_id)
        return state.open_turn if state is not None else None


class Driven(msgspec.Struct, frozen=True, kw_only=True):
    """What ``drive`` did.

    Attributes:
        outcomes: every run's outcome, in order.
        open_turn: the turn left open at the end (a stall not yet due, a pause, a hold), if any.
    """

    outcomes: tuple[RunOutcome, ...]
    open_turn: OpenTurn | None


async def drive(
    target: str,
    definition: Agent,
    messages: Sequence[str] = (),
    *,
    clock: Clock,
    ids: IdFactory,
    sinks: Sequence[EventSink] = (),
) -> Driven:
    """Open the store at ``target``, finish the agent's unfinished work, post ``messages`` and
    answer them, with the agent's MCP sessions open throughout; the definition's adapters and
    the store are closed at the end."""
    store = await open_store(target, now_ms=clock.now_ms())
    try:
        local = LocalAgent(store, definition, clock=clock, ids=ids, sinks=sinks)
        async with sessions_open(definition.mcp, clock):
            # Finish what an earlier process left unfinished before taking anything new.
            outcomes = await local.work()
            for text in messages:
                await local.post(text)
            outcomes += await local.work()
            waiting = await local.open_turn()
    finally:
        await definition.aclose()
        await store.aclose()
    return Driven(outcomes=tuple(outcomes), open_turn=waiting)
