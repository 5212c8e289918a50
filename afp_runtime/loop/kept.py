"""Finished tool results the store could not take, kept in memory until it can
(docs/loop.md#results-kept-through-a-store-outage).

Under ``sync`` a call's ``finished`` journal row waits for the next commit. When that commit
fails because the store is away (``StoreUnavailable``), the call still ran: the ``Committer``
hands its ``finished`` rows here instead of dropping them, and the recovery's ``settle`` uses a
kept result for a call the journal shows ``started`` only (committing its ``finished`` row
first) rather than answering it ``interrupted``.

Readings settled here:

* One instance serves every agent of a process (the host hands it to each driver), so the memory
  bound is the process's. A row is keyed by agent, turn (inbox message) and call id.
* The bounds are checked whenever a row is kept or asked for, and at the start of every pass of
  the agent: a row older than ``max_age_s`` (on the injected clock), or the oldest rows while the
  total outcome bytes exceed ``max_bytes``, are dropped and logged ``kept tool result lost``
  with the call id. A row is never renewed: keeping it again (a second outage during the
  recovery that commits it) keeps the first time.
* Memory is the only place a kept row lives: a process that dies, or a host that loses the agent
  to another, loses it, and the call is settled as today (``interrupted`` when not idempotent).
"""

from __future__ import annotations

from collections.abc import Iterable

from afp_runtime._logging import get_logger
from afp_runtime.records import Clock, JournalRow

log = get_logger()

# How long, and how many outcome bytes of every agent together, results are kept by default.
DEFAULT_MAX_AGE_S = 600.0
DEFAULT_MAX_BYTES = 32 * 1024 * 1024

_Key = tuple[str, str, str]


class KeptResults:
    """``finished`` journal rows whose commit failed with the store away, bounded in age and
    bytes.

    Args:
        clock: the injected clock (a row's age).
        max_age_s: how long a row is kept before it is dropped as lost.
        max_bytes: the outcome bytes kept at most; past it the oldest rows are dropped as lost.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.clock = clock
        self.max_age_ms = max_age_s * 1000
        self.max_bytes = max_bytes
        # Insertion order is age order: a row is never kept again under a newer time.
        self._rows: dict[_Key, tuple[int, JournalRow]] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._rows)

    def keep(self, rows: Iterable[JournalRow]) -> None:
        """Keep the ``finished`` rows among ``rows`` (those with an outcome)."""
        now = self.clock.now_ms()
        for row in rows:
            if row.state != "finished" or row.outcome is None:
                continue
            key = (row.agent_id, row.message_id, row.tool_call_id)
            if key in self._rows:
                continue
            self._rows[key] = (now, row)
            self._bytes += len(row.outcome)
            log.warning(
                "tool result kept until the store is back",
                agent_id=row.agent_id,
                message_id=row.message_id,
                tool_call_id=row.tool_call_id,
                outcome_bytes=len(row.outcome),
            )
        self.expire()

    def for_turn(self, agent_id: str, message_id: str) -> dict[str, JournalRow]:
        """The kept rows of one turn, by call id (expired ones dropped first)."""
        self.expire()
        return {
            key[2]: row
            for key, (_, row) in self._rows.items()
            if key[0] == agent_id and key[1] == message_id
        }

    def committed(self, agent_id: str, message_id: str, call_ids: Iterable[str]) -> None:
        """Forget rows the store now holds (or whose call the journal already settled)."""
        for call_id in call_ids:
            self._pop((agent_id, message_id, call_id))

    def keep_only_turn(self, agent_id: str, message_id: str | None) -> None:
        """Drop, as lost, the agent's rows of any turn but ``message_id`` (its open turn): the
        turn went on without them (another host settled it, or it was dismissed)."""
        for key in [k for k in self._rows if k[0] == agent_id and k[1] != message_id]:
            self._lost(key, "its turn went on without it")
        self.expire()

    def expire(self) -> None:
        """Drop, as lost, rows past the age bound, then the oldest while past the byte bound."""
        oldest_kept = self.clock.now_ms() - self.max_age_ms
        for key, (kept_at, _) in list(self._rows.items()):
            if kept_at < oldest_kept:
                self._lost(key, "kept longer than the bound")
        while self._bytes > self.max_bytes and self._rows:
            self._lost(next(iter(self._rows)), "past the memory bound")

    def _pop(self, key: _Key) -> JournalRow | None:
        found = self._rows.pop(key, None)
        if found is None:
            return None
        self._bytes -= len(found[1].outcome or b"")
        return found[1]

    def _lost(self, key: _Key, reason: str) -> None:
        row = self._pop(key)
        if row is None:
            return
        log.error(
            "kept tool result lost",
            agent_id=row.agent_id,
            message_id=row.message_id,
            tool_call_id=row.tool_call_id,
            reason=reason,
        )
