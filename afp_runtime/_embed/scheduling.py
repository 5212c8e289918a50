"""The schedule half of ``afp.Store`` (docs/python.md#schedules): list, set, remove, pause and
resume an agent's schedules, each one use case of ``afp_runtime.app``; and the delivery an
embedded store makes at ``work()``, on its own clock."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from afp_runtime import app
from afp_runtime._embed.reading import AgentRef, StoreReads, _agent_id
from afp_runtime.agents import Agent
from afp_runtime.app import IdFactory, ScheduleView
from afp_runtime.records import Clock
from afp_runtime.schedules import Schedule


class StoreSchedules(StoreReads):
    """What ``afp.Store`` does with schedules; ``_clock`` and ``_ids`` are the store's."""

    _clock: Clock
    _ids: IdFactory

    async def schedules(self, agent: AgentRef) -> list[ScheduleView]:
        """The agent's schedules by name, with their next and last due instants and source.

        Raises:
            NotFound: the database holds no such agent (the message names those it holds).
        """
        return await app.list_schedules(self._store, _agent_id(agent))

    async def set_schedule(
        self, agent: AgentRef, schedule: Schedule | Mapping[str, Any]
    ) -> ScheduleView:
        """Create or replace the agent's schedule of that name (source ``python``), anchored
        now: ``store.set_schedule(agent, afp.schedule("remind", "Call Ana", at="…"))``.

        Raises:
            InvalidValue: the schedule is wrong (the field named).
            NotFound: the database holds no such agent.
        """
        return await app.set_schedule(
            self._store,
            _agent_id(agent),
            schedule,
            source="python",
            now_ms=self._clock.now_ms(),
        )

    async def remove_schedule(self, agent: AgentRef, name: str) -> None:
        """Remove the agent's schedule.

        Raises:
            NotFound: no such agent or schedule (the message names the agent's schedules).
        """
        await app.remove_schedule(self._store, _agent_id(agent), name)

    async def pause_schedule(self, agent: AgentRef, name: str) -> ScheduleView:
        """Pause the schedule: nothing is delivered until it is resumed."""
        return await app.pause_schedule(
            self._store, _agent_id(agent), name, now_ms=self._clock.now_ms()
        )

    async def resume_schedule(self, agent: AgentRef, name: str) -> ScheduleView:
        """Resume the schedule from now; what came due while paused is not delivered."""
        return await app.resume_schedule(
            self._store, _agent_id(agent), name, now_ms=self._clock.now_ms()
        )

    async def _deliver_schedules(self, agent: Agent) -> None:
        """At ``work()``: the agent's declared schedules synced and its due ones delivered to
        its inbox, on this store's clock (docs/python.md#schedules)."""
        await app.deliver_schedules(
            self._store,
            agent.agent_id,
            agent.schedules,
            now_ms=self._clock.now_ms(),
            new_id=self._ids.message_id,
        )
