"""``app.recall``: the bounds every door gets, hits by count and characters, on a real SQLite
file (docs/recall.md#search)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from afp_runtime import app
from afp_runtime.errors import InvalidValue, NotFound
from afp_runtime.store import Store, open_store
from tests.store.test_recall import AGENT, MESSAGES, fold_txn, seeded


@pytest.fixture(name="store")
async def fixture_store(tmp_path: Path) -> AsyncIterator[Store]:
    store = await open_store(tmp_path / "afp.db", now_ms=0)
    try:
        await seeded(store)
        await store.commit(fold_txn())
        yield store
    finally:
        await store.aclose()


async def test_each_hit_and_all_hits_are_cut_by_characters(store: Store) -> None:
    """A hit longer than ``max_chars`` is cut there; once ``max_total_chars`` are spent the
    hit that passes it is cut to what is left and the rest are left out; each cut says how
    many characters it took."""
    whole = await app.recall(store, AGENT, "ord-4520 ord-4521")
    assert len(whole) == 4 and all(hit.content_cut == 0 for hit in whole)

    short = await app.recall(store, AGENT, "ord-4520 ord-4521", max_chars=12)
    assert [h.content for h in short] == [h.content[:12] for h in whole]
    assert [h.content_cut for h in short] == [max(0, len(h.content) - 12) for h in whole]

    first = len(whole[0].content)
    bounded = await app.recall(store, AGENT, "ord-4520 ord-4521", max_total_chars=first + 5)
    assert [h.content for h in bounded] == [whole[0].content, whole[1].content[:5]]
    assert bounded[1].content_cut == len(whole[1].content) - 5
    assert sum(len(h.content) for h in bounded) == first + 5


async def test_the_count_is_bounded(store: Store) -> None:
    """Ten hits unless asked; at most fifty: more is refused naming ``limit``."""
    assert len(await app.recall(store, AGENT, "ord-4520 ord-4521", limit=1)) == 1
    assert app.recall.__kwdefaults__["limit"] == 10
    with pytest.raises(InvalidValue, match="at most 50") as caught:
        await app.recall(store, AGENT, "ord-4520", limit=51)
    assert caught.value.context["field"] == "limit"
    for bad in (0, -1, True):
        with pytest.raises(InvalidValue):
            await app.recall(store, AGENT, "ord-4520", limit=bad)


async def test_bad_arguments_and_unknown_agents(store: Store) -> None:
    """Times must be epoch milliseconds; an unknown agent is not found; the words of a query
    that matches nothing give an empty list."""
    with pytest.raises(InvalidValue, match="since_ms"):
        await app.recall(store, AGENT, "ord-4520", since_ms="april")  # type: ignore[arg-type]
    with pytest.raises(NotFound, match="nobody"):
        await app.recall(store, "nobody", "ord-4520")
    assert await app.recall(store, AGENT, "zanzibar") == []
    assert MESSAGES[0].content in [h.content for h in await app.recall(store, AGENT, "refund")]
