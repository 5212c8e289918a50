"""Folds made in April are recovered byte-identical in July, across process restarts.

One standing agent under summarize-oldest runs on a real SQLite file with a virtual clock from
2026-04-01 to July. Every simulated month is a fresh process: the store is closed and opened
again, and the definition, model, summarizer and driver are built anew.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from afp_runtime.agents import Agent
from afp_runtime.loop import AgentDriver, TimeOrderedIds, load_folded_conversation
from afp_runtime.messages import (
    Message,
    ModelReply,
    ModelRequest,
    Usage,
    fingerprint,
    message_body,
)
from afp_runtime.models import ExtractiveSummarizer, ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from afp_runtime.tools import Tool, ToolContext
from afp_runtime.window import FoldedSpan, summarize_oldest
from afp_runtime.window.folds import folded_messages, folded_span_for
from afp_runtime.window.turns import is_person_message

AGENT = "ledger"
ROUNDS = 4  # tool rounds per person turn, then an answer
USAGE = Usage(input=4_000, output=20)  # over the threshold at every measured visit
THRESHOLD = 1_000
DAY_S = 24 * 3600.0


def _ms(year: int, month: int, day: int) -> int:
    return int(datetime(year, month, day, 9, 0, tzinfo=UTC).timestamp() * 1000)


APRIL_1 = _ms(2026, 4, 1)
MAY_1 = _ms(2026, 5, 1)
JULY_1 = _ms(2026, 7, 1)
AUGUST_1 = _ms(2026, 8, 1)

_encode = msgspec.json.Encoder().encode


def advance_to(clock: FakeClock, at_ms: int) -> None:
    """Move the virtual clock forward to ``at_ms`` (never back)."""
    clock.advance(max(0, at_ms - clock.now_ms()) / 1000)


async def read_ledger(args: Mapping[str, Any], ctx: ToolContext) -> str:
    """A ledger page far larger than a summary frame (~350 chars), so spans fold."""
    entries = " ".join(
        f"entry {ctx.tool_call_id}/{k} account=acct-{k * 7 % 31} amount={k * 113 % 997}.00;"
        for k in range(30)
    )
    return f"page {args.get('page')} of the ledger: {entries}"


class ScriptedPerson:
    """A person-turn script: ``ROUNDS`` tool rounds, then an answer; every reply has usage.

    The rounds are counted per person message, not from the window, since folding takes the
    turn's own earlier rounds out of it.
    """

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.said: str | None = None
        self.rounds = 0
        self.model = ScriptedModel(self.reply, model="agent-model")

    def reply(self, request: ModelRequest, number: int) -> ModelReply:
        said = next(m.content for m in reversed(request.messages) if is_person_message(m))
        if said != self.said:
            self.said, self.rounds = said, 0
        if self.rounds < ROUNDS:
            self.rounds += 1
            # One call in April names a tool the agent lacks: its result is settled without
            # running (the ``not_dispatched`` marker), so a marker must survive the round trip.
            tool = "read_archive" if (self.tag, number) == ("apr", 2) else "read_ledger"
            page = call(f"{self.tag}-{number}", tool, page=number)
            return tool_reply(page, content=f"Reading page {number}.", usage=USAGE)
        return answer(f"{self.tag}: reconciled after {self.rounds} pages.", usage=USAGE)


@dataclass
class Process:
    """One simulated process: its store, driver and scripted agent model."""

    store: SqliteStore
    driver: AgentDriver
    agent: ScriptedPerson
    requests: list[ModelRequest] = field(default_factory=list)

    async def turn(self, text: str) -> None:
        await self.driver.post(text)
        outcomes = await self.driver.work()
        assert [o.status for o in outcomes] == ["answered"]
        self.requests.extend(self.agent.model.requests)
        self.agent.model.requests.clear()


async def start_process(path: Path, clock: FakeClock, tag: str, seed: int) -> Process:
    """Open the store and build everything anew, as a restarted process would."""
    store = await SqliteStore.open(path, now_ms=clock.now_ms())
    agent = ScriptedPerson(tag)
    strategy = summarize_oldest(
        threshold_tokens=THRESHOLD,
        summarizer=ExtractiveSummarizer(),
        model="extractive/1",
        keep_recent_turns=2,
        retain="conversation",
    )
    tool = Tool("read_ledger", "Reads a ledger page.", {"type": "object"}, read_ledger)
    definition = Agent(AGENT, agent.model, tools=[tool], window=strategy)
    driver = AgentDriver(
        store,
        definition,
        clock=clock,
        ids=TimeOrderedIds(clock.now_ms, random.Random(seed)),
        rng=random.Random(seed),
    )
    return Process(store=store, driver=driver, agent=agent)


def _contains_run(haystack: Sequence[bytes], needle: Sequence[bytes]) -> bool:
    """``needle`` occurs in ``haystack`` as a contiguous run."""
    n = len(needle)
    return any(list(haystack[i : i + n]) == list(needle) for i in range(len(haystack) - n + 1))


def _record(messages: Sequence[Message]) -> list[tuple[bytes, str, bytes]]:
    """Each message as canonical body bytes, fingerprint and full JSON (markers included)."""
    return [(message_body(m), fingerprint(m), _encode(m)) for m in messages]


@dataclass
class April:
    """What April left: its summary messages and the exact originals each stands for."""

    summaries: list[Message]
    originals: dict[str, list[tuple[bytes, str, bytes]]]
    spans: tuple[FoldedSpan, ...]


async def run_april(path: Path, clock: FakeClock) -> April:
    """Three April turns a few days apart; returns what was folded, read back in April."""
    process = await start_process(path, clock, "apr", seed=4)
    turns = ((0, "Reconcile the March ledger."), (3, "Now the Q1 refunds."), (9, "And fees."))
    for day, text in turns:
        advance_to(clock, APRIL_1 + int(day * DAY_S * 1000))
        await process.turn(text)
    conversation = await load_folded_conversation(process.store, AGENT)
    spans = conversation.folded
    await process.store.aclose()

    assert spans and all(APRIL_1 <= s.folded_at_ms < MAY_1 for s in spans)
    # The summaries as the agent's model was sent them, found by fingerprint (not via a join).
    wanted = {s.summary_fingerprint for s in spans}
    summaries: dict[str, Message] = {}
    for request in process.requests:
        for message in request.messages:
            if fingerprint(message) in wanted:
                summaries.setdefault(fingerprint(message), message)
    assert set(summaries) == wanted
    # Each span's originals are exactly a stretch of some April request: what the model saw.
    sent = [[_encode(m) for m in r.messages] for r in process.requests]
    assert any(m.not_dispatched for s in spans for m in s.messages or ())
    originals: dict[str, list[tuple[bytes, str, bytes]]] = {}
    for span in spans:
        assert isinstance(span.messages, tuple) and len(span.messages) == span.message_count
        record = _record(span.messages)
        assert any(_contains_run(request, [j for _, _, j in record]) for request in sent)
        originals[span.summary_fingerprint] = record
    return April(
        summaries=[summaries[s.summary_fingerprint] for s in spans],
        originals=originals,
        spans=spans,
    )


async def run_month(path: Path, clock: FakeClock, tag: str, month_start: int, seed: int) -> None:
    """A restarted process running three turns spread over one month."""
    process = await start_process(path, clock, tag, seed=seed)
    for week in (0, 1, 3):
        advance_to(clock, month_start + int(week * 7 * DAY_S * 1000))
        await process.turn(f"{tag} week {week}: reconcile the new entries.")
    await process.store.aclose()


async def test_april_folds_are_recovered_byte_identical_in_july(tmp_path: Path) -> None:
    """Summaries folded in April lead back, in July and after three restarts, to the exact
    April originals by fingerprint, even after they were folded again."""
    path = tmp_path / "afp.db"
    clock = FakeClock(start_ms=APRIL_1)
    april = await run_april(path, clock)
    april_count = len(april.spans)

    for seed, (tag, month) in enumerate((("may", 5), ("jun", 6), ("jul", 7)), start=5):
        await run_month(path, clock, tag, _ms(2026, month, 1), seed)
    assert JULY_1 <= clock.now_ms() < AUGUST_1

    store = await SqliteStore.open(path, now_ms=clock.now_ms())  # July: a fresh store object
    try:
        conversation = await load_folded_conversation(store, AGENT)
        live = (await store.load_conversation(AGENT)).history
    finally:
        await store.aclose()
    spans = conversation.folded

    # More folds happened after April, including folds of April summaries; oldest first.
    assert len(spans) > april_count
    assert [s.folded_at_ms for s in spans] == sorted(s.folded_at_ms for s in spans)
    assert spans[:april_count] == april.spans
    assert any(s.folded_at_ms >= JULY_1 for s in spans)
    later = {fingerprint(m) for s in spans[april_count:] for m in s.messages or ()}
    assert any(fingerprint(summary) in later for summary in april.summaries)

    live_fps = {fingerprint(m) for m in live}
    for summary in april.summaries:
        assert fingerprint(summary) not in live_fps  # folded again since April
        span = folded_span_for(conversation, summary)
        assert span is not None
        assert APRIL_1 <= span.folded_at_ms < MAY_1
        assert span.retained == "conversation" and isinstance(span.messages, tuple)
        assert _record(span.messages) == april.originals[fingerprint(summary)]

    everything = folded_messages(conversation)
    april_originals = [r for s in april.spans for r in april.originals[s.summary_fingerprint]]
    assert _record(everything[: len(april_originals)]) == april_originals


async def test_the_fold_chain_walks_from_july_back_to_april(tmp_path: Path) -> None:
    """Following summaries by fingerprint from July's live window reaches April's originals."""
    path = tmp_path / "afp.db"
    clock = FakeClock(start_ms=APRIL_1)
    april = await run_april(path, clock)
    for seed, (tag, month) in enumerate((("may", 5), ("jun", 6), ("jul", 7)), start=5):
        await run_month(path, clock, tag, _ms(2026, month, 1), seed)

    store = await SqliteStore.open(path, now_ms=clock.now_ms())
    try:
        conversation = await load_folded_conversation(store, AGENT)
        live = (await store.load_conversation(AGENT)).history
    finally:
        await store.aclose()

    reached: dict[str, FoldedSpan] = {}
    frontier = list(live)
    while frontier:
        message = frontier.pop()
        span = folded_span_for(conversation, message)
        if span is None or span.summary_fingerprint in reached:
            continue
        reached[span.summary_fingerprint] = span
        frontier.extend(span.messages or ())
    assert {s.summary_fingerprint for s in conversation.folded} == set(reached)
    for summary in april.summaries:
        span = reached[fingerprint(summary)]
        assert _record(span.messages or ()) == april.originals[fingerprint(summary)]
