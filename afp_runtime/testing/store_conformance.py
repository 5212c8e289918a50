"""The store conformance suite: the ``Store`` port's behaviour written once, run against every
backend (docs/storage.md#the-conformance-suite).

Each ``test_…`` coroutine states one contract in its docstring and takes ``store`` (an open
store) and, where it needs more than the port, ``backend`` (a ``Backend``: more stores on the
same storage, close-and-reopen, counting stored bodies). Every contract uses fresh agent, run and
host ids, so backends may share one storage between contracts.

A backend declares the optional ``Capability`` flags it has; a contract needing one it lacks is
skipped (``missing_capabilities``). ``run_contract`` runs one contract on a backend with no test
framework at all; ``tests/store/test_conformance.py`` shows the pytest wiring for SQLite. The
module needs neither pytest nor anything under ``tests/``.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

import anyio
import anyio.lowlevel
import msgspec

from afp_runtime.errors import (
    IdempotencyConflict,
    InvalidValue,
    LeaseLost,
    NotFound,
    StoreDamaged,
    StoreError,
)
from afp_runtime.messages import (
    Message,
    ToolCall,
    Usage,
    assistant,
    fingerprint,
    tool_result,
    user,
)
from afp_runtime.records import (
    UNKNOWN,
    CommitBundle,
    ConversationState,
    InboxUpdate,
    Item,
    JournalRow,
    ListRef,
    OpenTurn,
    RunEnd,
    RunLog,
    RunStart,
    Txn,
    Write,
    runtime_stage_id,
)
from afp_runtime.store import AgentClaim, Store

E = TypeVar("E", bound=BaseException)

# -- what a backend provides ---------------------------------------------------------------


class Capability(enum.Enum):
    """Optional features a backend declares; contracts needing one are skipped without it."""

    REOPEN = "reopen"
    """The store can be closed and opened again on the same storage."""

    COUNT_BODIES = "count-bodies"
    """The backend can count the message bodies it stores."""


class Backend(Protocol):
    """A store backend under test: opens stores on one storage and inspects it."""

    name: str
    capabilities: frozenset[Capability]

    async def open(self) -> Store:
        """A new open writer store on this backend's storage; several may be open at once
        (the lease contracts use two as two host processes)."""

    async def reopen(self, store: Store) -> Store:
        """Close ``store`` and open a fresh one on the same storage (``REOPEN``)."""

    async def body_count(self, store: Store) -> int:
        """How many message bodies the storage holds (``COUNT_BODIES``)."""

    async def aclose(self) -> None:
        """Close every store this backend opened and still holds open."""


Contract = Callable[..., Awaitable[None]]

_REQUIRED: dict[Contract, frozenset[Capability]] = {}


def requires(*capabilities: Capability) -> Callable[[Contract], Contract]:
    """Mark a contract as needing optional backend capabilities."""

    def mark(contract: Contract) -> Contract:
        _REQUIRED[contract] = frozenset(capabilities)
        return contract

    return mark


def missing_capabilities(contract: Contract, backend: Backend) -> frozenset[Capability]:
    """What ``contract`` needs (nothing unless marked with ``requires``) that ``backend`` does
    not declare (run it only when empty)."""
    return _REQUIRED.get(contract, frozenset()) - backend.capabilities


async def run_contract(contract: Contract, backend: Backend) -> None:
    """Run one contract on a store the backend opens, passing ``backend`` when it asks for it;
    an ``AssertionError`` (or any other exception) is a failure. Closing is the caller's."""
    store = await backend.open()
    wants = inspect.signature(contract).parameters
    await contract(store, backend) if "backend" in wants else await contract(store)


@contextmanager
def raises(kind: type[E], match: str = "") -> Iterator[list[E]]:
    """Assert that the block raises ``kind`` (with ``match`` in its text); the exception is
    left in the yielded list."""
    caught: list[E] = []
    try:
        yield caught
    except kind as exc:
        assert match in str(exc), f"{str(exc)!r} does not name {match!r}"
        caught.append(exc)
    else:
        raise AssertionError(f"{kind.__name__} was not raised")


# -- helpers ----------------------------------------------------------------------------------

T0 = 1_700_000_000_000


def fresh(prefix: str) -> str:
    """A new id nobody else in the storage uses."""
    return f"{prefix}-{uuid.uuid4().hex}"


async def new_agent(store: Store) -> str:
    """A fresh agent with its empty conversation."""
    agent_id = fresh("agent")
    await store.ensure_agent(agent_id, now_ms=T0)
    return agent_id


def items_at(start: int, messages: Sequence[Message]) -> list[Item]:
    """Items for ``messages`` at consecutive positions from ``start``."""
    return [
        Item(pos=start + offset, fingerprint=fingerprint(message), message=message)
        for offset, message in enumerate(messages)
    ]


def run_start(agent_id: str, run_id: str, *, turn: int = 1, at: int = T0) -> RunStart:
    """The start of an initial run answering a fresh inbox message id."""
    return RunStart(
        run_id=run_id,
        agent_id=agent_id,
        turn=turn,
        kind="initial",
        started_at_ms=at,
        message_id=fresh("msg"),
    )


def bundle(run_id: str, seq: int, stage: str, *writes: Write, iteration: int = 0) -> CommitBundle:
    """A bundle of ``writes`` at ``seq``, committed at a time derived from ``seq``."""
    return CommitBundle(
        run_id=run_id,
        seq=seq,
        stage=stage,
        runtime_stage_id=runtime_stage_id(stage, seq),
        iteration=iteration,
        writes=writes,
        committed_at_ms=T0 + seq,
    )


def state(
    agent_id: str,
    *,
    turn: int,
    ranges: tuple[tuple[int, int], ...],
    next_pos: int,
    **fields: Any,
) -> ConversationState:
    """A checkpoint whose history is the given item ranges."""
    return ConversationState(
        agent_id=agent_id,
        turn=turn,
        history=ListRef(ranges=ranges),
        next_pos=next_pos,
        checkpointed_at_ms=T0 + turn,
        **fields,
    )


def plain(writes: Sequence[Write]) -> list[dict[str, Any]]:
    """Writes as plain builtins (lists, dicts), the form ``StoredBundle.writes`` carries."""
    return msgspec.json.decode(msgspec.json.encode(writes), type=list[dict[str, Any]])


def unique_exchange(tag: str) -> list[Message]:
    """Four messages of one turn, each with content nobody else stores."""
    call = ToolCall(id=fresh("call"), name="lookup", args={"q": tag, "n": 2})
    return [
        user(f"question {tag}"),
        assistant("", tool_calls=(call,)),
        tool_result(call.id, "lookup", f"result {tag}"),
        assistant(f"answer {tag}"),
    ]


# -- contracts: agents and conversations ----------------------------------------------------


async def test_ensure_agent_creates_empty_conversation(store: Store) -> None:
    """ensure_agent creates an agent at turn 0 with no history; a second call changes nothing."""
    agent_id = fresh("agent")
    assert await store.conversation_state(agent_id) is None

    await store.ensure_agent(agent_id, now_ms=T0)
    await store.ensure_agent(agent_id, now_ms=T0 + 5_000)

    loaded = await store.load_conversation(agent_id)
    assert loaded.state.agent_id == agent_id
    assert loaded.state.turn == 0
    assert loaded.state.history == ListRef()
    assert loaded.state.open_turn is None
    assert loaded.state.checkpointed_at_ms == T0
    assert loaded.history == ()
    assert loaded.fingerprints == ()
    rows = [row for row in await store.agents() if row.agent_id == agent_id]
    assert len(rows) == 1
    assert (rows[0].created_at_ms, rows[0].turn, rows[0].messages) == (T0, 0, 0)


@requires(Capability.REOPEN)
async def test_committed_txn_survives_reopen(store: Store, backend: Backend) -> None:
    """A committed txn's history, fingerprints and bundles read back the same after reopening."""
    agent_id = await new_agent(store)
    run_id = fresh("run")
    messages = unique_exchange(run_id)
    history = ListRef(ranges=((0, len(messages)),))
    bundles = [
        bundle(run_id, 0, "seed", Write(key="history", verb="set", value=ListRef())),
        bundle(run_id, 1, "settle"),
        bundle(
            run_id,
            2,
            "final",
            Write(key="history", verb="append", value=history),
            Write(key="answer", verb="set", value={"text": f"answer {run_id}", "n": [1, 2]}),
            Write(key="scratch", verb="delete"),
            iteration=1,
        ),
    ]
    checkpoint = state(
        agent_id,
        turn=1,
        ranges=history.ranges,
        next_pos=len(messages),
        model_calls=2,
        last_run_id=run_id,
    )
    await store.commit(
        Txn(
            agent_id=agent_id,
            run_start=run_start(agent_id, run_id),
            bundles=bundles,
            items=items_at(0, messages),
            conversation=checkpoint,
        )
    )

    store = await backend.reopen(store)

    loaded = await store.load_conversation(agent_id)
    assert loaded.state == checkpoint
    assert loaded.history == tuple(messages)
    assert loaded.fingerprints == tuple(fingerprint(m) for m in messages)
    stored = await store.bundles(run_id)
    assert [b.seq for b in stored] == [0, 1, 2]
    assert [(b.stage, b.runtime_stage_id, b.iteration) for b in stored] == [
        (b.stage, b.runtime_stage_id, b.iteration) for b in bundles
    ]
    assert [b.committed_at_ms for b in stored] == [b.committed_at_ms for b in bundles]
    assert [b.writes for b in stored] == [plain(b.writes) for b in bundles]
    assert [b.seq for b in await store.bundles(run_id, from_seq=1)] == [1, 2]


async def test_duplicate_bundle_fails_and_writes_nothing(store: Store) -> None:
    """A bundle committed twice raises StoreError and none of that second txn is written."""
    agent_id = await new_agent(store)
    run_id = fresh("run")
    first = [user(f"hello {run_id}"), assistant(f"hi {run_id}")]
    checkpoint = state(agent_id, turn=1, ranges=((0, 2),), next_pos=2)
    original = bundle(run_id, 0, "seed", Write(key="history", verb="set", value=ListRef()))
    await store.commit(
        Txn(
            agent_id=agent_id,
            run_start=run_start(agent_id, run_id),
            bundles=[original],
            items=items_at(0, first),
            conversation=checkpoint,
        )
    )

    later = user(f"later {run_id}")
    failing = Txn(
        agent_id=agent_id,
        items=items_at(2, [later]),
        bundles=[
            bundle(run_id, 1, "settle"),
            bundle(run_id, 0, "window", Write(key="x", verb="set", value=1)),
        ],
        conversation=state(agent_id, turn=2, ranges=((0, 3),), next_pos=3),
        journal=[
            JournalRow(
                agent_id=agent_id,
                message_id="m-2",
                tool_call_id="c1",
                state="started",
                run_id=run_id,
            )
        ],
    )
    with raises(StoreError):
        await store.commit(failing)

    loaded = await store.load_conversation(agent_id)
    assert loaded.state == checkpoint
    assert loaded.history == tuple(first)
    stored = await store.bundles(run_id)
    assert [(b.seq, b.stage) for b in stored] == [(0, "seed")]
    assert stored[0].writes == plain(original.writes)
    assert await store.journal(agent_id, "m-2") == {}
    # Position 2 is still free: the failed txn's item was rolled back with the rest.
    await store.commit(Txn(agent_id=agent_id, items=items_at(2, [later])))
    messages, _ = await store.resolve(agent_id, ListRef(ranges=((0, 3),)))
    assert messages == (*first, later)


async def test_failed_run_start_leaves_no_run(store: Store) -> None:
    """A failed txn that started a run leaves no run: its bundles are refused, none inherited."""
    agent_id = await new_agent(store)
    await store.commit(Txn(agent_id=agent_id, items=items_at(0, [user(f"taken {agent_id}")])))
    doomed = fresh("run")
    with raises(StoreError):
        await store.commit(
            Txn(
                agent_id=agent_id,
                run_start=run_start(agent_id, doomed),
                bundles=[bundle(doomed, 0, "seed")],
                items=items_at(0, [user(f"collides {agent_id}")]),
            )
        )

    assert await store.runs(run_id=doomed) == []
    with raises(StoreError):
        await store.commit(Txn(agent_id=agent_id, bundles=[bundle(doomed, 0, "seed")]))
    later = fresh("run")
    await store.commit(Txn(agent_id=agent_id, run_start=run_start(agent_id, later)))
    assert await store.bundles(later) == []
    assert [r.bundles for r in await store.runs(run_id=later)] == [0]


# -- contracts: bodies, markers, list references ---------------------------------------------


@requires(Capability.COUNT_BODIES)
async def test_bodies_are_stored_once(store: Store, backend: Backend) -> None:
    """Two items holding the same message share one stored body and both resolve to it."""
    agent_id = await new_agent(store)
    message = user(f"say it twice {fresh('body')}")
    before = await backend.body_count(store)

    await store.commit(Txn(agent_id=agent_id, items=items_at(0, [message, message])))

    assert await backend.body_count(store) == before + 1
    messages, fps = await store.resolve(agent_id, ListRef(ranges=((0, 2),)))
    assert messages == (message, message)
    assert fps == (fingerprint(message),) * 2


@requires(Capability.COUNT_BODIES)
async def test_markers_live_in_the_list_reference(store: Store, backend: Backend) -> None:
    """One message with and without markers has one fingerprint and one body; only flags differ."""
    agent_id = await new_agent(store)
    call_id = fresh("call")
    marked = tool_result(call_id, "alpha_tool", "not run: bad arguments", not_dispatched=True)
    plain = msgspec.structs.replace(marked, not_dispatched=False)
    injected = msgspec.structs.replace(marked, not_dispatched=False, injected_by="operator")
    assert fingerprint(marked) == fingerprint(plain) == fingerprint(injected)
    before = await backend.body_count(store)

    await store.commit(Txn(agent_id=agent_id, items=items_at(0, [marked, plain, injected])))

    assert await backend.body_count(store) == before + 1
    messages, fps = await store.resolve(agent_id, ListRef(ranges=((0, 3),)))
    assert fps == (fingerprint(plain),) * 3
    assert messages == (marked, plain, injected)
    assert messages[0].not_dispatched and not messages[1].not_dispatched
    assert messages[2].injected_by == "operator" and messages[1].injected_by is None
    assert msgspec.structs.replace(messages[0], not_dispatched=False) == messages[1]
    assert msgspec.structs.replace(messages[2], injected_by=None) == messages[1]


async def test_list_ref_ranges_resolve_in_order(store: Store) -> None:
    """A history of ranges [(0,3),(5,7)] resolves to exactly those items, in that order."""
    agent_id = await new_agent(store)
    tag = fresh("ranges")
    messages = [user(f"{tag} #{n}") for n in range(8)]
    ranges = ((0, 3), (5, 7))
    await store.commit(
        Txn(
            agent_id=agent_id,
            items=items_at(0, messages),
            conversation=state(agent_id, turn=1, ranges=ranges, next_pos=8),
        )
    )

    expected = tuple(messages[pos] for pos in (0, 1, 2, 5, 6))
    resolved, fps = await store.resolve(agent_id, ListRef(ranges=ranges))
    assert resolved == expected
    assert fps == tuple(fingerprint(m) for m in expected)
    loaded = await store.load_conversation(agent_id)
    assert loaded.history == expected
    assert [row.messages for row in await store.agents() if row.agent_id == agent_id] == [5]


async def test_a_reference_of_many_ranges_resolves_in_its_own_order(store: Store) -> None:
    """A reference's ranges resolve in the reference's order, not the items' positions, also
    past one read's worth of ranges; a range naming items never stored reads as damage, and
    an unknown agent is refused."""
    agent_id = await new_agent(store)
    tag = fresh("many")
    messages = [user(f"{tag} #{n}") for n in range(600)]
    await store.commit(
        Txn(
            agent_id=agent_id,
            items=items_at(0, messages),
            conversation=state(agent_id, turn=1, ranges=((0, 600),), next_pos=600),
        )
    )
    # 450 one-item ranges in scrambled order (7 and 600 share no factor), then a longer one.
    ranges = (*(((n * 7) % 600, (n * 7) % 600 + 1) for n in range(450)), (590, 594))
    expected = tuple(messages[pos] for start, end in ranges for pos in range(start, end))
    resolved, fps = await store.resolve(agent_id, ListRef(ranges=ranges))
    assert resolved == expected and len(resolved) == sum(e - s for s, e in ranges)
    assert fps == tuple(fingerprint(m) for m in expected)
    assert await store.fingerprints(agent_id, ListRef(ranges=ranges)) == fps
    with raises(StoreDamaged, "names items 599..600"):
        await store.resolve(agent_id, ListRef(ranges=((0, 2), (599, 601))))
    for read in (store.resolve, store.fingerprints):
        for ref in (ListRef(), ListRef(ranges=((0, 2),))):
            with raises(StoreError, "no agent"):
                await read(fresh("nobody"), ref)


# -- contracts: the durable inbox -------------------------------------------------------------


async def test_inbox_positions_increase_per_agent(store: Store) -> None:
    """post assigns each agent its own increasing positions and acknowledges what it stored."""
    first, second = await new_agent(store), await new_agent(store)
    acks = [
        await store.post(first, f"message {n}", message_id=fresh("msg"), now_ms=T0 + n)
        for n in range(3)
    ]
    other = await store.post(second, "elsewhere", message_id=fresh("msg"), now_ms=T0)

    positions = [ack.position for ack in acks]
    assert positions == sorted(set(positions))
    assert other.position == positions[0]
    assert not any(ack.duplicate for ack in [*acks, other])
    rows = await store.inbox(first)
    assert [(r.message_id, r.position, r.text, r.status) for r in rows] == [
        (ack.message_id, ack.position, f"message {n}", "queued") for n, ack in enumerate(acks)
    ]
    assert [r.accepted_at_ms for r in rows] == [T0, T0 + 1, T0 + 2]
    assert [r.message_id for r in await store.inbox(second)] == [other.message_id]


async def test_inbox_idempotency_key(store: Store) -> None:
    """The same key and text return the original ack; other text is refused and writes nothing."""
    agent_id = await new_agent(store)
    key = fresh("key")
    original = await store.post(
        agent_id, "deploy", message_id=fresh("msg"), now_ms=T0, idempotency_key=key, sender="ann"
    )

    again = await store.post(
        agent_id,
        "deploy",
        message_id=fresh("msg"),
        now_ms=T0 + 9,
        idempotency_key=key,
        sender="ann",
    )
    assert again.duplicate
    assert (again.message_id, again.position, again.accepted_at_ms) == (
        original.message_id,
        original.position,
        T0,
    )

    refused_id = fresh("msg")
    with raises(IdempotencyConflict):
        await store.post(
            agent_id,
            "rollback",
            message_id=refused_id,
            now_ms=T0 + 10,
            idempotency_key=key,
            sender="ann",
        )
    assert await store.inbox_message(refused_id) is None
    rows = await store.inbox(agent_id)
    assert [(r.message_id, r.text, r.idempotency_key, r.sender) for r in rows] == [
        (original.message_id, "deploy", key, "ann")
    ]


async def test_inbox_refuses_empty_and_overlong_text(store: Store) -> None:
    """Text must hold 1 to 32,000 code points (not bytes); anything else is InvalidValue."""
    agent_id = await new_agent(store)
    refused = [fresh("msg"), fresh("msg")]
    with raises(InvalidValue):
        await store.post(agent_id, "", message_id=refused[0], now_ms=T0)
    with raises(InvalidValue):
        await store.post(agent_id, "é" * 32_001, message_id=refused[1], now_ms=T0)

    longest = await store.post(agent_id, "é" * 32_000, message_id=fresh("msg"), now_ms=T0)

    assert [r.message_id for r in await store.inbox(agent_id)] == [longest.message_id]
    assert [await store.inbox_message(m) for m in refused] == [None, None]


async def test_inbox_filters_by_status(store: Store) -> None:
    """inbox(status=...) lists only messages of that status, with the turn that took them."""
    agent_id = await new_agent(store)
    acks = [
        await store.post(agent_id, f"m{n}", message_id=fresh("msg"), now_ms=T0) for n in range(3)
    ]
    await store.commit(
        Txn(
            agent_id=agent_id,
            inbox=[
                InboxUpdate(message_id=acks[0].message_id, status="answered", turn=1),
                InboxUpdate(message_id=acks[1].message_id, status="running", turn=2),
            ],
        )
    )

    running = await store.inbox(agent_id, status="running")
    assert [(r.message_id, r.turn) for r in running] == [(acks[1].message_id, 2)]
    queued = await store.inbox(agent_id, status="queued")
    assert [(r.message_id, r.turn) for r in queued] == [(acks[2].message_id, None)]
    answered = await store.inbox(agent_id, status="answered")
    assert [r.message_id for r in answered] == [acks[0].message_id]
    assert await store.inbox(agent_id, status="dismissed") == []
    assert len(await store.inbox(agent_id)) == 3


# -- contracts: the tool journal --------------------------------------------------------------


async def test_tool_journal_reads_back_per_turn(store: Store) -> None:
    """started and finished rows read back per (agent, turn); a repeated started row is ignored."""
    agent_id = await new_agent(store)
    run_id, recovery_id = fresh("run"), fresh("run")
    outcome = b'{"status":"ok","content":"42"}'

    def row(call: str, journal_state: Any, run: str, result: bytes | None = None) -> JournalRow:
        return JournalRow(
            agent_id=agent_id,
            message_id="m-3",
            tool_call_id=call,
            state=journal_state,
            run_id=run,
            outcome=result,
        )

    await store.commit(
        Txn(agent_id=agent_id, journal=[row("a", "started", run_id), row("b", "started", run_id)])
    )
    await store.commit(Txn(agent_id=agent_id, journal=[row("a", "finished", run_id, outcome)]))
    await store.commit(Txn(agent_id=agent_id, journal=[row("b", "started", recovery_id)]))

    journal = await store.journal(agent_id, "m-3")
    assert set(journal) == {"a", "b"}
    assert (journal["a"].started, journal["a"].finished) == (True, outcome)
    assert (journal["b"].started, journal["b"].finished) == (True, None)
    assert await store.journal(agent_id, "m-4") == {}
    other = await new_agent(store)
    assert await store.journal(other, "m-3") == {}


# -- contracts: runs, bundles, agents --------------------------------------------------------


async def test_runs_bundles_and_agents_summaries(store: Store) -> None:
    """runs() shows status and usage after a RunEnd, last_bundle the top seq, agents() a summary."""
    agent_id = await new_agent(store)
    run_id = fresh("run")
    messages = [user(f"hi {run_id}"), assistant(f"hello {run_id}")]
    open_turn = OpenTurn(
        turn=1, message_id=fresh("msg"), status="running", last_run_id=run_id, next_iteration=0
    )
    usage = Usage(input=120, output=30, cache_read=100)
    await store.commit(
        Txn(
            agent_id=agent_id,
            run_start=run_start(agent_id, run_id),
            items=items_at(0, messages),
            bundles=[bundle(run_id, 0, "seed")],
            conversation=state(agent_id, turn=1, ranges=((0, 2),), next_pos=2, open_turn=open_turn),
        )
    )
    assert await store.last_bundle(run_id) == (await store.bundles(run_id))[0]
    (summary,) = [row for row in await store.agents() if row.agent_id == agent_id]
    assert (summary.turn, summary.messages, summary.status) == (1, 2, "running")

    for seq, stage in ((1, "settle"), (2, "final")):
        await store.commit(Txn(agent_id=agent_id, bundles=[bundle(run_id, seq, stage)]))
    await store.commit(
        Txn(
            agent_id=agent_id,
            run_end=RunEnd(run_id=run_id, status="answered", ended_at_ms=T0 + 50, usage=usage),
            conversation=state(
                agent_id,
                turn=1,
                ranges=((0, 2),),
                next_pos=2,
                model_calls=1,
                usage_totals=usage,
                last_run_id=run_id,
            ),
        )
    )
    next_run = fresh("run")
    await store.commit(
        Txn(agent_id=agent_id, run_start=run_start(agent_id, next_run, turn=2, at=T0 + 60))
    )

    last = await store.last_bundle(run_id)
    assert last is not None
    assert (last.seq, last.stage, last.runtime_stage_id) == (2, "final", "final#2")
    assert await store.last_bundle(next_run) is None
    runs = await store.runs(agent_id)
    assert [r.run_id for r in runs] == [run_id, next_run]
    ended, started = runs
    assert (ended.status, ended.ended_at_ms, ended.usage, ended.bundles) == (
        "answered",
        T0 + 50,
        usage,
        3,
    )
    assert (ended.turn, ended.kind, ended.started_at_ms) == (1, "initial", T0)
    assert (started.status, started.ended_at_ms, started.usage, started.bundles) == (
        "running",
        None,
        None,
        0,
    )
    assert await store.runs(run_id=next_run) == [started]
    (summary,) = [row for row in await store.agents() if row.agent_id == agent_id]
    assert (summary.turn, summary.messages, summary.status) == (1, 2, "idle")
    assert (summary.model_calls, summary.usage_totals) == (1, usage)


# -- contracts: cancellation --------------------------------------------------------------------


async def cancel_after(scope: anyio.CancelScope, checkpoints: int) -> None:
    """Cancel ``scope`` after ``checkpoints`` checkpoints of the calling task."""
    for _ in range(checkpoints):
        await anyio.lowlevel.checkpoint()
    scope.cancel()


async def _committed_parts(store: Store, agent_id: str, run_id: str, pos: int) -> list[bool]:
    """Which parts of the turn txn at ``pos`` are visible: run, bundle, items, checkpoint."""
    state_now = await store.conversation_state(agent_id)
    assert state_now is not None
    try:
        await store.resolve(agent_id, ListRef(ranges=((pos, pos + 2),)))
        items_present = True
    except StoreError:
        items_present = False
    return [
        bool(await store.runs(run_id=run_id)),
        bool(await store.bundles(run_id)),
        items_present,
        state_now.next_pos == pos + 2,
    ]


@requires(Capability.REOPEN)
async def test_cancelled_commit_is_all_or_nothing(store: Store, backend: Backend) -> None:
    """Cancelling the caller during commit leaves its txn fully present or fully absent."""
    agent_id = await new_agent(store)
    pos = 0
    run_ids: list[str] = []
    for checkpoints in range(12):
        run_id = fresh("run")
        messages = [user(f"go {run_id}"), assistant(f"done {run_id}")]
        txn = Txn(
            agent_id=agent_id,
            run_start=run_start(agent_id, run_id),
            items=items_at(pos, messages),
            bundles=[bundle(run_id, 0, "seed"), bundle(run_id, 1, "final")],
            conversation=state(agent_id, turn=1, ranges=((0, pos + 2),), next_pos=pos + 2),
        )
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_after, scope, checkpoints)
                await store.commit(txn)

        parts = await _committed_parts(store, agent_id, run_id, pos)
        assert parts in ([True] * 4, [False] * 4), f"half-written txn: {parts}"
        if not parts[0]:
            await store.commit(txn)  # nothing of it was left behind to collide with
        run_ids.append(run_id)
        pos += 2

    store = await backend.reopen(store)
    loaded = await store.load_conversation(agent_id)
    assert loaded.state.next_pos == pos
    assert len(loaded.history) == pos
    for run_id in run_ids:
        assert [b.seq for b in await store.bundles(run_id)] == [0, 1]


# -- contracts: reading a run's log, readers, health -------------------------------------------


async def test_a_runs_log_is_read_through_the_store(store: Store) -> None:
    """read_run hands served code a RunLog of the run (bundles, values as of a seq, bodies);
    an unknown run is NotFound."""
    agent_id = await new_agent(store)
    run_id = fresh("run")
    messages = [user(f"hi {run_id}"), assistant(f"hello {run_id}")]
    await store.commit(
        Txn(
            agent_id=agent_id,
            run_start=run_start(agent_id, run_id),
            items=items_at(0, messages),
            bundles=[
                bundle(run_id, 0, "seed", Write(key="history", verb="set", value=ListRef())),
                bundle(run_id, 1, "settle", Write(key="answer", verb="set", value="draft")),
                bundle(
                    run_id,
                    2,
                    "final",
                    Write(key="history", verb="append", value=ListRef(ranges=((0, 2),))),
                    Write(key="answer", verb="set", value=f"answer {run_id}"),
                ),
            ],
        )
    )

    def read(log: RunLog) -> tuple[Any, ...]:
        history = log.value_at("history", 2)
        return (
            (log.run_id, log.has_base, log.live),
            [b.seq for b in log.bundles()],
            [log.value_at("answer", seq) for seq in (0, 1, 2)],
            [ref.fingerprint for ref in history],
            log.body(fingerprint(messages[0])) is not None,
        )

    found = await store.read_run(run_id, read)
    assert found[0] == (run_id, True, True)
    assert found[1] == [0, 1, 2]
    assert found[2][1:] == ["draft", f"answer {run_id}"]
    assert found[2][0] is UNKNOWN
    assert found[3] == [fingerprint(m) for m in messages]
    assert found[4]
    with raises(NotFound, match="no run"):
        await store.read_run(fresh("run"), read)


async def test_a_reader_sees_commits_and_refuses_writes(store: Store) -> None:
    """open_reader gives a read-only store on the same storage: it reads what the writer
    committed and refuses to write; the store names its location and schema version."""
    assert store.location and store.schema_version >= 1
    reader = await store.open_reader()
    try:
        agent_id = await new_agent(store)
        assert await reader.conversation_state(agent_id) is not None
        with raises(StoreError):
            await reader.ensure_agent(fresh("agent"), now_ms=T0)
    finally:
        await reader.aclose()


async def test_the_clean_shutdown_marker_and_the_health_checks(store: Store) -> None:
    """begin_serving clears the clean-shutdown marker and mark_clean_shutdown sets it; a
    healthy storage passes every check."""
    await store.begin_serving()
    assert not await store.clean_shutdown()
    await store.mark_clean_shutdown()
    assert await store.clean_shutdown()
    assert await store.quick_check() == ["ok"]
    assert await store.integrity_check() == ["ok"]
    assert await store.body_check() == []


# -- contracts: leases, claims and fencing (docs/host.md#ownership-and-leases) ----------------

TTL = 30_000


def turn_txn(agent_id: str, run_id: str, *, pos: int = 0) -> Txn:
    """A turn's first commit: a run, its seed bundle, a new message, a checkpoint and a
    journal row (under message id ``m-<run_id>``)."""
    return Txn(
        agent_id=agent_id,
        run_start=run_start(agent_id, run_id),
        bundles=[bundle(run_id, 0, "seed", Write(key="scratch", verb="set", value=1))],
        items=items_at(pos, [user(f"hello from {run_id}")]),
        conversation=state(agent_id, turn=1, ranges=((0, pos + 1),), next_pos=pos + 1),
        journal=[
            JournalRow(
                agent_id=agent_id,
                message_id=f"m-{run_id}",
                tool_call_id="c1",
                state="started",
                run_id=run_id,
            )
        ],
    )


async def _refused_whole(store: Store, backend: Backend, txn: Txn, match: str) -> LeaseLost:
    """Commit ``txn`` expecting ``LeaseLost``; check that nothing of it was written."""
    assert txn.run_start is not None
    agent_id, run_id = txn.agent_id, txn.run_start.run_id
    before = await store.conversation_state(agent_id)
    counting = Capability.COUNT_BODIES in backend.capabilities
    bodies = await backend.body_count(store) if counting else 0
    with raises(LeaseLost, match=match) as caught:
        await store.commit(txn)
    assert await store.runs(run_id=run_id) == []
    assert await store.bundles(run_id) == []
    assert await store.conversation_state(agent_id) == before
    assert await store.journal(agent_id, f"m-{run_id}") == {}
    with raises(StoreError):
        await store.resolve(agent_id, ListRef(ranges=((txn.items[0].pos, txn.items[0].pos + 1),)))
    if counting:
        assert await backend.body_count(store) == bodies
    return caught[0]


async def two_hosts(store: Store, backend: Backend) -> tuple[Store, str, int, str, int]:
    """A second store on the same storage (another host process) and two fresh hosts holding
    leases from ``T0``: ``(other, a, ea, b, eb)``, host ``a`` on ``store``, ``b`` on ``other``."""
    other = await backend.open()
    a, b = fresh("host"), fresh("host")
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    eb = await other.acquire_lease(b, now_ms=T0, ttl_ms=TTL)
    assert ea is not None and eb is not None
    return other, a, ea, b, eb


async def test_a_lease_is_taken_with_a_new_epoch_even_when_live(store: Store) -> None:
    """A new host gets epoch 1 and the same id again epoch 2 at once, though the row is live;
    only_if_expired leaves a live row alone and takes an expired one."""
    host = fresh("host")
    assert await store.acquire_lease(host, now_ms=T0, ttl_ms=TTL) == 1
    assert await store.acquire_lease(host, now_ms=T0 + 1, ttl_ms=TTL) == 2
    assert await store.acquire_lease(host, now_ms=T0 + 2, ttl_ms=TTL, only_if_expired=True) is None
    expired = T0 + 1 + TTL
    assert await store.acquire_lease(host, now_ms=expired, ttl_ms=TTL, only_if_expired=True) == 3


async def test_a_live_claim_keeps_other_hosts_out(store: Store, backend: Backend) -> None:
    """A claimed agent stays its host's; a second host cannot claim it while the lease is live,
    and claiming many at once skips it."""
    other, a, ea, b, eb = await two_hosts(store, backend)
    agent_id, free = await new_agent(store), await new_agent(store)
    assert await store.claim_agent(agent_id, a, ea, now_ms=T0)
    assert await store.claim_agent(agent_id, a, ea, now_ms=T0 + 1)

    assert not await other.claim_agent(agent_id, b, eb, now_ms=T0 + TTL - 1)
    assert await other.claim_agents([agent_id, free], b, eb, now_ms=T0 + 1) == {free}
    assert await other.agent_claim(agent_id, now_ms=T0 + TTL - 1) == AgentClaim(
        agent_id=agent_id, host_id=a, lease_epoch=ea, live=True
    )
    claims = await other.agent_claims([free, agent_id], now_ms=T0 + 1)
    assert [(c.agent_id, c.host_id) for c in claims] == sorted([(agent_id, a), (free, b)])
    assert await store.agent_claim(fresh("agent"), now_ms=T0) is None


async def test_renewal_extends_a_lease_until_its_epoch_is_raised(
    store: Store, backend: Backend
) -> None:
    """A renewed lease is live past its first expiry; once a restart raised its epoch, the old
    epoch's renewal reports the loss and its claims are stale at once."""
    other = await backend.open()
    agent_id = await new_agent(store)
    a, b = fresh("host"), fresh("host")
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    assert ea is not None and await store.claim_agent(agent_id, a, ea, now_ms=T0)
    assert (await store.renew_lease(a, ea, now_ms=T0 + 10_000, ttl_ms=TTL)).renewed

    eb = await other.acquire_lease(b, now_ms=T0 + TTL + 5_000, ttl_ms=TTL)
    assert eb is not None
    assert not await other.claim_agent(agent_id, b, eb, now_ms=T0 + TTL + 5_000)
    assert await other.acquire_lease(a, now_ms=T0 + 11_000, ttl_ms=TTL) == ea + 1
    assert not (await store.renew_lease(a, ea, now_ms=T0 + 12_000, ttl_ms=TTL)).renewed
    claim = await other.agent_claim(agent_id, now_ms=T0 + 12_000)
    assert claim is not None and (claim.lease_epoch, claim.live) == (ea, False)
    assert not await store.claim_agent(agent_id, a, ea, now_ms=T0 + 12_000)
    assert await other.claim_agent(agent_id, b, eb, now_ms=T0 + 12_000)


async def test_an_expired_lease_is_taken_over(store: Store, backend: Backend) -> None:
    """After its TTL a host's lease is taken over by another host's renewal (once); the dead
    host's renewal then fails and its agents may be claimed."""
    other, a, ea, b, eb = await two_hosts(store, backend)
    agent_id = await new_agent(store)
    assert await store.claim_agent(agent_id, a, ea, now_ms=T0)

    early = await other.renew_lease(b, eb, now_ms=T0 + TTL - 1, ttl_ms=TTL)
    assert early.renewed and a not in early.taken_over
    taken = await other.renew_lease(b, eb, now_ms=T0 + TTL, ttl_ms=TTL)
    assert taken.renewed and a in taken.taken_over
    again = await other.renew_lease(b, eb, now_ms=T0 + TTL + 10_000, ttl_ms=TTL)
    assert again.renewed and a not in again.taken_over
    assert not (await store.renew_lease(a, ea, now_ms=T0 + TTL + 1, ttl_ms=TTL)).renewed
    assert await other.claim_agent(agent_id, b, eb, now_ms=T0 + TTL + 1)


async def test_release_lets_another_host_claim_at_once(store: Store, backend: Backend) -> None:
    """A released lease drops its claims, so another host claims at once; a release under an
    epoch that moved on changes nothing."""
    other, a, ea, b, eb = await two_hosts(store, backend)
    agent_id = await new_agent(store)
    assert await store.claim_agent(agent_id, a, ea, now_ms=T0)
    assert not await other.claim_agent(agent_id, b, eb, now_ms=T0 + 1)

    assert not await store.release_lease(a, ea + 1)
    assert await store.release_lease(a, ea)
    assert await store.agent_claim(agent_id, now_ms=T0 + 1) == AgentClaim(
        agent_id=agent_id, host_id=None, lease_epoch=None, live=False
    )
    assert await other.claim_agent(agent_id, b, eb, now_ms=T0 + 1)


async def test_live_hosts_are_those_with_an_unexpired_lease(store: Store) -> None:
    """live_hosts lists the hosts whose lease has not expired, sorted; a released lease is gone
    at once."""
    a, b = sorted([fresh("host"), fresh("host")])
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    assert ea is not None
    assert await store.acquire_lease(b, now_ms=T0 + 5_000, ttl_ms=TTL) is not None
    live = await store.live_hosts(now_ms=T0 + 1)
    assert [h for h in live if h in (a, b)] == [a, b]
    later = await store.live_hosts(now_ms=T0 + TTL)
    assert a not in later and b in later
    assert await store.release_lease(a, ea + 1) is False
    eb = await store.acquire_lease(b, now_ms=T0 + 6_000, ttl_ms=TTL)
    assert eb is not None and await store.release_lease(b, eb)
    assert b not in await store.live_hosts(now_ms=T0 + 6_001)


async def test_a_host_gives_agents_up_for_another_to_claim(store: Store, backend: Backend) -> None:
    """release_agents drops only the claims this host holds under its epoch; another host may
    claim the released agents at once, while the kept ones stay out of its reach."""
    other, a, ea, b, eb = await two_hosts(store, backend)
    kept, given = await new_agent(store), await new_agent(store)
    assert await store.claim_agents([kept, given], a, ea, now_ms=T0) == {kept, given}

    assert await other.release_agents([given], b, eb) == set()
    assert await store.release_agents([given], a, ea + 1) == set()
    assert await store.release_agents([given, fresh("agent")], a, ea) == {given}
    assert await other.claim_agents([kept, given], b, eb, now_ms=T0 + 1) == {given}
    claim = await other.agent_claim(kept, now_ms=T0 + 1)
    assert claim is not None and (claim.host_id, claim.live) == (a, True)


async def test_a_fenced_commit_writes_while_its_claim_holds(store: Store) -> None:
    """With its claim in place a fenced store commits as an unfenced one does."""
    agent_id, host = await new_agent(store), fresh("host")
    epoch = await store.acquire_lease(host, now_ms=T0, ttl_ms=TTL)
    assert epoch is not None and await store.claim_agent(agent_id, host, epoch, now_ms=T0)
    store.fence_with(host, epoch)
    try:
        assert store.fence == (host, epoch)
        run_id = fresh("run")
        await store.commit(turn_txn(agent_id, run_id))
        assert [r.run_id for r in await store.runs(agent_id)] == [run_id]
    finally:
        store.fence_with(None)
    assert store.fence is None


async def test_a_stale_epochs_commit_is_refused_whole(store: Store, backend: Backend) -> None:
    """Once a restart raised the host's epoch, a commit fenced by the old epoch raises LeaseLost
    and nothing of it is written (so the same txn commits cleanly later)."""
    other = await backend.open()
    agent_id, host = await new_agent(store), fresh("host")
    old = await store.acquire_lease(host, now_ms=T0, ttl_ms=TTL)
    assert old is not None and await store.claim_agent(agent_id, host, old, now_ms=T0)
    store.fence_with(host, old)
    assert await other.acquire_lease(host, now_ms=T0 + 1, ttl_ms=TTL) == old + 1
    txn = turn_txn(agent_id, fresh("run"))

    lost = await _refused_whole(store, backend, txn, agent_id)

    assert (lost.context["agent_id"], lost.context["host_id"]) == (agent_id, host)
    store.fence_with(None)
    await store.commit(txn)
    assert len(await store.runs(agent_id)) == 1


async def test_a_commit_for_an_agent_claimed_elsewhere_is_refused_whole(
    store: Store, backend: Backend
) -> None:
    """Once another host claimed the agent (after this lease expired), this host's fenced
    commit raises LeaseLost naming agent, host and epoch, and writes nothing."""
    other = await backend.open()
    agent_id, a, b = await new_agent(store), fresh("host"), fresh("host")
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    assert ea is not None and await store.claim_agent(agent_id, a, ea, now_ms=T0)
    store.fence_with(a, ea)
    try:
        eb = await other.acquire_lease(b, now_ms=T0 + TTL, ttl_ms=TTL)
        assert eb is not None and await other.claim_agent(agent_id, b, eb, now_ms=T0 + TTL)

        lost = await _refused_whole(store, backend, turn_txn(agent_id, fresh("run")), agent_id)
    finally:
        store.fence_with(None)
    assert lost.context == {"agent_id": agent_id, "host_id": a, "lease_epoch": ea}


async def test_an_unfenced_store_and_the_inbox_are_not_fenced(
    store: Store, backend: Backend
) -> None:
    """Without a fence commits go through whoever claims the agent; a fenced store still
    accepts inbox messages for an agent it does not hold, but not its commits."""
    other = await backend.open()
    agent_id, a, b = await new_agent(store), fresh("host"), fresh("host")
    eb = await other.acquire_lease(b, now_ms=T0, ttl_ms=TTL)
    assert eb is not None and await other.claim_agent(agent_id, b, eb, now_ms=T0)
    assert store.fence is None
    first, refused, last = fresh("run"), fresh("run"), fresh("run")
    await store.commit(turn_txn(agent_id, first))
    ea = await store.acquire_lease(a, now_ms=T0, ttl_ms=TTL)
    assert ea is not None
    store.fence_with(a, ea)
    try:
        ack = await store.post(agent_id, "hi", message_id=fresh("msg"), now_ms=T0)
        with raises(LeaseLost):
            await store.commit(turn_txn(agent_id, refused, pos=1))
    finally:
        store.fence_with(None)
    await store.commit(turn_txn(agent_id, last, pos=1))
    assert [r.run_id for r in await store.runs(agent_id)] == [first, last]
    assert await store.inbox_message(ack.message_id) is not None


def _collect() -> tuple[Contract, ...]:
    # The MovingStore and group-commit contracts live in modules of their own, which use the
    # helpers above.
    moving = importlib.import_module("afp_runtime.testing.store_moving")
    group = importlib.import_module("afp_runtime.testing.store_group")
    return tuple(
        value
        for module in (globals(), vars(moving), vars(group))
        for name, value in module.items()
        if name.startswith("test_") and inspect.iscoroutinefunction(value)
    )


CONTRACTS: tuple[Contract, ...] = _collect()
"""Every contract of the suite, in definition order."""
