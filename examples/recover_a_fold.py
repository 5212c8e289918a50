"""Recovering in July what was folded in April, on a virtual clock.

    python examples/recover_a_fold.py [DATABASE]

An agent whose window folds its oldest turns into a summary (summarize-oldest, with the built-in
offline summarizer) answers three messages in April. Three months later, in a new process (a new
``afp.open``), a person asks what the first fold replaced: the originals come back byte for byte.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import anyio

import afp_runtime as afp
from afp_runtime.testing import FakeClock

APRIL_1 = int(datetime(2026, 4, 1, 9, tzinfo=UTC).timestamp() * 1000)
DAY_S = 86_400


@afp.tool
def read_ledger(page: int) -> str:
    """Read a page of the ledger."""
    return f"ledger page {page}: " + "; ".join(f"entry {page}.{i} reconciled" for i in range(30))


def bookkeeper(request: afp.ModelRequest, call_number: int) -> afp.ModelReply:
    """Read one ledger page per message, then answer; every reply reports its usage."""
    usage = afp.Usage(input=sum(len(m.content) for m in request.messages) // 4, output=20)
    page = (call_number + 1) // 2  # one lookup and one answer per message
    if request.messages[-1].role == "user":
        call = afp.ToolCall(id=f"c{call_number}", name="read_ledger", args={"page": page})
        return afp.ModelReply(content="", tool_calls=(call,), usage=usage, stop_reason="tool-calls")
    return afp.ModelReply(content=f"Page {page} is reconciled.", usage=usage)


def bookkeeping_agent() -> afp.Agent:
    window = afp.summarize_oldest(
        threshold_tokens=300,
        summarizer=afp.ExtractiveSummarizer(),
        model="extractive/1",
        keep_recent_turns=1,
    )
    return afp.Agent("books", afp.ScriptedModel(bookkeeper), tools=[read_ledger], window=window)


async def main(database: str) -> None:
    clock = FakeClock(APRIL_1)
    agent = bookkeeping_agent()
    async with afp.open(database, clock=clock) as store:  # April
        for day, text in ((0, "Reconcile March."), (3, "Now the refunds."), (9, "And fees.")):
            clock.advance(day * DAY_S - (clock.now_ms() - APRIL_1) / 1000)
            result = await store.run(agent, text)
            print(f"{datetime.fromtimestamp(clock.now_ms() / 1000, UTC):%d %b}: {result.answer}")

    clock.advance(91 * DAY_S)
    async with afp.open(database, clock=clock) as store:  # July, a new process
        spans = await store.folded("books")
        print(f"{datetime.fromtimestamp(clock.now_ms() / 1000, UTC):%d %b}: {len(spans)} folds")
        first = spans[0]
        folded_on = datetime.fromtimestamp(first.folded_at_ms / 1000, UTC)
        print(f"fold {first.summary_fingerprint[:12]} of {folded_on:%d %b} replaced:")
        for message in await store.originals("books", first.summary_fingerprint):
            print(f"  {message.role:9} {message.content[:60]!r}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "books.db")
