"""Hearing of posts made through any process: ``LISTEN`` on the channel every inbox post and
every closed question notifies at its COMMIT (docs/host.md#a-message-reaches-its-host).

A notification sent while no connection listened is lost for good, so once a lost listening
connection is replaced, every agent is reported once: the host's workers then look for what
was posted meanwhile instead of waiting for their next poll
(docs/host.md#hosts-and-a-failing-store)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import anyio
import asyncpg

from afp_runtime._logging import get_logger
from afp_runtime.errors import StoreUnavailable
from afp_runtime.store.postgres._core import LOST, POSTS_CHANNEL, PostgresCore

log = get_logger()

# How long to wait before listening again after the connection was lost (posts made meanwhile
# are found by the hosts' polling, and by the wake-up of every agent once listening again).
_CHECK_S = 1.0


class Notices(PostgresCore):
    """``watch_posts`` over one pooled connection kept listening."""

    async def change_marker(self) -> tuple[int, int] | None:
        """None: the notices name posts and answers only, not an operator's resume or another
        host's claims, so hosts on Postgres keep looking at every agent each poll interval."""
        return None

    async def watch_posts(self, on_post: Callable[[str], None]) -> None:
        """Call ``on_post(agent_id)`` for every post or closed question any process commits,
        until cancelled; a lost connection is replaced, and once listening again every agent
        is reported once, since what was posted while none listened went unheard."""

        def heard(connection: Any, pid: int, channel: str, payload: str) -> None:
            on_post(payload)

        catch_up: Callable[[str], None] | None = None
        while True:
            try:
                await self._listen(heard, catch_up)
                log.warning("the connection listening for posts was lost; listening again")
            except (*LOST, asyncpg.PostgresError, StoreUnavailable) as exc:
                log.warning("listening for posts failed; trying again", error=str(exc))
            catch_up = on_post
            await anyio.sleep(_CHECK_S)

    async def _listen(
        self,
        heard: Callable[[Any, int, str, str], None],
        catch_up: Callable[[str], None] | None,
    ) -> None:
        """Listen on one pooled connection until it is lost (or the watch is cancelled); with
        ``catch_up``, report every agent once the LISTEN is in place."""
        closed = anyio.Event()
        async with self._connection() as conn:
            conn.add_termination_listener(lambda connection: closed.set())
            await conn.add_listener(POSTS_CHANNEL, heard)
            try:
                if catch_up is not None:
                    # After the LISTEN: a post from now on is heard, one before it is found.
                    agents = await self._fetch("SELECT agent_id FROM agents")
                    log.info("listening for posts again", agents=len(agents))
                    for (agent_id,) in agents:
                        catch_up(agent_id)
                await closed.wait()
            finally:
                with anyio.CancelScope(shield=True), contextlib.suppress(*LOST):
                    if not conn.is_closed():
                        await conn.remove_listener(POSTS_CHANNEL, heard)
