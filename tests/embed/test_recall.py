"""``Store.recall``: what a fold or a sliding window took out of an agent's window is found by
its words right after the commit, with its source and when it was said, on SQLite and Postgres
(docs/recall.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import afp_runtime as afp
from afp_runtime.errors import InvalidValue, NotFound
from afp_runtime.messages import ModelRequest
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from tests.store._postgres import FreshDatabase

HOUR_S = 3600.0
START_MS = 1_750_000_000_000


@afp.tool
def order_history(order_id: str) -> str:
    """An order's long history."""
    return f"order {order_id}: " + "packed, moved, scanned; " * 40


def script(request: ModelRequest, number: int) -> afp.ModelReply:
    """Each person's message asks for one order: a lookup of it, then an answer naming it."""
    last = request.messages[-1]
    usage = afp.Usage(input=50 * len(request.messages), output=5)
    said = next(m.content for m in reversed(request.messages) if m.role == "user")
    order = said.rsplit(" ", 1)[-1].rstrip("?")
    if last.role == "user":
        return tool_reply(call(f"c{number}", "order_history", order_id=order), usage=usage)
    return answer(f"Order {order} has shipped.", usage=usage)


def folding(retain: str = "conversation", durability: str = "sync") -> afp.Agent:
    window = afp.summarize_oldest(
        threshold_tokens=200,
        summarizer=afp.ExtractiveSummarizer(),
        model="extractive/1",
        keep_recent_turns=1,
        retain=retain,  # type: ignore[arg-type]
    )
    return afp.Agent(
        "desk",
        afp.ScriptedModel(script),
        tools=[order_history],
        window=window,
        durability=durability,  # type: ignore[arg-type]
    )


def dropping(strategy: str) -> afp.Agent:
    window = (
        afp.sliding_window(keep_recent_turns=1)
        if strategy == "sliding-window"
        else afp.token_budget(threshold_tokens=200, keep_recent_turns=1)
    )
    return afp.Agent("desk", afp.ScriptedModel(script), tools=[order_history], window=window)


@pytest.fixture(name="target", params=["sqlite", "postgres"])
async def fixture_target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """Where the store lives: a SQLite file, or a fresh database on the suite's server."""
    if request.param == "sqlite":
        yield str(tmp_path / "afp.db")
        return
    async with FreshDatabase() as database:
        yield database.url


async def run_turns(store: afp.Store, agent: afp.Agent, clock: FakeClock, n: int) -> list[int]:
    """``n`` person's turns an hour apart, each about order ord-452<k>; when each was sent."""
    sent = []
    for k in range(n):
        sent.append(clock.now_ms())
        assert (await store.run(agent, f"Where is order ord-452{k}?")).status == "answered"
        clock.advance(HOUR_S)
    return sent


@pytest.mark.parametrize(
    ("retain", "durability"),
    [("conversation", "sync"), ("discard", "sync"), ("conversation", "turn")],
)
async def test_a_fold_is_found_by_its_words_right_after_it_committed(
    target: str, retain: str, durability: str
) -> None:
    """Both retention policies, and a turn's stages committed together: the folded person's
    message, the call and the tool's result are found by the order id, under the fold's summary
    fingerprint, the person's message said when it was sent."""
    clock = FakeClock(START_MS)
    async with afp.open(target, clock=clock) as store:
        agent = folding(retain, durability)
        sent = await run_turns(store, agent, clock, 4)
        folds = {span.summary_fingerprint for span in await store.folded(agent)}
        assert folds

        hits = await store.recall(agent, "ord-4521")

        assert hits
        assert {hit.source.kind for hit in hits} == {"fold"}
        assert {hit.source.fingerprint for hit in hits} <= folds
        assert all("ord-4521" in hit.content + "".join(hit.tool_calls) for hit in hits)
        [person] = [hit for hit in hits if hit.role == "user"]
        assert person.content == "Where is order ord-4521?"
        assert person.said_at_ms == sent[1]
        assert {hit.role for hit in hits} == {"user", "assistant", "tool"}
        assert sorted(h.tool_calls for h in hits if h.role == "assistant") == [
            (),
            ('order_history {"order_id":"ord-4521"}',),
        ]


@pytest.mark.parametrize("strategy", ["sliding-window", "token-budget"])
async def test_a_drop_is_found_with_its_run_and_stage(target: str, strategy: str) -> None:
    """What a sliding window or a token budget dropped is found, named by the run and window
    stage that dropped it."""
    clock = FakeClock(START_MS)
    async with afp.open(target, clock=clock) as store:
        agent = dropping(strategy)
        sent = await run_turns(store, agent, clock, 3)
        runs = {run.run_id for run in await store.runs(agent)}

        hits = await store.recall(agent, "ord-4520")

        [person] = [hit for hit in hits if hit.role == "user"]
        assert person.content == "Where is order ord-4520?"
        assert person.said_at_ms == sent[0]
        assert person.source.kind == "drop" and person.source.fingerprint is None
        assert person.source.run_id in runs
        assert person.source.stage_id.startswith("window#")
        # What is still in the window is not indexed.
        assert await store.recall(agent, "ord-4522") == []


async def test_ranking_and_time_ranges(target: str) -> None:
    """A word no message holds falls back to any word, with the exact id first; the time range
    keeps only what was said inside it."""
    clock = FakeClock(START_MS)
    async with afp.open(target, clock=clock) as store:
        agent = folding()
        sent = await run_turns(store, agent, clock, 5)

        hits = await store.recall(agent, "ord-4522 zanzibar")
        assert hits and "ord-4522" in hits[0].content + "".join(hits[0].tool_calls)

        later = await store.recall(agent, "order", since_ms=sent[2])
        assert later and all(hit.said_at_ms >= sent[2] for hit in later)
        earlier = await store.recall(agent, "order", until_ms=sent[1])
        assert earlier and all(hit.said_at_ms < sent[1] for hit in earlier)
        assert {h.said_at_ms for h in await store.recall(agent, "order", limit=50)} > {
            h.said_at_ms for h in later
        }


async def test_refused_queries_and_unknown_agents(target: str) -> None:
    """Queries with no word, a NUL or too many characters are refused naming ``query``; an
    unknown agent is not found."""
    async with afp.open(target, clock=FakeClock(START_MS)) as store:
        agent = folding()
        await run_turns(store, agent, FakeClock(START_MS), 1)
        for bad in ["", '  " * - ( ) : ', "a\x00b", "x" * 5000]:
            with pytest.raises(InvalidValue) as caught:
                await store.recall(agent, bad)
            assert caught.value.context.get("field") == "query"
        with pytest.raises(InvalidValue, match="limit"):
            await store.recall(agent, "order", limit=51)
        with pytest.raises(NotFound):
            await store.recall("nobody", "order")
