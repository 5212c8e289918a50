"""What happened to a message, read once for every door by ``afp_runtime.app``
(docs/architecture.md#the-application-layer), from a real SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio

import afp_runtime as afp
from afp_runtime.app import message_outcome, message_outcomes
from afp_runtime.store import open_store
from afp_runtime.testing import answer


def _forget_run_answers(db: Path) -> None:
    """Make every run look as a run that ended before schema version 11 does: its answer in its
    commit log only."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET answer = NULL")


async def test_the_list_and_one_message_tell_the_same_outcome(tmp_path: Path) -> None:
    """An answered message and a held one read the same way listed or one by one: the answer,
    or why the turn stopped."""
    db = tmp_path / "afp.db"
    async with afp.open(db) as embedded:
        done = await embedded.run(afp.Agent("a", afp.ScriptedModel([answer("Shipped.")])), "q1")
        held = await embedded.run(afp.Agent("b", afp.ScriptedModel([])), "q2")
    store = await open_store(db, read_only=True)
    try:
        listed = await message_outcomes(store, "a") + await message_outcomes(store, "b")
        one = [
            await message_outcome(store, done.message_id),
            await message_outcome(store, held.message_id),
        ]
        assert listed == one
        assert [(o.row.status, o.answer, o.error_kind, o.run_id) for o in one] == [
            ("answered", "Shipped.", None, done.run_id),
            ("held", None, "script-exhausted", held.run_id),
        ]
        assert await message_outcome(store, "no-such-message") is None
    finally:
        await store.aclose()


async def test_an_old_run_answer_is_read_from_its_commit_log(tmp_path: Path) -> None:
    """A run without its answer column (written before schema version 11) still tells the
    answer of one message, read back from its last bundle's final answer."""
    db = tmp_path / "afp.db"
    async with afp.open(db) as embedded:
        done = await embedded.run(afp.Agent("a", afp.ScriptedModel([answer("Shipped.")])), "q1")
    await anyio.to_thread.run_sync(_forget_run_answers, db)
    store = await open_store(db, read_only=True)
    try:
        found = await message_outcome(store, done.message_id)
        assert found is not None and (found.row.status, found.answer) == ("answered", "Shipped.")
    finally:
        await store.aclose()
