"""The recall index at the store port (docs/recall.md): written in the transaction of the window
visit that removes messages (nothing of it when that transaction fails), rebuilt the same from
the commit log, searched with any text as data, answered verbatim; on SQLite and Postgres."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_runtime import app
from afp_runtime.errors import InvalidValue, StoreError
from afp_runtime.messages import Message, fingerprint
from afp_runtime.records import (
    CommitBundle,
    ConversationState,
    FoldedSpansWrite,
    HistoryWrite,
    Item,
    ListRef,
    QuestionRow,
    RunStart,
    StoredFoldedSpan,
    Txn,
)
from afp_runtime.store import Store, copy_agents, open_store
from tests.store._postgres import FreshDatabase, admin
from tests.store.test_old_store import _unpacked
from tests.test_cli import afp as cli_afp

AGENT = "desk"
RUN = "run-1"
SAID_MS = 1_000
STARTED_MS = 2_000
FOLDED_MS = 9_000
SUMMARY = Message(role="user", content="[summary] orders looked up")

MESSAGES = (
    Message(role="user", content="Please refund order ord-4520 <script>alert(1)</script>"),
    Message(role="assistant", content="Refund of 12.50 sent 🚀 for ord-4520"),
    Message(role="user", content="Also check ord-4521, a\x00b"),
    Message(role="assistant", content="ord-4521 is fine"),
    Message(role="user", content="Thanks"),
)
FOLDED = 4  # the first four leave the window


def bundle(seq: int, stage: str, writes: Sequence[object]) -> CommitBundle:
    return CommitBundle(
        run_id=RUN,
        seq=seq,
        stage=stage,
        runtime_stage_id=f"{stage}#{seq}",
        iteration=1,
        writes=tuple(writes),  # type: ignore[arg-type]
        committed_at_ms=STARTED_MS if seq == 0 else FOLDED_MS,
    )


async def seeded(store: Store) -> None:
    """The agent's person's message accepted, and a run that put five messages in the
    window."""
    await store.ensure_agent(AGENT, now_ms=0)
    await store.post(AGENT, MESSAGES[0].content, message_id="m-1", now_ms=SAID_MS)
    n = len(MESSAGES)
    window = ListRef(ranges=((0, n),))
    await store.commit(
        Txn(
            agent_id=AGENT,
            run_start=RunStart(
                run_id=RUN,
                agent_id=AGENT,
                turn=1,
                kind="initial",
                started_at_ms=STARTED_MS,
                message_id="m-1",
            ),
            items=[
                Item(pos=i, fingerprint=fingerprint(m), message=m) for i, m in enumerate(MESSAGES)
            ],
            bundles=[bundle(0, "seed", [HistoryWrite(verb="set", value=window)])],
            conversation=ConversationState(
                agent_id=AGENT, turn=1, history=window, next_pos=n, checkpointed_at_ms=STARTED_MS
            ),
        )
    )


def fold_txn(**extra: object) -> Txn:
    """A window visit folding the first four messages into a summary (kept originals)."""
    n = len(MESSAGES)
    after = ListRef(ranges=((-1, 0), (FOLDED, n)))
    span = StoredFoldedSpan(
        summary_fingerprint=fingerprint(SUMMARY),
        run_id=RUN,
        iteration=1,
        folded_at_ms=FOLDED_MS,
        model="extractive/1",
        message_count=FOLDED,
        removed_stage_ids=("seed#0",),
        retained="conversation",
        messages=ListRef(ranges=((0, FOLDED),)),
    )
    writes = [
        HistoryWrite(verb="set", value=after),
        FoldedSpansWrite(verb="append", value={"spans": [0, 1]}),
    ]
    return Txn(
        agent_id=AGENT,
        items=[Item(pos=-1, fingerprint=fingerprint(SUMMARY), message=SUMMARY)],
        bundles=[bundle(1, "window", writes)],
        conversation=ConversationState(
            agent_id=AGENT,
            turn=1,
            history=after,
            next_pos=n,
            inserted_count=1,
            folded_count=1,
            checkpointed_at_ms=FOLDED_MS,
        ),
        folded=[span],
        **extra,  # type: ignore[arg-type]
    )


class Backend:
    """A store of one backend, and a raw way to empty its index (a store made before it)."""

    def __init__(self, name: str, target: str) -> None:
        self.name = name
        self.target = target

    async def open(self) -> Store:
        return await open_store(self.target, now_ms=0)

    async def empty_index(self) -> None:
        if self.name == "sqlite":

            def empty() -> None:
                with sqlite3.connect(self.target) as conn:
                    conn.execute("DELETE FROM recall_entries")
                    conn.execute("INSERT INTO recall_text (recall_text) VALUES ('delete-all')")

            await anyio.to_thread.run_sync(empty)
            return
        conn = await admin(self.target)
        try:
            await conn.execute("DELETE FROM recall_entries")
        finally:
            await conn.close()


@pytest.fixture(name="backend", params=["sqlite", "postgres"])
async def fixture_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", str(tmp_path / "afp.db"))
        return
    async with FreshDatabase() as database:
        yield Backend("postgres", database.url)


def question(question_id: str) -> QuestionRow:
    return QuestionRow(
        question_id=question_id,
        agent_id=AGENT,
        message_id="m-1",
        run_id=RUN,
        turn=1,
        kind="approval",
        prompt="ok?",
        tool_call_ids=(),
        asked_at_ms=FOLDED_MS,
    )


async def test_entries_exist_exactly_when_the_fold_committed(backend: Backend) -> None:
    """A fold whose transaction fails after its entries were written leaves none (nor the
    span); the same fold committed is found at once, each message with its source and the
    time it was said: the person's message when it was accepted, the rest when their run
    started."""
    store = await backend.open()
    try:
        await seeded(store)
        with pytest.raises(StoreError):
            # The second question repeats the first's id: the transaction fails at its end.
            await store.commit(fold_txn(questions=[question("q-1"), question("q-1")]))
        assert await store.recall(AGENT, "ord-4520") == []
        assert await store.folded_spans(AGENT) == []

        await store.commit(fold_txn())

        hits = await store.recall(AGENT, "ord-4520")
        assert [(h.role, h.content, h.said_at_ms) for h in hits] == [
            ("user", MESSAGES[0].content, SAID_MS),
            ("assistant", MESSAGES[1].content, STARTED_MS),
        ] or [(h.role, h.content, h.said_at_ms) for h in hits] == [
            ("assistant", MESSAGES[1].content, STARTED_MS),
            ("user", MESSAGES[0].content, SAID_MS),
        ]
        source = hits[0].source
        assert (source.kind, source.fingerprint, source.run_id, source.stage_id) == (
            "fold",
            fingerprint(SUMMARY),
            RUN,
            "window#1",
        )
        # What stays in the window, and the summary itself, are not indexed.
        assert await store.recall(AGENT, "thanks") == []
        assert await store.recall(AGENT, "summary") == []
    finally:
        await store.aclose()


async def test_results_are_verbatim(backend: Backend) -> None:
    """Markup, emoji and numbers come back as they were said; U+0000 too on SQLite, and as
    U+FFFD on Postgres, whose text cannot hold it (docs/storage.md#postgres-text-and-u0000)."""
    store = await backend.open()
    try:
        await seeded(store)
        await store.commit(fold_txn())
        [script] = await store.recall(AGENT, "please alert")
        assert script.content == MESSAGES[0].content
        [emoji] = await store.recall(AGENT, "12.50")
        assert emoji.content == MESSAGES[1].content
        [nul] = await store.recall(AGENT, "ord-4521 check")
        expected = MESSAGES[2].content
        if backend.name == "postgres":
            expected = expected.replace("\x00", "\ufffd")
        assert nul.content == expected
        [cut] = await store.recall(AGENT, "ord-4521 check", max_chars=5)
        assert (cut.content, cut.content_cut) == (expected[:5], len(expected) - 5)
    finally:
        await store.aclose()


async def test_reindex_rebuilds_the_same_entries_once(backend: Backend) -> None:
    """With the index emptied (as in a store made before it), a rebuild from the commit log
    gives the same hits; a second rebuild adds nothing."""
    store = await backend.open()
    try:
        await seeded(store)
        await store.commit(fold_txn())
        before = {q: await store.recall(AGENT, q) for q in ("ord-4520", "ord-4521", "refund")}
        assert all(before.values())
    finally:
        await store.aclose()
    await backend.empty_index()
    store = await backend.open()
    try:
        assert await store.recall(AGENT, "ord-4520") == []
        assert await store.reindex_recall() == FOLDED
        after = {q: await store.recall(AGENT, q) for q in before}
        assert after == before
        assert await store.reindex_recall(AGENT) == 0
        assert {q: await store.recall(AGENT, q) for q in before} == before
    finally:
        await store.aclose()


QUERIES = st.one_of(
    st.text(max_size=60),
    st.lists(
        st.sampled_from(
            [
                '"',
                "*",
                "-",
                ":",
                "NEAR(",
                "OR",
                "AND",
                "NOT",
                "(",
                ")",
                "^",
                "{",
                "}",
                "\x00",
                "\x01",
                "\n",
                "'",
                ";",
                "--",
                "ord-4520",
                "refund",
                "_",
                "é",
                "𝔘",
                "%",
                "\\",
            ]
        ),
        max_size=12,
    ).map(" ".join),
    st.text(min_size=990, max_size=1100),
)


@pytest.fixture(name="searched", scope="module", params=["sqlite", "postgres"])
def fixture_searched(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    """A store holding a fold, made once for the property tests."""
    database = None
    if request.param == "sqlite":
        backend = Backend("sqlite", str(tmp_path_factory.mktemp("recall") / "afp.db"))
    else:
        database = FreshDatabase()
        backend = Backend("postgres", anyio.run(database.create))

    async def build() -> None:
        store = await backend.open()
        try:
            await seeded(store)
            await store.commit(fold_txn())
        finally:
            await store.aclose()

    anyio.run(build)
    yield backend
    if database is not None:
        anyio.run(database.drop)


@settings(deadline=None, max_examples=60, suppress_health_check=list(HealthCheck))
@given(query=QUERIES)
async def test_any_text_is_a_query_or_refused(searched: Backend, query: str) -> None:
    """Whatever the text (FTS syntax, quotes, NULs, control characters, huge lengths), a search
    answers a list of hits or refuses the query by name; never another error."""
    store = await open_store(searched.target, read_only=True)
    try:
        try:
            hits = await store.recall(AGENT, query)
        except InvalidValue as refused:
            assert refused.context.get("field") == "query"
        else:
            assert isinstance(hits, list)
    finally:
        await store.aclose()


@pytest.mark.parametrize("version", ["main-94e2ff2", "main-3cb80bf"])
async def test_an_old_store_migrates_and_its_folds_are_rebuilt(
    version: str, tmp_path: Path
) -> None:
    """A store written before the index opens at today's schema with an empty index; a rebuild
    finds its folds' originals from the commit log, under their spans' fingerprints, once."""
    store = await open_store(await _unpacked("folds", tmp_path, version), now_ms=0)
    try:
        [agent] = [row.agent_id for row in await store.agents()]
        spans = await store.folded_spans(agent)
        found = await app.originals(store, agent, spans[0])
        assert found is not None
        said = next(m for m in found.messages if m.content.strip())
        word = max(re.findall(r"[A-Za-z0-9]+", said.content), key=len)
        assert await store.recall(agent, word) == []

        added = await store.reindex_recall()

        assert added >= sum(span.message_count for span in spans) // 2
        hits = await store.recall(agent, word, limit=50)
        assert said.content in [h.content for h in hits]
        assert {h.source.kind for h in hits} == {"fold"}
        assert {h.source.fingerprint for h in hits} <= {s.summary_fingerprint for s in spans}
        assert await store.reindex_recall() == 0
    finally:
        await store.aclose()


async def test_afp_doctor_reindex_fills_an_emptied_index(tmp_path: Path) -> None:
    """``afp doctor --reindex`` adds what the commit log shows left the window, says how many,
    and the store is healthy after."""
    backend = Backend("sqlite", str(tmp_path / "afp.db"))
    store = await backend.open()
    try:
        await seeded(store)
        await store.commit(fold_txn())
    finally:
        await store.aclose()
    await backend.empty_index()

    done = await anyio.to_thread.run_sync(
        lambda: cli_afp("doctor", "--reindex", "--db", backend.target, "--json")
    )

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["recallEntriesAdded"], report["healthy"]) == (FOLDED, True)
    store = await backend.open()
    try:
        assert len(await store.recall(AGENT, "ord-4520")) == 2
    finally:
        await store.aclose()


async def test_a_copied_agent_is_found_in_its_new_store(backend: Backend, tmp_path: Path) -> None:
    """``copy_agents`` rebuilds the copies' index: what the source finds, the destination finds,
    from the same fold."""
    source = await open_store(tmp_path / "source.db", now_ms=0)
    destination = await backend.open()
    try:
        await seeded(source)
        await source.commit(fold_txn())
        before = await source.recall(AGENT, "ord-4520")

        await copy_agents(source, destination, now_ms=0)

        after = await destination.recall(AGENT, "ord-4520")
        assert [(h.content, h.source) for h in after] == [(h.content, h.source) for h in before]
    finally:
        await source.aclose()
        await destination.aclose()
