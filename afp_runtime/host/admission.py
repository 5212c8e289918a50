"""What enters a host (docs/host.md#running-a-host): posts, answers and abandoned questions,
committed before the call returns, and the operator's resume and dismiss of a held or stalled
turn. Each is refused while the host does not run or its store failed its check, and each wake
the agent's worker afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from afp_runtime.agents import abandon_question, answer_question
from afp_runtime.errors import LeaseLost, StoreUnavailable
from afp_runtime.host.leases import HostLease
from afp_runtime.host.lifecycle import Lifecycle
from afp_runtime.host.states import AgentNotHosted, HostStopping, StoreCheckFailed
from afp_runtime.host.store_state import StoreState
from afp_runtime.host.workers import HostedAgent
from afp_runtime.loop import IdFactory, post_message, resumable_turn
from afp_runtime.records import Clock, QuestionRow
from afp_runtime.store import Ack, Store, check_owner

__all__ = ["Admission"]


class Admission:
    """The doors into a host's agents: what ``Host.post`` and its siblings do.

    Args:
        store: the writer store.
        agents: the hosted agents by id.
        clock: the injected clock (timestamps).
        ids: the injected id factory (message ids).
        life: the host's lifecycle (its state, store check and reader).
        lease: the host lease (a resume needs the agent held).
        store_state: the store's fault as the host last met it.
        wake: wakes an agent's worker to read the store.
        deliver: hands an agent's worker a message posted here (``Workers.deliver``).
        changed_here: wakes an agent's worker after a question closed here.
    """

    def __init__(
        self,
        store: Store,
        agents: Mapping[str, HostedAgent],
        *,
        clock: Clock,
        ids: IdFactory,
        life: Lifecycle,
        lease: HostLease,
        store_state: StoreState,
        wake: Callable[[str], None],
        deliver: Callable[[str, str, int, str], None],
        changed_here: Callable[[str], None],
    ) -> None:
        self.store = store
        self._agents = agents
        self.clock = clock
        self.ids = ids
        self._life = life
        self._lease = lease
        self.store_state = store_state
        self.wake = wake
        self.deliver = deliver
        self.changed_here = changed_here

    @property
    def reader(self) -> Store:
        return self._life.reader

    @property
    def host_id(self) -> str:
        return self._lease.host_id

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Around a write asked through the host: its outcome tells the store's state."""
        try:
            yield
        except StoreUnavailable as exc:
            self.store_state.failed(exc)
            raise
        self.store_state.succeeded()

    def _admit(self, agent_id: str) -> HostedAgent:
        agent = self._agents.get(agent_id)
        if agent is None:
            raise AgentNotHosted(f"agent {agent_id!r} is not run by this host", agent_id=agent_id)
        if self._life.store_check == "damaged":
            raise StoreCheckFailed(
                f"{self.store.location} failed quick_check after an unclean stop "
                f"({'; '.join(self._life.store_problems[:5])}); the host admits nothing: run "
                "`afp doctor` and restore a backup"
            )
        if self._life.state != "running":
            raise HostStopping(f"the host is {self._life.state}; it admits nothing new")
        return agent

    async def post(
        self,
        agent_id: str,
        text: str,
        *,
        idempotency_key: str | None = None,
        sender: str | None = None,
        time: Mapping[str, Any] | None = None,
    ) -> Ack:
        """``Host.post``."""
        agent = self._admit(agent_id)
        checked = agent.definition.check_message_time(time)
        with self._writing():
            ack = await post_message(
                self.store,
                agent_id,
                text,
                clock=self.clock,
                ids=self.ids,
                idempotency_key=idempotency_key,
                sender=sender,
                shared=agent.definition.shared,
                time=checked,
                emitter=agent.driver.emitter,
            )
        if ack.duplicate:
            self.wake(agent_id)
        else:
            # Handed to the worker: it takes the message without reading the inbox.
            self.deliver(agent_id, ack.message_id, ack.position, text)
        return ack

    async def resume(
        self, agent_id: str, *, run_id: str | None = None, principal: str | None = None
    ) -> None:
        """``Host.resume``."""
        agent = self._admit(agent_id)
        await self._check_operator(agent, principal)
        if self._lease.status_override(agent_id) is not None:
            raise LeaseLost(
                f"host {self.host_id!r} does not hold agent {agent_id!r} now; resume it through "
                "the host that does",
                agent_id=agent_id,
            )
        resumable_turn(await self.reader.conversation_state(agent_id), agent_id, run_id)
        # The request is carried out by the worker after this returns: accepted during a write
        # fault, it would be acknowledged and not happen (until the store is back).
        fault = self.store_state.write
        if fault is not None:
            raise StoreUnavailable(
                f"the store cannot be written now ({fault.message}); the resume was not "
                "accepted, ask again once it is back",
                cause=fault.cause,
                agent_id=agent_id,
            )
        agent.resume_requested = True
        self.wake(agent_id)

    async def answer(
        self, agent_id: str, question_id: str, value: Any, *, sender: str | None = None
    ) -> QuestionRow | None:
        """``Host.answer``."""
        agent = self._admit(agent_id)
        with self._writing():
            closed = await answer_question(
                self.store,
                agent_id,
                question_id,
                value,
                now_ms=self.clock.now_ms(),
                by=sender,
                shared=agent.definition.shared,
            )
        if closed is not None:
            self.changed_here(agent_id)
        else:
            self.wake(agent_id)
        return closed

    async def abandon(
        self, agent_id: str, question_id: str, *, sender: str | None = None
    ) -> QuestionRow | None:
        """``Host.abandon``."""
        agent = self._admit(agent_id)
        with self._writing():
            closed = await abandon_question(
                self.store,
                agent_id,
                question_id,
                now_ms=self.clock.now_ms(),
                by=sender,
                shared=agent.definition.shared,
            )
        if closed is not None:
            self.changed_here(agent_id)
        else:
            self.wake(agent_id)
        return closed

    async def dismiss(
        self, agent_id: str, *, run_id: str | None = None, principal: str | None = None
    ) -> str:
        """``Host.dismiss``."""
        agent = self._admit(agent_id)
        await self._check_operator(agent, principal)
        async with agent.lock:
            with self._writing():
                message_id = await agent.driver.dismiss(run_id)
        self.wake(agent_id)
        return message_id

    async def _check_operator(self, agent: HostedAgent, principal: str | None) -> None:
        """The owner check of a resume or dismiss asked for by ``principal`` (None: the
        operator, who may act on every conversation). The owner is written once, so a read
        outside the act's transaction cannot go stale in the way that matters."""
        if principal is None or agent.definition.shared:
            return
        agent_id = agent.definition.agent_id
        check_owner(await self.reader.owner(agent_id), agent_id, principal)
