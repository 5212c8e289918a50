"""Group commit on the SQLite store (docs/storage.md#group-commit): concurrent commits share
database transactions, as the store's transaction counters show, and each stays its own.

The backend-neutral side (every txn whole or absent, a failure its caller's alone) is in the
conformance suite (``afp_runtime.testing.store_group``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec
import pytest

from afp_runtime.errors import StoreError
from afp_runtime.records import Txn
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing.store_conformance import bundle, fresh, new_agent, turn_txn
from afp_runtime.testing.store_group import commit_all, written_whole


@pytest.fixture(name="store")
async def fixture_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = await SqliteStore.open(tmp_path / "afp.sqlite3")
    try:
        yield store
    finally:
        await store.aclose()


def full(txn: Txn) -> Txn:
    """``txn`` marked as preceding an effect that leaves the process."""
    return msgspec.structs.replace(txn, full=True)


async def test_concurrent_commits_coalesce_into_fewer_transactions(store: SqliteStore) -> None:
    """Forty agents committing at once take fewer database transactions than commits, and every
    txn reads back whole."""
    agents = [await new_agent(store) for _ in range(40)]
    txns = [turn_txn(agent_id, fresh("run")) for agent_id in agents]
    before = store.transactions

    assert set((await commit_all(store, txns)).values()) == {None}

    assert store.transactions - before < len(txns) // 2
    for txn in txns:
        assert await written_whole(store, txn)


async def test_a_crowd_of_commits_is_written_in_full_groups(store: SqliteStore) -> None:
    """Two hundred agents committing at once: every txn is counted in ``group_members``, once,
    and the groups are full ones (the first commit goes alone; whatever queued behind it is
    written 64 at a time), not a transaction per commit."""
    agents = [await new_agent(store) for _ in range(200)]
    txns = [turn_txn(agent_id, fresh("run")) for agent_id in agents]
    before, members = store.transactions, store.group_members

    assert set((await commit_all(store, txns)).values()) == {None}

    transactions = store.transactions - before
    assert store.group_members - members == len(txns)
    assert transactions <= 1 + -(-(len(txns) - 1) // 64)
    for txn in txns:
        assert await written_whole(store, txn)


async def test_a_lone_commit_is_one_transaction(store: SqliteStore) -> None:
    """Commits awaited one after another each take a transaction of their own, NORMAL unless
    marked full."""
    agents = [await new_agent(store) for _ in range(3)]
    before, full_before = store.transactions, store.full_transactions
    await store.commit(turn_txn(agents[0], fresh("run")))
    await store.commit(full(turn_txn(agents[1], fresh("run"))))
    await store.commit(turn_txn(agents[2], fresh("run")))
    assert (store.transactions - before, store.full_transactions - full_before) == (3, 1)
    assert store.group_members == 3 + 3  # three agents made, three commits


async def test_a_full_member_is_released_after_a_full_commit(store: SqliteStore) -> None:
    """A full txn grouped with NORMAL ones makes its group commit at FULL before its caller is
    released; a group of NORMAL txns alone commits no FULL transaction."""
    agents = [await new_agent(store) for _ in range(10)]
    full_before = store.full_transactions
    assert set((await commit_all(store, [turn_txn(a, fresh("run")) for a in agents])).values()) == {
        None
    }
    assert store.full_transactions == full_before

    more = [await new_agent(store) for _ in range(10)]
    txns = [turn_txn(a, fresh("run")) for a in more[:-1]] + [full(turn_txn(more[-1], fresh("run")))]
    before = store.transactions
    seen_by_full: list[int] = []

    async def commit(txn: Txn) -> None:
        await store.commit(txn)
        if txn.full:
            seen_by_full.append(store.full_transactions)

    async with anyio.create_task_group() as tg:
        for txn in txns:
            tg.start_soon(commit, txn)

    assert store.transactions - before < len(txns)  # the full txn shared a transaction
    assert seen_by_full == [full_before + 1] and store.full_transactions == full_before + 1


async def test_a_rolled_back_member_leaves_no_rowid_behind(store: SqliteStore) -> None:
    """A member rolled back to its savepoint forgets the rowid of the run it inserted: a later
    bundle for that run is refused rather than filed under the run that reused the rowid."""
    lead, failing, reusing = [await new_agent(store) for _ in range(3)]
    taken = turn_txn(failing, fresh("run"))
    await store.commit(taken)
    assert taken.run_start is not None
    doomed = turn_txn(failing, fresh("run"), pos=1)
    doomed.bundles.append(bundle(taken.run_start.run_id, 0, "seed"))  # already stored
    after = turn_txn(reusing, fresh("run"))
    before = store.transactions

    outcomes = await commit_all(store, [turn_txn(lead, fresh("run")), doomed, after])

    assert store.transactions - before < 3  # the doomed txn shared a transaction
    assert doomed.run_start is not None and after.run_start is not None
    assert isinstance(outcomes[doomed.run_start.run_id], StoreError)
    assert outcomes[after.run_start.run_id] is None
    late = Txn(agent_id=failing, bundles=[bundle(doomed.run_start.run_id, 1, "final")])
    with pytest.raises(StoreError, match="no run"):
        await store.commit(late)
    assert [b.seq for b in await store.bundles(after.run_start.run_id)] == [0]
