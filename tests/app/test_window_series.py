"""The window chart's points, read once for every door by ``afp_runtime.app.window_series``
(docs/inspector.md#window-chart): each point's characters are those of the call's served view,
its tokens its reply's usage, folds and drops sit at the calls they shaped, cost shows only
for a priced agent, and a long-lived agent gives its newest calls only. Real SQLite files."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import afp_runtime as afp
from afp_runtime.agents import Agent
from afp_runtime.app import (
    StoredRun,
    WindowSeries,
    agent_call,
    epoch_list,
    served_view,
    window_series,
)
from afp_runtime.cost import Price
from afp_runtime.demo import LOOKUP_ORDER, QUESTIONS, SHIPPING_STATUS, demo_script
from afp_runtime.messages import Usage, fingerprint
from afp_runtime.models import ExtractiveSummarizer, ScriptedModel
from afp_runtime.served import ServedView
from afp_runtime.served.payloads import thaw_message
from afp_runtime.store import Store, open_store
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import sliding_window, summarize_oldest
from tests.store._postgres import FreshDatabase


@pytest.fixture(name="postgres")
async def fixture_postgres() -> AsyncIterator[FreshDatabase]:
    """A fresh database on the test server (``AFP_TEST_POSTGRES_URL``), dropped afterwards."""
    fresh = FreshDatabase()
    try:
        yield fresh
    finally:
        await fresh.drop()


def desk(agent_id: str, **options: Any) -> Agent:
    """The demo order desk folding its oldest turns (keep 1) with the offline summarizer."""
    return Agent(
        agent_id,
        ScriptedModel(demo_script, model="demo-scripted"),
        tools=[LOOKUP_ORDER, SHIPPING_STATUS],
        system_prompt="You are the order desk.",
        max_iterations=6,
        window=summarize_oldest(
            threshold_tokens=150,
            summarizer=ExtractiveSummarizer(),
            model="extractive/1",
            keep_recent_turns=1,
        ),
        **options,
    )


async def _echo(args: Any, ctx: ToolContext) -> str:
    return f"looked at {ctx.tool_call_id}"


def slider(turns: int) -> Agent:
    """An agent keeping one turn of a sliding window: each turn one tool call and an answer."""
    script = []
    for turn in range(1, turns + 1):
        used = Usage(input=100 * turn, output=7)
        script += [tool_reply(call(f"c{turn}", "look"), usage=used), answer(f"done {turn}")]
    return Agent(
        "slide",
        ScriptedModel(script, model="mock"),
        tools=[Tool("look", "Looks.", {"type": "object"}, _echo)],
        system_prompt="you look",
        window=sliding_window(keep_recent_turns=1),
    )


@asynccontextmanager
async def ran(db: Path | str, agent: Agent, questions: tuple[str, ...]) -> AsyncIterator[Store]:
    """The agent asked each question in turn (a SQLite file, or a Postgres URL); its store,
    read back read-only."""
    async with afp.open(db) as embedded:
        for question in questions:
            await embedded.run(agent, question)
    store = await open_store(db, read_only=True)
    try:
        yield store
    finally:
        await store.aclose()


def counted(view: ServedView) -> int:
    """The served view's characters, counted here on its own: system, messages, request-only
    lines, each tool's name, description and compact JSON schema."""
    schemas = [t.as_schema() for t in view.tools.schemas]
    return (
        len(view.system.text)
        + sum(len(m.content) for m in view.messages.as_sent)
        + sum(len(line.text) for line in view.messages.request_only)
        + sum(
            len(s.name)
            + len(s.description)
            + len(json.dumps(s.input_schema, separators=(",", ":"), ensure_ascii=False))
            for s in schemas
        )
    )


async def _check_against_views(store: Store, series: WindowSeries) -> None:
    for point in series.points:
        found = await agent_call(store, series.agent_id, point.agent_call)
        assert found is not None
        assert (found.run.run_id, found.epoch) == (point.run_id, point.epoch)
        view = await served_view(StoredRun(store, point.run_id), point.epoch)
        assert view == found.view
        assert point.chars_sent == counted(view) > 0
        listed, _ = await epoch_list(StoredRun(store, point.run_id))
        entries = {e.epoch: e for e in listed}
        usage = entries[point.epoch].usage or {}
        assert (point.input_tokens, point.output_tokens) == (
            usage.get("input"),
            usage.get("output"),
        )


async def test_each_point_is_its_calls_served_view_and_usage(tmp_path: Path) -> None:
    """Over a folding desk's four turns, every call is a point, numbered 1..N, whose
    characters are its served view's and whose tokens are its reply's usage."""
    async with ran(tmp_path / "afp.db", desk("desk"), QUESTIONS) as store:
        series = await window_series(store, "desk")
        state = await store.conversation_state("desk")
        assert state is not None and series.calls == state.model_calls > 4
        assert [p.agent_call for p in series.points] == list(range(1, series.calls + 1))
        assert all(p.input_tokens is not None for p in series.points)
        await _check_against_views(store, series)


async def test_folds_are_marked_at_the_calls_they_shaped(tmp_path: Path) -> None:
    """Each fold of a summarize-oldest desk marks the call of its iteration in its run, and
    that call is the first sent its summary (the call before it was not)."""
    async with ran(tmp_path / "afp.db", desk("desk"), QUESTIONS) as store:
        series = await window_series(store, "desk")
        spans = await store.folded_spans("desk")
        assert spans
        marked = {(p.run_id, p.epoch): p.fold for p in series.points if p.fold is not None}
        assert marked == {(s.run_id, s.iteration): s.summary_fingerprint for s in spans}
        for point in series.points:
            if point.fold is None:
                continue
            assert point.dropped == 0  # the fold's messages have a summary in their place
            assert point.fold in await _sent(store, point.agent_call)
            assert point.fold not in await _sent(store, point.agent_call - 1)


async def _sent(store: Store, number: int) -> set[str]:
    found = await agent_call(store, "desk", number)
    assert found is not None
    return {fingerprint(thaw_message(m)) for m in found.view.messages.as_sent}


async def test_drops_are_marked_at_the_calls_after_a_sliding_window_dropped(
    tmp_path: Path,
) -> None:
    """A sliding window of one turn drops the turn before at each new turn's first call: those
    calls (3, 5, 7 of four two-call turns) carry the messages dropped, the others none; no fold
    anywhere."""
    questions = tuple(f"question {n}" for n in range(1, 5))
    async with ran(tmp_path / "afp.db", slider(4), questions) as store:
        series = await window_series(store, "slide")
        await _check_against_views(store, series)
    dropped = {p.agent_call: p.dropped for p in series.points if p.dropped}
    assert sorted(dropped) == [3, 5, 7]
    assert all(count >= 3 for count in dropped.values())  # question, call, result, answer
    assert all(p.fold is None for p in series.points)
    assert [p.input_tokens for p in series.points] == [100, None, 200, None, 300, None, 400, None]


async def test_the_points_read_the_same_on_postgres(postgres: FreshDatabase) -> None:
    """The sliding window's agent on a Postgres database: the same calls, drops, tokens and
    characters as its served views there (the records read through that backend's index)."""
    questions = tuple(f"question {n}" for n in range(1, 4))
    async with ran(await postgres.create(), slider(3), questions) as store:
        series = await window_series(store, "slide")
        await _check_against_views(store, series)
    assert [p.agent_call for p in series.points] == list(range(1, 7))
    assert {p.agent_call: p.dropped for p in series.points if p.dropped}.keys() == {3, 5}


async def test_cost_is_given_for_a_priced_agent_and_absent_for_an_unpriced_one(
    tmp_path: Path,
) -> None:
    """The same desk priced has each replied call's amount, as its usage prices it; unpriced
    it has no cost at all."""
    price = Price(input=2e-6, output=8e-6)
    priced = desk("priced", pricing={"demo-scripted": price})
    async with ran(tmp_path / "a.db", priced, QUESTIONS[:2]) as store:
        with_cost = await window_series(store, "priced")
    async with ran(tmp_path / "b.db", desk("plain"), QUESTIONS[:2]) as store:
        without = await window_series(store, "plain")
    assert with_cost.points and without.points
    for point in with_cost.points:
        assert point.input_tokens is not None and point.output_tokens is not None
        expected = point.input_tokens * price.input + point.output_tokens * price.output
        assert point.cost == pytest.approx(expected) and point.cost_unknown is None
    assert all(p.cost is None and p.cost_unknown is None for p in without.points)


async def test_a_long_lived_agent_gives_its_newest_calls_only(tmp_path: Path) -> None:
    """With a limit below the calls made, the series holds the newest calls, oldest first, and
    says how many there are in all; an agent with no conversation has no points."""
    questions = tuple(f"question {n}" for n in range(1, 7))
    async with ran(tmp_path / "afp.db", slider(6), questions) as store:
        series = await window_series(store, "slide", limit=5)
        nobody = await window_series(store, "nobody")
        with pytest.raises(ValueError, match="limit"):
            await window_series(store, "slide", limit=0)
    assert (series.calls, series.limit) == (12, 5)
    assert [p.agent_call for p in series.points] == [8, 9, 10, 11, 12]
    assert (nobody.calls, nobody.points) == (0, ())
