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

from afp_runtime.errors import StoreError
from afp_runtime.messages import Message, ToolCall, assistant, fingerprint, tool_result, user
from afp_runtime.records import (
    AnyWrite,
    CommitBundle,
    ConversationState,
    FinalAnswerWrite,
    FinalValueWrite,
    HistoryWrite,
    Item,
    IterationWrite,
    JournalRow,
    ListRef,
    PendingBatchWrite,
    RunStart,
    TurnWrite,
    Txn,
    runtime_stage_id,
)
from afp_runtime.store import Store

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


def bundle(
    run_id: str, seq: int, stage: str, *writes: AnyWrite, iteration: int = 0
) -> CommitBundle:
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


def unique_exchange(tag: str) -> list[Message]:
    """Four messages of one turn, each with content nobody else stores."""
    call = ToolCall(id=fresh("call"), name="lookup", args={"q": tag, "n": 2})
    return [
        user(f"question {tag}"),
        assistant("", tool_calls=(call,)),
        tool_result(call.id, "lookup", f"result {tag}"),
        assistant(f"answer {tag}"),
    ]


TTL = 30_000


def turn_txn(agent_id: str, run_id: str, *, pos: int = 0) -> Txn:
    """A turn's first commit: a run, its seed bundle, a new message, a checkpoint and a
    journal row (under message id ``m-<run_id>``)."""
    return Txn(
        agent_id=agent_id,
        run_start=run_start(agent_id, run_id),
        bundles=[bundle(run_id, 0, "seed", TurnWrite(value=1))],
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


async def cancel_after(scope: anyio.CancelScope, checkpoints: int) -> None:
    """Cancel ``scope`` after ``checkpoints`` checkpoints of the calling task."""
    for _ in range(checkpoints):
        await anyio.lowlevel.checkpoint()
    scope.cancel()


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
        bundle(run_id, 0, "seed", HistoryWrite(verb="set", value=ListRef())),
        bundle(run_id, 1, "settle"),
        bundle(
            run_id,
            2,
            "final",
            HistoryWrite(verb="append", value=history),
            FinalAnswerWrite(value=f"answer {run_id}"),
            FinalValueWrite(value={"text": f"answer {run_id}", "n": [1, 2]}),
            PendingBatchWrite(verb="delete"),
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
    assert [b.writes for b in stored] == [list(b.writes) for b in bundles]
    assert [b.seq for b in await store.bundles(run_id, from_seq=1)] == [1, 2]


async def test_duplicate_bundle_fails_and_writes_nothing(store: Store) -> None:
    """A bundle committed twice raises StoreError and none of that second txn is written."""
    agent_id = await new_agent(store)
    run_id = fresh("run")
    first = [user(f"hello {run_id}"), assistant(f"hi {run_id}")]
    checkpoint = state(agent_id, turn=1, ranges=((0, 2),), next_pos=2)
    original = bundle(run_id, 0, "seed", HistoryWrite(verb="set", value=ListRef()))
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
            bundle(run_id, 0, "window", IterationWrite(value=1)),
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
    assert stored[0].writes == list(original.writes)
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


def _collect() -> tuple[Contract, ...]:
    # The other groups of contracts live in modules of their own, which use the helpers above.
    modules = [
        vars(importlib.import_module(f"afp_runtime.testing.store_{group}"))
        for group in (
            "refs",
            "inbox",
            "runs",
            "leases",
            "moving",
            "group",
            "schedules",
            "profiles",
        )
    ]
    return tuple(
        value
        for module in (globals(), *modules)
        for name, value in module.items()
        if name.startswith("test_") and inspect.iscoroutinefunction(value)
    )


CONTRACTS: tuple[Contract, ...] = _collect()
"""Every contract of the suite, in definition order."""
