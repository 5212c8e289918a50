"""``store.diff_calls``: the diff between any two of an agent's calls by agent-wide number,
across runs and turns, a crash-abandoned call included (docs/python.md#reading-what-happened).
The store is ``tests/crossed_calls.py``'s: calls 1-2 in turn 1, call 3 abandoned by a crash in
turn 2, calls 4-5 in its recovery run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import afp_runtime as afp
from afp_runtime.app import no_call
from afp_runtime.errors import InvalidValue, NotFound
from afp_runtime.testing import answer

from ..crossed_calls import SECOND, crossed
from ..store._postgres import FreshDatabase


async def test_two_calls_of_two_turns_diff_with_their_runs_and_turns(tmp_path: Path) -> None:
    """Call 5 (turn 2, the recovery run) against call 2 (turn 1): the second question and its
    lookup came, nothing left, and each side names its run, turn and epoch."""
    runs = await crossed(tmp_path / "afp.db")
    async with afp.open(tmp_path / "afp.db") as store:
        found = await store.diff_calls("support", 5, 2)
    assert len(runs) == 3
    assert (found.before.agent_call, found.before.run_id, found.before.turn) == (2, runs[0], 1)
    assert (found.before.epoch, found.before.outcome) == (2, "replied")
    assert (found.after.agent_call, found.after.run_id, found.after.turn) == (5, runs[2], 2)
    assert (found.after.epoch, found.after.outcome) == (2, "replied")
    assert found.diff.removed == ()
    assert [m.role for m in found.diff.added] == ["assistant", "user", "assistant", "tool"]
    assert found.diff.added[1].content == SECOND
    assert found.diff.kept == 3
    assert (found.diff.before, found.diff.after) == (2, 2)


async def test_the_default_is_the_call_before_even_in_another_run(tmp_path: Path) -> None:
    """``m`` defaults to ``n - 1``: call 4 (the recovery run's first) against call 3, the
    abandoned one of the crashed run, which says so; they sent the same messages."""
    runs = await crossed(tmp_path / "afp.db")
    async with afp.open(tmp_path / "afp.db") as store:
        found = await store.diff_calls("support", 4)
        same = await store.diff_calls(afp.Agent("support", afp.ScriptedModel([])), 4, 4)
    assert (found.before.agent_call, found.before.run_id, found.before.turn) == (3, runs[1], 2)
    assert (found.before.epoch, found.before.outcome) == (1, "abandoned")
    assert (found.after.agent_call, found.after.run_id, found.after.epoch) == (4, runs[2], 1)
    assert (found.diff.added, found.diff.removed, found.diff.changed) == ((), (), ())
    assert found.diff.kept == 5
    assert same.before == same.after and same.diff.added == ()


async def test_the_diff_reads_a_postgres_store_the_same_way() -> None:
    """On Postgres the same life gives the same sides: call 4 against the abandoned call 3."""
    async with FreshDatabase() as database:
        runs = await crossed(database.url)
        async with afp.open(database.url) as store:
            found = await store.diff_calls("support", 4)
            across = await store.diff_calls("support", 5, 2)
    assert (found.before.run_id, found.before.outcome) == (runs[1], "abandoned")
    assert (found.after.run_id, found.diff.kept, found.diff.added) == (runs[2], 5, ())
    assert (across.before.turn, across.after.turn, len(across.diff.added)) == (1, 2, 4)


async def test_the_abandoned_call_diffs_against_a_later_one(tmp_path: Path) -> None:
    """The abandoned call 3 keeps its number: against call 1 it shows turn 1's exchange and
    the new question as come."""
    await crossed(tmp_path / "afp.db")
    async with afp.open(tmp_path / "afp.db") as store:
        found = await store.diff_calls("support", 3, 1)
    assert found.after.outcome == "abandoned" and found.before.outcome == "replied"
    assert [m.content for m in found.diff.added][-1] == SECOND


@pytest.mark.parametrize(
    ("n", "m", "argument", "missing"),
    [(20, 4, "n", 20), (4, 6, "m", 6), (0, 1, "n", 0), (-2, 1, "n", -2), (1, None, "m", 0)],
)
async def test_a_call_that_does_not_exist_names_the_ones_that_do(
    tmp_path: Path, n: int, m: int | None, argument: str, missing: int
) -> None:
    """A number past the agent's calls, 0, a negative, or call 1's default ``m`` of 0 is
    NotFound naming calls 1 to 5 and the argument."""
    await crossed(tmp_path / "afp.db")
    async with afp.open(tmp_path / "afp.db") as store:
        with pytest.raises(NotFound) as err:
            await store.diff_calls("support", n, m)
    assert err.value.message == f"agent 'support' has made calls 1 to 5; there is no call {missing}"
    assert err.value.context == {"what": "call", "value": missing, "argument": argument}


async def test_an_agent_that_does_not_exist_or_made_no_call_is_named(tmp_path: Path) -> None:
    """An unknown agent names itself; an agent with one call names it."""
    async with afp.open(tmp_path / "afp.db") as store:
        await store.run(afp.Agent("desk", afp.ScriptedModel([answer("hi")])), "hello")
        with pytest.raises(NotFound, match=r"^there is no agent 'nobody'"):
            await store.diff_calls("nobody", 2, 1)
        with pytest.raises(NotFound, match=r"^agent 'desk' has made one model call, call 1; "):
            await store.diff_calls("desk", 2)


@pytest.mark.parametrize("bad", ["2", True, 2.0, None])
async def test_a_number_that_is_no_whole_number_is_invalid_naming_it(
    tmp_path: Path, bad: Any
) -> None:
    """``n`` (and ``m`` when given) must be ints, not bools or text."""
    async with afp.open(tmp_path / "afp.db") as store:
        await store.run(afp.Agent("desk", afp.ScriptedModel([answer("hi")])), "hello")
        with pytest.raises(InvalidValue, match=r"^n must be a whole number") as first:
            await store.diff_calls("desk", bad, 1)
        assert first.value.context == {"field": "n"}
        if bad is not None:
            with pytest.raises(InvalidValue, match=r"^m must be a whole number") as second:
                await store.diff_calls("desk", 1, bad)
            assert second.value.context == {"field": "m"}


def test_a_counted_call_no_log_holds_is_named_as_such() -> None:
    """A number among the agent's calls whose receipt no run's log yields (one stored in a shape
    that is refused) is not called nonexistent: the message says the logs lack it."""
    found = no_call("desk", 14, 5, "m")
    assert found.message == (
        "agent 'desk' has made calls 1 to 14; call 5 is in none of its runs' logs"
    )
    assert found.context == {"what": "call", "value": 5, "argument": "m"}
    assert no_call("desk", 0, 1, "n").message == (
        "agent 'desk' has made no model call yet; there is no call 1"
    )
