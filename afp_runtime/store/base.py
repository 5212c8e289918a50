"""The store port (docs/storage.md#the-store-port): what the loop, host, API, CLI and
embedded runtime ask of durable state, written against no backend.

``CheckpointStore`` is what a run needs; ``LeaseStore`` and ``HealthStore`` are what a host adds
(leases, fencing, health, the clean-shutdown marker); ``MovingStore`` is agents leaving and
entering a store whole (``afp copy``); ``RecallStore`` is the search over what left agents'
windows; ``Store`` is all of it plus the reads of the API and CLI,
and is what a backend implements (``afp_runtime.store.open_store`` opens one;
``afp_runtime.testing.store_conformance`` checks one).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from afp_runtime.messages import Message
from afp_runtime.records import (
    ConversationState,
    LedgerRow,
    ListRef,
    QuestionRow,
    RunLog,
    StoredFoldedSpan,
    Txn,
)
from afp_runtime.store.dump import AgentDump, CopyCounts
from afp_runtime.store.recall_values import RecallHit
from afp_runtime.store.values import (
    Ack,
    AgentClaim,
    AgentRow,
    DefinitionSummary,
    InboxRow,
    JournalEntry,
    LeaseRenewal,
    LoadedConversation,
    RunRow,
    ScheduleDelivered,
    ScheduleEntry,
    ScheduleRow,
    StoredBundle,
)

T = TypeVar("T")


class CheckpointStore(Protocol):
    """Durable state of agents: commit log, conversation checkpoints, inbox, tool journal."""

    async def ensure_agent(
        self, agent_id: str, *, now_ms: int, definition: DefinitionSummary | None = None
    ) -> None:
        """Create the agent with an empty conversation if it does not exist; record
        ``definition`` as its summary when given (None leaves the stored one as it is)."""

    async def conversation_state(self, agent_id: str) -> ConversationState | None:
        """The stored checkpoint without messages."""

    async def load_conversation(self, agent_id: str) -> LoadedConversation:
        """The checkpoint and its resolved history."""

    async def resolve(
        self, agent_id: str, ref: ListRef
    ) -> tuple[tuple[Message, ...], tuple[str, ...]]:
        """Messages and fingerprints of a list reference."""

    async def fingerprints(self, agent_id: str, ref: ListRef) -> tuple[str, ...]:
        """Fingerprints of a list reference's items, without bodies."""

    async def commit(self, txn: Txn) -> None:
        """Write one transaction atomically."""

    async def post(
        self,
        agent_id: str,
        text: str,
        *,
        message_id: str,
        now_ms: int,
        idempotency_key: str | None = None,
        sender: str | None = None,
        shared: bool = False,
        time: dict[str, Any] | None = None,
    ) -> Ack:
        """Accept a person's message durably (the owner check included)."""

    async def questions(
        self,
        agent_id: str,
        *,
        status: str | None = None,
        question_ids: Sequence[str] | None = None,
    ) -> list[QuestionRow]:
        """An agent's check-in questions in asking order."""

    async def close_question(
        self,
        question_id: str,
        *,
        status: str,
        now_ms: int,
        answer: Any = None,
        by: str | None = None,
        shared: bool = False,
        repeat: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> QuestionRow | None:
        """Close an open question durably."""

    async def reask_question(
        self,
        question_id: str,
        *,
        repeat: int,
        detail: dict[str, Any],
        by: str | None = None,
        shared: bool = False,
    ) -> QuestionRow | None:
        """Keep a question open after a refused answer."""

    async def journal(self, agent_id: str, message_id: str) -> dict[str, JournalEntry]:
        """The tool journal of one turn."""

    async def inbox(self, agent_id: str, *, status: str | None = None) -> list[InboxRow]:
        """An agent's inbox messages in position order."""

    async def inbox_message(self, message_id: str) -> InboxRow | None:
        """One inbox message by id."""

    async def runs(self, agent_id: str | None = None, *, run_id: str | None = None) -> list[RunRow]:
        """Runs in start order: all, one agent's, or one by id."""

    async def last_bundle(self, run_id: str) -> StoredBundle | None:
        """The last committed bundle of a run."""

    async def ledger(
        self, agent_id: str, *, kind: str | None = None, turn: int | None = None
    ) -> list[LedgerRow]:
        """The conversation's ledger rows, typed, oldest first
        (docs/storage.md#typed-ledger-rows)."""

    async def folded_spans(
        self, agent_id: str, *, summary_fingerprint: str | None = None
    ) -> list[StoredFoldedSpan]:
        """The conversation's folded spans, oldest first."""

    async def aclose(self) -> None:
        """Close the store."""


class LeaseStore(Protocol):
    """Host leases, agent claims and commit fencing (docs/host.md#ownership-and-leases).

    Each host holds one lease row ``(host_id, lease_epoch, expiry)``; an agent is claimed under
    an epoch, and a claim is live while its host's row still carries that epoch unexpired.
    """

    @property
    def fence(self) -> tuple[str, int] | None:
        """The ``(host_id, lease_epoch)`` every commit is fenced by, or None."""

    def fence_with(self, host_id: str | None, epoch: int | None = None) -> None:
        """Fence every later commit by this claim (``LeaseLost`` once it no longer holds, the
        whole transaction refused); ``fence_with(None)`` removes the fence."""

    async def acquire_lease(
        self, host_id: str, *, now_ms: int, ttl_ms: int, only_if_expired: bool = False
    ) -> int | None:
        """Take the host's row with a new epoch (at once, even live); with ``only_if_expired``
        a live row is left alone (None)."""

    async def renew_lease(
        self, host_id: str, epoch: int, *, now_ms: int, ttl_ms: int, take_over: bool = True
    ) -> LeaseRenewal:
        """Extend the lease while it still carries ``epoch``, and take over expired leases of
        other hosts that claims rest on."""

    async def claim_agents(
        self, agent_ids: Sequence[str], host_id: str, epoch: int, *, now_ms: int
    ) -> set[str]:
        """Claim what may be claimed of ``agent_ids`` at once; the ids now claimed."""

    async def claim_agent(self, agent_id: str, host_id: str, epoch: int, *, now_ms: int) -> bool:
        """Claim one agent; False when another host's live lease holds it."""

    async def release_lease(self, host_id: str, epoch: int) -> bool:
        """Expire the lease and drop its claims; False when the epoch moved on already."""

    async def agent_claims(
        self, agent_ids: Sequence[str] | None = None, *, now_ms: int
    ) -> list[AgentClaim]:
        """The claim state of the named agents (every agent when None), by agent id."""

    async def agent_claim(self, agent_id: str, *, now_ms: int) -> AgentClaim | None:
        """The claim state of one agent, or None when the store does not know it."""

    async def live_hosts(self, *, now_ms: int) -> list[str]:
        """The ids of the hosts whose lease is unexpired, sorted."""

    async def release_agents(self, agent_ids: Sequence[str], host_id: str, epoch: int) -> set[str]:
        """Drop this host's claims on ``agent_ids`` (so another host may claim them at once);
        the ids released (those it held under ``epoch``)."""


class HealthStore(Protocol):
    """Health checks and the clean-shutdown marker (docs/host.md#start-up)."""

    async def clean_shutdown(self) -> bool:
        """Whether the last host on this store recorded a clean shutdown."""

    async def begin_serving(self) -> None:
        """Clear the clean-shutdown marker: a host is about to write."""

    async def mark_clean_shutdown(self) -> None:
        """Record a clean shutdown."""

    async def checkpoint(self) -> str | None:
        """Fold the write-ahead log into the database where the backend keeps one (SQLite's
        WAL); None when done or nothing to do, else why it could not be."""

    async def quick_check(self) -> list[str]:
        """A fast health check: ``['ok']`` when healthy, else the problems found."""

    async def integrity_check(self) -> list[str]:
        """A full health check: ``['ok']`` when healthy, else the problems found."""

    async def body_check(self) -> list[str]:
        """Fingerprints whose stored body no longer hashes to them."""


class MovingStore(Protocol):
    """Agents leaving and entering a store with their whole history
    (docs/storage.md#moving-between-stores; ``afp_runtime.store.copy_agents`` puts the two
    together)."""

    async def export_agent(self, agent_id: str) -> AgentDump:
        """Every row of one agent, read in one snapshot, every stored value checked (each body
        against its fingerprint included).

        Raises:
            NotFound: the store holds no such agent.
            StoreDamaged: a row does not read back; the message names it.
        """

    async def import_agents(self, dumps: AsyncIterable[AgentDump]) -> CopyCounts:
        """Write every dump, as it arrives, in one transaction: all of them, or nothing when
        anything fails (an exception from ``dumps`` included). Copied agents are unclaimed.

        Raises:
            CopyRefused: the store holds one of the agents, or one of their run, inbox message
                or question ids, already.
        """


class ScheduleStore(Protocol):
    """An agent's durable schedules and their delivery (docs/host.md#schedules): the store
    keeps each schedule's definition as given and the marks of its delivery; what is due when
    is worked out above it (``afp_runtime.schedules``)."""

    async def schedules(self, agent_id: str) -> list[ScheduleRow]:
        """The agent's schedules, by name (none for an agent the store does not know)."""

    async def put_schedule(
        self, agent_id: str, entry: ScheduleEntry, *, now_ms: int
    ) -> ScheduleRow:
        """Create the schedule, or replace the one of that name (its ``created_at_ms`` and
        ``delivered`` kept, its revision raised), and return the row.

        Raises:
            StoreError: the store holds no such agent.
        """

    async def remove_schedule(self, agent_id: str, name: str) -> bool:
        """Remove the schedule; False when there was none of that name."""

    async def due_schedules(self, agent_ids: Sequence[str], *, now_ms: int) -> list[ScheduleRow]:
        """The unpaused schedules of ``agent_ids`` whose ``next_due_ms <= now_ms``, earliest
        first: one indexed read."""

    async def next_schedule_due(self, agent_ids: Sequence[str]) -> int | None:
        """The earliest ``next_due_ms`` of the unpaused schedules of ``agent_ids``, or None."""

    async def deliver_schedule(
        self,
        agent_id: str,
        name: str,
        *,
        revision: int,
        due: Sequence[tuple[int, str]],
        text: str,
        through_ms: int,
        next_due_ms: int | None,
        now_ms: int,
    ) -> ScheduleDelivered | None:
        """In ONE transaction: post one inbox message per ``(due_ms, message_id)`` of ``due``
        (sender ``schedule:NAME``, idempotency key ``schedule:NAME@<due_ms>``, the agent's next
        positions; no owner check, the schedule being the agent's own) and move the row's
        ``last_due_ms`` to ``through_ms`` and ``next_due_ms`` on; only while the row still has
        ``revision`` (a compare-and-set). None, with nothing written, when the row moved on
        (another host delivered it, or it was changed or removed). A fenced store checks the
        fence first (``LeaseLost``, nothing written).
        """


class RecallStore(Protocol):
    """The recall index: every message a window visit took out of an agent's window, written
    in that visit's transaction, and its search (docs/recall.md)."""

    async def recall(
        self,
        agent_id: str,
        query: str,
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
        limit: int = 10,
        max_chars: int | None = None,
    ) -> list[RecallHit]:
        """The indexed messages of ``agent_id`` matching ``query``'s words, best first (rank,
        then the newest): all of them, or any of them when none matches all; said at or after
        ``since_ms`` and before ``until_ms``; at most ``limit``; each content cut to
        ``max_chars`` (``content_cut`` says how much). None found for an agent the store does
        not know.

        Raises:
            InvalidValue: the query or a bound is refused (docs/recall.md#queries), naming it.
        """

    async def reindex_recall(self, agent_id: str | None = None) -> int:
        """Add to the index what the commit log shows left the window and the index lacks (a
        store made before the index, say), for one agent or all; idempotent. Returns how many
        entries were added (docs/recall.md#rebuilding)."""


class Store(
    CheckpointStore, LeaseStore, HealthStore, MovingStore, ScheduleStore, RecallStore, Protocol
):
    """The whole port: what one backend implements, and what every door opens."""

    @property
    def location(self) -> str:
        """Where the store lives, as messages name it (a file path, a URL without secrets)."""

    @property
    def schema_version(self) -> int:
        """The schema version this build writes."""

    async def open_reader(self) -> Store:
        """A read-only store on the same storage (the host's readers use one)."""

    async def change_marker(self) -> tuple[int, int] | None:
        """A value that changes whenever something may have given an agent work its host was
        not told of: any commit by another connection (another process, or another store object
        on the same storage), and a post or a closed question through this store object; the
        loop's own commits leave it as it is. None when the backend cannot tell. A host looks at
        it once per poll interval instead of at every idle agent
        (docs/host.md#a-message-reaches-its-host)."""

    async def watch_posts(self, on_post: Callable[[str], None]) -> None:
        """Call ``on_post(agent_id)`` whenever any process posts to an agent's inbox, until
        cancelled (docs/host.md#a-message-reaches-its-host). A backend that cannot tell waits
        for ever: hosts then find messages by polling. One that stopped hearing for a while
        (a lost connection) calls it for every agent once it hears again."""

    async def agents(self) -> list[AgentRow]:
        """Every agent with a summary of its conversation, by id."""

    async def bundles(self, run_id: str, *, from_seq: int = 0) -> list[StoredBundle]:
        """A run's commit log from ``from_seq``, in commit order."""

    async def question(self, question_id: str) -> QuestionRow | None:
        """One question by id, or None."""

    async def owner(self, agent_id: str) -> str | None:
        """The conversation's owner, None until a message names one."""

    async def read_run(self, run_id: str, read: Callable[[RunLog], T]) -> T:
        """``read`` over the run's log (docs/served.md#the-runlog-interface), called off the
        event loop with a synchronous ``RunLog`` that is valid only during the call.

        Raises:
            NotFound: there is no such run.
        """
