"""Closing a held turn ``dismissed`` (docs/host.md#stalled-and-held-turns) for a door without a
host: ``afp dismiss`` writes it, a running host's worker notices. A host dismisses through its
driver, under the agent's lock, by the same ``dismiss_turn``.

An operator resume needs the worker of a host that holds the agent (the request lives in its
memory), so a door asks the host (``Host.resume``, the API's ``POST /v1/runs/{id}/resume``);
the host and a driver check the turn with one ``resumable_turn``.
"""

from __future__ import annotations

from afp_runtime.loop import Emitter, dismiss_turn
from afp_runtime.records import Clock
from afp_runtime.store import Store


async def dismiss(
    store: Store,
    agent_id: str,
    *,
    clock: Clock,
    run_id: str | None = None,
    emitter: Emitter | None = None,
) -> str:
    """Close the agent's held turn ``dismissed`` so its queue moves on; returns the dismissed
    message's id.

    Raises:
        RunNotHeld: the agent has no held turn, or ``run_id`` is not one of its runs.
    """
    return await dismiss_turn(store, agent_id, run_id=run_id, clock=clock, emitter=emitter)
