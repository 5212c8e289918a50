"""What model calls cost and what budgets do (docs/cost.md): priced from reported usage on the
receipt's basis, unknown (never zero) without usage or a price, budgets per turn and per day
that warn or halt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

import afp_runtime as afp
from afp_runtime.errors import AgentDefinitionError
from afp_runtime.records import BudgetExceeded, CostFigures, CostSpent, TurnEnded
from afp_runtime.testing import FakeClock, answer, call, capture_logs, tool_reply
from afp_runtime.tools import halted_text

PRICES = {"mock-main": afp.cost.Price(input=2e-6, output=1e-5, cache_read=5e-7)}
ran: list[str] = []
UNKNOWN_ONLY = {"amount": 0.0, "priced": 0, "unknown": 1, "total": None}


@afp.tool
def ship(order: str) -> str:
    """Ship an order."""
    ran.append(order)
    return f"{order} shipped"


def used(prompt: int, completion: int, cache_read: int | None = None) -> afp.Usage:
    return afp.Usage(input=prompt, output=completion, cache_read=cache_read)


def agent(replies: list[afp.ModelReply], **options: Any) -> afp.Agent:
    model = afp.ScriptedModel(replies, model="mock-main")
    return afp.Agent("shop", model, tools=[ship], **{"pricing": PRICES, **options})


async def test_each_call_is_priced_from_its_usage(tmp_path: Path) -> None:
    """Prompt tokens less cache reads at the input price, cache reads at theirs, output at
    its own; the turn's and the run's figures add the calls up."""
    shopper = agent(
        [
            tool_reply(call("c1", "ship", order="7"), usage=used(1000, 100, cache_read=400)),
            answer("done", usage=used(1200, 20)),
        ]
    )
    events: list[afp.Event] = []
    async with afp.open(tmp_path / "afp.db") as store:
        async with store.stream(shopper, "ship order 7") as stream:
            events = [event async for event in stream]
        result = stream.result
        (run,) = await store.runs(shopper)
    first = 600 * 2e-6 + 400 * 5e-7 + 100 * 1e-5
    second = 1200 * 2e-6 + 20 * 1e-5
    spent = [msgspec.to_builtins(e.payload) for e in events if isinstance(e.payload, CostSpent)]
    assert [p["amount"] for p in spent] == pytest.approx([first, second])
    assert spent[-1]["turn"] == {
        "amount": pytest.approx(first + second),
        "priced": 2,
        "unknown": 0,
        "total": pytest.approx(first + second),
    }
    assert result.cost is not None and result.cost.total == pytest.approx(first + second)
    assert run.cost == result.cost
    (ended,) = [e.payload for e in events if isinstance(e.payload, TurnEnded)]
    assert isinstance(ended.cost, CostFigures) and ended.cost.amount == pytest.approx(
        first + second
    )


async def test_unreported_usage_is_unknown_never_zero(tmp_path: Path) -> None:
    """A call that reports no usage, or names a model with no price, has an unknown cost, and
    the turn's total is unknown too."""
    shopper = agent([tool_reply(call("c1", "ship", order="7")), answer("done", usage=used(9, 1))])
    async with afp.open(tmp_path / "afp.db") as store, store.stream(shopper, "ship") as stream:
        events = [event async for event in stream]
    spent = [msgspec.to_builtins(e.payload) for e in events if isinstance(e.payload, CostSpent)]
    assert spent[0] == {
        "epoch": 1,
        "provider": "scripted",
        "model": "mock-main",
        "unknown": "usage-unreported",
        "turn": {"amount": 0.0, "priced": 0, "unknown": 1, "total": None},
        "day": {
            "day": spent[0]["day"]["day"],
            "amount": 0.0,
            "priced": 0,
            "unknown": 1,
            "total": None,
        },
    }
    assert spent[1]["turn"] == {
        "amount": pytest.approx(9 * 2e-6 + 1e-5),
        "priced": 1,
        "unknown": 1,
        "total": None,
    }
    result = stream.result
    assert result.cost is not None and result.cost.unknown == 1 and result.cost.total is None
    other = afp.Agent(
        "other",
        afp.ScriptedModel([answer("hi", usage=used(5, 1))], model="unpriced"),
        pricing=PRICES,
    )
    async with afp.open(tmp_path / "afp.db") as store:
        priced = await store.run(other, "hello")
    assert priced.cost is not None and priced.cost.total is None and priced.cost.amount == 0


async def test_cache_reads_without_a_cache_price_are_unknown(tmp_path: Path) -> None:
    """Cache tokens with no rate for them are not guessed at: the call's cost is unknown."""
    bare = {"mock-main": afp.cost.Price(input=1e-6, output=1e-6)}
    shopper = afp.Agent(
        "shop",
        afp.ScriptedModel([answer("hi", usage=used(100, 1, cache_read=50))], model="mock-main"),
        pricing=bare,
    )
    async with afp.open(tmp_path / "afp.db") as store, store.stream(shopper, "hello") as stream:
        events = [event async for event in stream]
    (spent,) = [msgspec.to_builtins(e.payload) for e in events if isinstance(e.payload, CostSpent)]
    assert spent["unknown"] == "no-cache-read-price"


async def test_a_warn_budget_warns_once_and_the_turn_goes_on(tmp_path: Path) -> None:
    """Passing a warn budget emits ``budget.exceeded`` and logs a warning, once; the turn
    still answers."""
    shopper = agent(
        [
            tool_reply(call("c1", "ship", order="1"), usage=used(1000, 0)),
            tool_reply(call("c2", "ship", order="2"), usage=used(1000, 0)),
            answer("done", usage=used(1000, 0)),
        ],
        budgets=[afp.cost.Budget(limit=0.003, per="turn", action="warn")],
    )
    with capture_logs() as logs:
        async with afp.open(tmp_path / "afp.db") as store, store.stream(shopper, "x") as stream:
            events = [event async for event in stream]
    exceeded = [
        msgspec.to_builtins(e.payload) for e in events if isinstance(e.payload, BudgetExceeded)
    ]
    assert len(exceeded) == 1 and exceeded[0]["action"] == "warn"
    assert exceeded[0]["spent"]["amount"] == pytest.approx(0.004)
    assert [entry["event"] for entry in logs].count("budget exceeded") == 1
    assert stream.result.status == "answered"


async def test_a_halt_budget_stops_the_turn_before_its_tools_and_without_a_wrap_up(
    tmp_path: Path,
) -> None:
    """Past a halting turn budget the reply's calls are answered not-run, no further model
    call is made, and the turn ends ``halted`` naming the budget; the next turn runs."""
    ran.clear()
    shopper = agent(
        [
            tool_reply(call("c1", "ship", order="1"), usage=used(1000, 0)),
            tool_reply(call("c2", "ship", order="2"), usage=used(1000, 0)),
            answer("next turn", usage=used(10, 1)),
        ],
        budgets=[afp.cost.Budget(limit=0.003, per="turn", action="halt")],
    )
    async with afp.open(tmp_path / "afp.db") as store:
        halted = await store.run(shopper, "ship both")
        later = await store.run(shopper, "anything else?")
        view = await store.served(later.run_id, 1)
    assert halted.status == "halted" and halted.answer is None
    assert halted.error_kind == "budget-turn" and "0.003" in (halted.error or "")
    assert ran == ["1"]
    assert halted.runs[0].epochs == 2
    tool_texts = [m.content for m in view.messages.as_sent if m.role == "tool"]
    assert tool_texts[0] == "1 shipped"
    assert tool_texts[1] == halted_text("ship", "budget-turn")
    assert later.status == "answered"


async def test_a_day_budget_spans_turns_restarts_and_ends_at_midnight(tmp_path: Path) -> None:
    """Today's spend carries across turns and a reopened store: once past a halting day
    budget a new turn halts before calling the model; the next UTC day starts afresh."""
    clock = FakeClock(start_ms=1_750_000_000_000)  # 2025-06-15 15:06 UTC
    replies = [answer("one", usage=used(2000, 0)), answer("two", usage=used(10, 0))]
    model = afp.ScriptedModel(replies, model="mock-main")
    budgets = [afp.cost.Budget(limit=0.003, per="day", action="halt")]
    shopper = afp.Agent("shop", model, pricing=PRICES, budgets=budgets)
    async with afp.open(tmp_path / "afp.db", clock=clock) as store:
        first = await store.run(shopper, "one")
    async with afp.open(tmp_path / "afp.db", clock=clock) as store:
        blocked = await store.run(shopper, "two")
        clock.advance(12 * 3600)
        tomorrow = await store.run(shopper, "two again")
    assert first.status == "answered"
    assert blocked.status == "halted" and blocked.error_kind == "budget-day"
    assert blocked.runs[0].epochs == 0
    assert tomorrow.status == "answered" and tomorrow.answer == "two"


def test_definitions_refuse_bad_prices_and_budgets_without_prices() -> None:
    """A negative price, a zero limit, and budgets with no pricing name what is wrong."""
    model = afp.ScriptedModel([answer("hi")], model="mock-main")
    with pytest.raises(AgentDefinitionError, match=r"pricing\.mock-main\.output"):
        afp.Agent("a", model, pricing={"mock-main": afp.cost.Price(input=1.0, output=-1.0)})
    with pytest.raises(AgentDefinitionError, match=r"budgets\[0\]\.limit"):
        afp.Agent("a", model, pricing=PRICES, budgets=[afp.cost.Budget(limit=0, per="turn")])
    with pytest.raises(AgentDefinitionError, match="budgets need pricing"):
        afp.Agent("a", model, budgets=[afp.cost.Budget(limit=1, per="turn")])


def test_pricing_and_budgets_from_an_agents_file(tmp_path: Path) -> None:
    """The file's ``[pricing]`` table prices every agent that sets none; an agent's own wins."""
    (tmp_path / "agents.toml").write_text(
        """
[pricing."demo"]
input = 0.000001
output = 0.000002
cacheRead = 0.0000001

[[agents]]
id = "ops"
model = {provider = "scripted", model = "demo", script = "afp_runtime.demo:demo_script"}
budgets = [{limit = 0.5, per = "day", action = "halt"}]

[[agents]]
id = "own"
model = {provider = "scripted", model = "demo", script = "afp_runtime.demo:demo_script"}
pricing = {"demo" = {input = 0.5, output = 0.5}}
"""
    )
    ops, own = afp.load_agents(tmp_path / "agents.toml")
    assert ops.pricing["demo"].cache_read == 1e-7
    assert ops.budgets == (afp.cost.Budget(limit=0.5, per="day", action="halt"),)
    assert own.pricing["demo"].input == 0.5


async def test_summarizer_calls_are_priced_into_the_turn(tmp_path: Path) -> None:
    """A summarize-oldest fold's summarizer call is priced at its own model's rates and counts
    toward the turn's spend."""
    prices = {**PRICES, "cheap": afp.cost.Price(input=1e-7, output=1e-7)}
    summarizer = afp.ScriptedModel(
        [answer("Earlier: order 1 shipped.", usage=used(500, 50))], model="cheap"
    )
    window = afp.summarize_oldest(
        threshold_tokens=100, summarizer=summarizer, model="cheap", keep_recent_turns=1
    )
    shopper = agent(
        [
            tool_reply(call("c1", "ship", order="1"), usage=used(200, 10)),
            tool_reply(call("c2", "ship", order="2"), usage=used(300, 10)),
            answer("done", usage=used(300, 10)),
        ],
        window=window,
        pricing=prices,
    )
    async with afp.open(tmp_path / "afp.db") as store, store.stream(shopper, "go") as stream:
        events = [event async for event in stream]
    spent = [msgspec.to_builtins(e.payload) for e in events if isinstance(e.payload, CostSpent)]
    summarized = [p for p in spent if p["model"] == "cheap"]
    assert summarized and summarized[0]["amount"] == pytest.approx(550 * 1e-7)
    main = sum(p["amount"] for p in spent if p["model"] == "mock-main")
    total = stream.result.cost
    assert total is not None
    assert total.amount == pytest.approx(main + 550 * 1e-7 * len(summarized))
