"""What every handler needs: the host, its reader store, and lookups that 404 in one place.

Every read goes through the host's read-only store; served reads through its run-log reader
(``Store.read_run``), which calls served code off the event loop with a synchronous ``RunLog``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from litestar.datastructures import State

from afp_runtime.api._params import AGENT_ID, RUN_ID, path_param
from afp_runtime.api._problems import ApiError, not_found
from afp_runtime.app import RunSource
from afp_runtime.errors import NotFound
from afp_runtime.host import Host
from afp_runtime.records import RunLog
from afp_runtime.store import RunRow, Store

T = TypeVar("T")


class ApiContext:
    """Shared state of one app.

    Args:
        host: the running host.
        keepalive_s: seconds between ``: keep-alive`` comments on idle event streams.
        max_streams: open event streams allowed at once.
    """

    def __init__(self, host: Host, *, keepalive_s: float, max_streams: int) -> None:
        self.host = host
        self.keepalive_s = keepalive_s
        self.max_streams = max_streams
        self.open_streams = 0

    @property
    def reader(self) -> Store:
        """The host's read-only store connection."""
        return self.host.reader

    async def agent(self, agent_id: str) -> str:
        """A validated id of an agent that exists (in the store or on this host); else 404."""
        path_param("agentId", agent_id, AGENT_ID)
        if not self.host.hosts(agent_id) and await self.reader.conversation_state(agent_id) is None:
            raise not_found(
                "agent-not-found",
                f"there is no agent {agent_id!r}",
                field="agentId",
                value=agent_id,
            )
        return agent_id

    async def run(self, run_id: str) -> RunRow:
        """The run with a validated id; else 404 ``run-not-found``."""
        path_param("runId", run_id, RUN_ID)
        runs = await self.reader.runs(run_id=run_id)
        if not runs:
            raise _run_not_found(run_id)
        return runs[0]

    async def with_log(self, run_id: str, read: Callable[[RunLog], T]) -> T:
        """Run ``read`` over the run's log off the event loop (404 when the run is unknown)."""
        try:
            return await self.reader.read_run(run_id, read)
        except NotFound as exc:
            if exc.context.get("what") != "run":
                raise  # ``read`` found no epoch (or the like): the caller words it
            raise _run_not_found(run_id) from None

    def log_of(self, run_id: str) -> RunSource:
        """The run's log as the use cases of ``afp_runtime.app`` read it (404 when the run is
        unknown)."""
        return _HostRun(self, run_id)


class _HostRun:
    """A run of the host's reader store, read through ``ApiContext.with_log``."""

    def __init__(self, ctx: ApiContext, run_id: str) -> None:
        self._ctx = ctx
        self._run_id = run_id

    @property
    def run_id(self) -> str:
        return self._run_id

    async def read(self, work: Callable[[RunLog], T]) -> T:
        return await self._ctx.with_log(self._run_id, work)


STATE_KEY = "afp"


def context_of(state: State) -> ApiContext:
    """The context ``create_app`` put in the app's state (handlers take ``state: State``)."""
    found = state[STATE_KEY]
    assert isinstance(found, ApiContext)
    return found


def _run_not_found(run_id: str) -> ApiError:
    return not_found("run-not-found", f"there is no run {run_id!r}", field="runId", value=run_id)
