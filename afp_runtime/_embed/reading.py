"""The read half of ``afp.Store``: runs, questions, epochs, served views and their diff and
conformance, an agent's n-th call and the diff of any two of its calls, folded spans and their
originals, recall over what left a window, the findings ledger. Each method checks its
arguments, calls one use case of ``afp_runtime.app`` and names what was not found
(docs/python.md)."""

from __future__ import annotations

from typing import Any, get_args

from afp_runtime import app
from afp_runtime.agents import Agent
from afp_runtime.app import (
    BodyEncoder,
    CallDiff,
    ConformanceReport,
    EpochEntry,
    FoldedSpan,
    ServedView,
    StoredRun,
    ViewDiff,
)
from afp_runtime.errors import InvalidValue, NotFound
from afp_runtime.messages import Message
from afp_runtime.records import QuestionRow, QuestionStatus
from afp_runtime.store import AgentRow, RecallHit, RunRow
from afp_runtime.store import Store as StorePort

AgentRef = Agent | str
"""An ``Agent``, or an agent id for reads."""


def _agent_id(agent: AgentRef) -> str:
    return agent.agent_id if isinstance(agent, Agent) else agent


def _count(value: object, name: str) -> int:
    """``value`` as a call or epoch number: an int (not a bool), else ``InvalidValue`` naming the
    argument, as every other bad argument of this surface is named."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(
            f"{name} must be a whole number, not {type(value).__name__} {value!r}",
            field=name,
        )
    return value


class StoreReads:
    """What ``afp.Store`` reads of what its agents did.

    Args:
        store: the open store.
    """

    def __init__(self, store: StorePort) -> None:
        self._store = store
        # The latest definition of each agent id (its adapter re-encodes for ``conform``).
        self._agents: dict[str, Agent] = {}

    async def agents(self) -> list[AgentRow]:
        """Every agent of the database with a summary of its conversation."""
        return await self._store.agents()

    async def _known(self, agent: AgentRef) -> str:
        agent_id = _agent_id(agent)
        if await self._store.conversation_state(agent_id) is None:
            raise NotFound(f"there is no agent {agent_id!r}", what="agent", value=agent_id)
        return agent_id

    async def runs(self, agent: AgentRef | None = None) -> list[RunRow]:
        """Runs in start order: every agent's, or one agent's.

        Raises:
            NotFound: there is no such agent.
        """
        if agent is None:
            return await self._store.runs()
        return await self._store.runs(await self._known(agent))

    async def questions(self, agent: AgentRef, *, status: str | None = "open") -> list[QuestionRow]:
        """The agent's check-in questions (``status=None``: every status), asking order.

        Raises:
            InvalidValue: ``status`` is not a question status.
        """
        if status is not None and status not in get_args(QuestionStatus):
            known = ", ".join(get_args(QuestionStatus))
            raise InvalidValue(
                f"status must be one of {known} (or None for all), not {status!r}",
                field="status",
            )
        return await self._store.questions(await self._known(agent), status=status)

    async def epochs(self, run_id: str) -> list[EpochEntry]:
        """The run's model calls: outcome, attempts, agent-wide number, tool calls, usage."""
        entries, _ = await app.epoch_list(StoredRun(self._store, run_id))
        return entries

    async def served(self, run_id: str, epoch: int) -> ServedView:
        """Exactly what the model was sent at one call of a run, rebuilt from the log.

        Raises:
            NotFound: no such run, or the run has no such epoch.
        """
        epoch = _count(epoch, "epoch")
        view = await app.served_view(StoredRun(self._store, run_id), epoch)
        if view is None:
            raise app.no_epoch(run_id, epoch)
        return view

    async def diff(self, run_id: str, before: int, after: int) -> ViewDiff:
        """What changed in what the model was sent from one epoch of a run to another:
        messages that left (folded, dropped) and came, system text, tools.

        Raises:
            NotFound: no such run or epoch.
        """
        before, after = _count(before, "before"), _count(after, "after")
        return await app.view_diff(StoredRun(self._store, run_id), before, after)

    async def call(self, agent: AgentRef, n: int) -> tuple[str, int, ServedView]:
        """The agent's ``n``-th model call over its whole life: its run, epoch and view.

        Raises:
            NotFound: no such agent or call.
        """
        n = _count(n, "n")
        agent_id = await self._known(agent)
        found = await app.agent_call(self._store, agent_id, n)
        if found is not None:
            return found.run.run_id, found.epoch, found.view
        raise NotFound(f"agent {agent_id!r} has made no model call {n}", what="call", value=n)

    async def diff_calls(self, agent: AgentRef, n: int, m: int | None = None) -> CallDiff:
        """What changed in what the model was sent from the agent's call ``m`` (default
        ``n - 1``) to its call ``n``, by agent-wide number: across runs and turns. Each side
        names its run, turn, epoch and outcome (``abandoned`` for a call a crash cut off).

        Raises:
            InvalidValue: ``n`` or ``m`` is not a whole number (names it).
            NotFound: no such agent, or no call ``n`` or ``m`` (names the calls that exist).
        """
        n = _count(n, "n")
        m = n - 1 if m is None else _count(m, "m")
        return await app.call_diff(self._store, _agent_id(agent), n, m)

    async def conform(self, run_id: str, epoch: int | None = None) -> list[ConformanceReport]:
        """Check one epoch (or every epoch) of a run against its receipt: each view's digests,
        and the request's bytes re-encoded by the agent's adapter (the one this store ran, or
        the built-in adapter of the receipt's encoder).

        Raises:
            NotFound: no such run or epoch.
        """
        if epoch is not None:
            epoch = _count(epoch, "epoch")
        runs = await self._store.runs(run_id=run_id)
        agent = self._agents.get(runs[0].agent_id) if runs else None

        def encoders(encoder: str, model: str) -> BodyEncoder | None:
            return agent.model if agent is not None else app.builtin_encoder(encoder, model)

        return await app.conform(StoredRun(self._store, run_id), epoch, encoders=encoders)

    async def folded(self, agent: AgentRef) -> list[FoldedSpan]:
        """The agent's folded spans, oldest first, each with its retained originals
        (``messages``; unset for a span folded with ``retain="discard"``)."""
        return list(await app.folded(self._store, await self._known(agent)))

    async def originals(self, agent: AgentRef, summary_fingerprint: str) -> list[Message]:
        """The original messages one fold replaced, byte-identical: kept with the conversation,
        or (``retain="discard"``) read back from the commit log of the run that folded them.

        Raises:
            NotFound: no such span, or its originals can be found nowhere.
        """
        agent_id = await self._known(agent)
        span = await app.fold(self._store, agent_id, summary_fingerprint)
        if span is None:
            raise NotFound(
                f"agent {agent_id!r} has no folded span {summary_fingerprint!r}",
                what="span",
                value=summary_fingerprint,
            )
        found = await app.originals(self._store, agent_id, span)
        if found is None:
            raise NotFound(
                f"the originals of {summary_fingerprint!r} were not kept and cannot be "
                "resolved from the commit log",
                what="span",
                value=summary_fingerprint,
            )
        return list(found.messages)

    async def recall(
        self,
        agent: AgentRef,
        query: str,
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
        limit: int = 10,
    ) -> list[RecallHit]:
        """The messages that left the agent's window (folded or dropped) matching ``query``'s
        words, best first, each with its source and when it was said, bounded by count and
        characters (docs/recall.md#search).

        Raises:
            InvalidValue: the query or a bound is refused, naming it.
            NotFound: no such agent.
        """
        agent_id = await self._known(agent)
        return await app.recall(
            self._store, agent_id, query, since_ms=since_ms, until_ms=until_ms, limit=limit
        )

    async def findings(
        self, agent: AgentRef, *, kind: str | None = None, turn: int | None = None
    ) -> list[dict[str, Any]]:
        """The agent's findings ledger rows in wire form, oldest first (``kind``: ``basis``,
        ``standing``, ``conflict``, or a time row kind)."""
        if turn is not None:
            turn = _count(turn, "turn")
        return await app.findings(self._store, await self._known(agent), kind=kind, turn=turn)
