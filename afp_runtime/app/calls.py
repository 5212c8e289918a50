"""An agent's model call by its agent-wide number (docs/served.md,
docs/architecture.md#the-application-layer): which run made it, at which epoch, and what it was
sent."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from afp_runtime.served import ServedView, find_agent_call
from afp_runtime.store import RunRow, Store


class AgentCall(msgspec.Struct, frozen=True, kw_only=True):
    """Where an agent's call ``number`` sits, and what it was sent.

    Attributes:
        number: the call's number over the agent's whole life, from 1.
        run: the run that made it.
        epoch: the call's epoch within that run.
        view: what the model was sent.
    """

    number: int
    run: RunRow
    epoch: int
    view: ServedView


async def call_among(store: Store, runs: Sequence[RunRow], number: int) -> AgentCall | None:
    """Call ``number`` among ``runs`` (an agent's runs in start order, or a stretch of them),
    or None when none of them made it. Reads about log2 of the runs' logs."""
    if number < 1:
        return None
    found = await find_agent_call([run.run_id for run in runs], number, store.read_run)
    if found is None:
        return None
    index, epoch, view = found
    return AgentCall(number=number, run=runs[index], epoch=epoch, view=view)


async def agent_call(store: Store, agent_id: str, number: int) -> AgentCall | None:
    """The agent's call ``number`` over its whole life, or None when it made no such call."""
    return await call_among(store, await store.runs(agent_id), number)
