"""Window benchmark: the cost of one strategy visit against window size.

Builds realistic windows of N messages (a person message, then assistant tool-call turns with
~300-char results, every fifth turn a batch of two or three calls, and a short answer closing
each person turn) and times one ``visit_window`` call (the pure stage pipeline the loop runs,
recency pins on with ``keep_last_tool_results=2``) for each built-in strategy engaged:
sliding-window keep 6, token-budget under a threshold below the measured usage, and
summarize-oldest with the offline ``ExtractiveSummarizer`` and with an instant summarizer.

Prints JSON: per size and strategy the median visit time (``time.perf_counter``, median of
several repetitions, fewer at the largest sizes), the cost per message in microseconds, the
full garbage collections that ran during a visit (Python's cyclic collector walks every live
object, so on a 100,000-message window it adds a constant factor to the per-message cost), and
a ``linear`` verdict per strategy: the per-message cost at 100,000 messages is within 3x of the
cost at 1,000.

    .venv/bin/python scripts/bench/window.py [--sizes 100 1000 10000 100000]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import structlog

from afp_runtime.messages import Message, ModelReply, ModelRequest, ToolCall, Usage
from afp_runtime.models import ExtractiveSummarizer
from afp_runtime.window import (
    MessageOrigin,
    WindowStrategy,
    sliding_window,
    summarize_oldest,
    token_budget,
    visit_window,
)
from afp_runtime.window.turns import window_chars

SIZES = (100, 1_000, 10_000, 100_000)
TURNS_PER_REQUEST = 12
RESULT_FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod "
BASE_MS = 1_775_000_000_000
TOOLS = ("read_file", "search_docs", "run_query", "list_dir", "fetch_url")


class InstantSummarizer:
    """A summarizer that answers at once with a fixed short text."""

    provider = "instant"
    model = "instant/1"

    async def send(self, request: ModelRequest) -> ModelReply:
        return ModelReply(content="Condensed.", usage=Usage(input=1, output=1))


def _result(n: int) -> str:
    """A tool result of about 300 code points with a few identifier-like tokens."""
    head = f"row {n}: /srv/data/part-{n % 97}.csv id=req-{n} status=ok size={n * 13 % 9001} "
    body = (RESULT_FILLER * 5)[: 300 - len(head)]
    return head + body


def _units() -> Iterator[list[Message]]:
    """Whole turns, oldest first: a person message, tool rounds, an answer; repeated."""
    request = 0
    turn = 0
    while True:
        request += 1
        yield [
            Message(
                role="user",
                content=f"Request {request}: please check the data files of batch {request}.",
            )
        ]
        for _ in range(TURNS_PER_REQUEST):
            turn += 1
            width = 2 + turn % 2 if turn % 5 == 0 else 1
            calls = tuple(
                ToolCall(
                    id=f"c{turn}-{k}",
                    name=TOOLS[(turn + k) % len(TOOLS)],
                    args={"path": f"/srv/data/part-{turn % 97}.csv", "k": k},
                )
                for k in range(width)
            )
            results = [
                Message(
                    role="tool",
                    content=_result(turn * 10 + k),
                    tool_call_id=c.id,
                    tool_name=c.name,
                )
                for k, c in enumerate(calls)
            ]
            yield [Message(role="assistant", content="Looking.", tool_calls=calls), *results]
        yield [Message(role="assistant", content=f"Batch {request} checked: all files present.")]


def build_window(size: int) -> tuple[tuple[Message, ...], tuple[MessageOrigin, ...], str]:
    """A window of exactly ``size`` messages (whole turns, padded with short remarks), one
    origin per message, and the last person message (the anchor ``said``)."""
    messages: list[Message] = []
    origins: list[MessageOrigin] = []
    said = ""
    for stage, unit in enumerate(_units(), start=1):
        if len(messages) + len(unit) > size:
            break
        if unit[0].role == "user":
            said = unit[0].content
        origin = MessageOrigin(stage_id=f"st-{stage}", born_at_ms=BASE_MS + stage * 1_000)
        messages.extend(unit)
        origins.extend([origin] * len(unit))
    while len(messages) < size:
        n = len(messages)
        messages.append(Message(role="assistant", content=f"Noted step {n}."))
        origins.append(MessageOrigin(stage_id=f"pad-{n}", born_at_ms=BASE_MS + n))
    return tuple(messages), tuple(origins), said


def strategies(threshold: int) -> dict[str, Callable[[], WindowStrategy]]:
    """Fresh strategy factories (summarize-oldest keeps a latch, so one per repetition)."""
    return {
        "sliding-window": lambda: sliding_window(keep_recent_turns=6),
        "token-budget": lambda: token_budget(threshold_tokens=threshold, keep_recent_turns=6),
        "summarize-oldest/extractive": lambda: summarize_oldest(
            threshold_tokens=threshold,
            summarizer=ExtractiveSummarizer(),
            model="extractive/1",
            keep_recent_turns=6,
        ),
        "summarize-oldest/instant": lambda: summarize_oldest(
            threshold_tokens=threshold,
            summarizer=InstantSummarizer(),
            model="instant/1",
            keep_recent_turns=6,
        ),
    }


async def time_visit(
    strategy: WindowStrategy,
    history: tuple[Message, ...],
    origins: tuple[MessageOrigin, ...],
    said: str,
    measured: Usage,
) -> tuple[float, int, int]:
    """Seconds one visit took, how many messages it removed, and how many full (generation 2)
    garbage collections ran during it."""
    gc.collect()
    full_before = gc.get_stats()[2]["collections"]
    start = time.perf_counter()
    outcome = await visit_window(
        strategy,
        history=history,
        said=said,
        measured=measured,
        iteration=7,
        run_id="run-bench",
        agent_model="agent-model",
        provider_name="scripted",
        now_ms=BASE_MS + 10**9,
        origins=origins,
        prior=(),
        keep_last_tool_results=2,
    )
    elapsed = time.perf_counter() - start
    full = gc.get_stats()[2]["collections"] - full_before
    if outcome is None:
        raise AssertionError(f"{strategy.name} did not engage")
    return elapsed, outcome.record.removed_message_count, full


def repetitions(size: int, name: str) -> int:
    """Fewer repetitions for big windows; the extractive summarizer is the slow one."""
    if size <= 1_000:
        return 15
    if size <= 10_000:
        return 7
    return 3 if name.endswith("/extractive") else 5


async def measure(sizes: list[int]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    per_message: dict[str, dict[int, float]] = {}
    for size in sizes:
        history, origin_tuple, said = build_window(size)
        chars = window_chars(history)
        measured = Usage(input=chars // 4 + 500, output=50)
        threshold = max(1, measured.input // 2)
        for name, make in strategies(threshold).items():
            times: list[float] = []
            collections: list[int] = []
            removed = 0
            for _ in range(repetitions(size, name)):
                seconds, removed, full = await time_visit(
                    make(), history, origin_tuple, said, measured
                )
                times.append(seconds)
                collections.append(full)
            median = statistics.median(times)
            us_per_message = median * 1e6 / size
            per_message.setdefault(name, {})[size] = us_per_message
            rows.append(
                {
                    "strategy": name,
                    "messages": size,
                    "windowChars": chars,
                    "removedMessages": removed,
                    "repetitions": len(times),
                    "medianMs": round(median * 1000, 3),
                    "minMs": round(min(times) * 1000, 3),
                    "usPerMessage": round(us_per_message, 3),
                    "fullGcPerVisit": statistics.median(collections),
                }
            )
    verdicts: dict[str, Any] = {}
    for name, costs in per_message.items():
        if 1_000 in costs and 100_000 in costs:
            ratio = costs[100_000] / costs[1_000]
            verdicts[name] = {"ratio100kTo1k": round(ratio, 2), "linear": ratio <= 3.0}
    return {
        "benchmark": "window",
        "keepLastToolResults": 2,
        "results": rows,
        "linearity": verdicts,
        "linear": all(v["linear"] for v in verdicts.values()) if verdicts else None,
    }


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    print(json.dumps(await measure(args.sizes), indent=2))


if __name__ == "__main__":
    anyio.run(main)
