"""The issue's acceptance property at the pure level: over several consecutive visits of an
armed agent's window, an admitted ledger-fact pin never leaves except on a stand-down visit,
and every evicted tool result is reported in ``droppedStandings`` with exactly the ledger's
standing (docs/findings.md#which-standing-a-turn-has, docs/findings.md#keeping-facts-in-the-window,
docs/findings.md#evicted-results-and-their-standings; docs/window.md#pins,
docs/window.md#stand-down)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.findings import LedgerFold, StandingRow, fold_ledger
from afp_runtime.findings.fold import dropped_standings
from afp_runtime.findings.fold import turn_standing_of as real_turn_standing_of
from afp_runtime.messages import Message
from afp_runtime.window import (
    DroppedStanding,
    Standing,
    VisitOutcome,
    WindowStrategy,
    sliding_window,
    visit_window,
)
from afp_runtime.window.pins import ledger_fact_pins
from afp_runtime.window.turns import Turn, current_request_index, segment
from tests.findings._build import standing
from tests.window._build import ITERATION, NOW_MS, RUN_ID, TASK, A, Dropper, T, U, origins
from tests.window._gen import TOOL_NAMES, windows

STANDINGS: tuple[Standing, ...] = ("fact", "open", "noise", "ruled-out")
FAMILY = frozenset({"last-tool-result", "ledger-fact"})
RANK: dict[Standing | None, int] = {"fact": 4, "open": 3, None: 2, "ruled-out": 1, "noise": 0}
UNKNOWN_ID = "zz"


def settled(ident: str) -> list[Message]:
    """A call answered without running: its result is ``not_dispatched`` and names no tool."""
    result = Message(role="tool", content="not run", tool_call_id=ident, not_dispatched=True)
    return [A([ident], names=["look"]), result]


@st.composite
def new_round(draw: st.DrawFn, ids: Iterator[str]) -> list[Message]:
    """What the loop appends between two visits: a round, a batch, a settled call or nothing."""
    kind = draw(st.sampled_from(("round", "round", "batch", "settled", "none")))
    text = draw(st.sampled_from(("ok", "r" * 40, "x" * 300)))
    if kind == "round":
        ident, name = next(ids), draw(st.sampled_from(TOOL_NAMES))
        return [A([ident], names=[name]), T(ident, text, name)]
    if kind == "batch":
        idents = [next(ids) for _ in range(draw(st.integers(2, 3)))]
        names = [draw(st.sampled_from(TOOL_NAMES)) for _ in idents]
        return [A(idents, names=names)] + [
            T(i, text, n) for i, n in zip(idents, names, strict=True)
        ]
    if kind == "settled":
        return settled(next(ids))
    return []


def result_ids(window: Sequence[Message]) -> list[str]:
    """Ids of the window's tool results, in window order (settled ones included)."""
    return [m.tool_call_id for m in window if m.role == "tool" and m.tool_call_id]


@st.composite
def standing_rows(draw: st.DrawFn, seen: Sequence[str], *, max_size: int) -> list[StandingRow]:
    """Random standing rows on results ever seen (and on an id nobody has)."""
    pool = [*seen, UNKNOWN_ID]
    picks = draw(
        st.lists(st.tuples(st.sampled_from(pool), st.sampled_from(STANDINGS)), max_size=max_size)
    )
    return [standing(ident, judged) for ident, judged in picks]


def independent_turn_standing(turn: Turn, ledger: Mapping[str, Standing]) -> Standing | None:
    """docs/findings.md#which-standing-a-turn-has rank over a turn's judged, dispatched results,
    read from a plain last-wins dict."""
    best: Standing | None = None
    best_rank = -1
    for message in turn.messages:
        if message.role != "tool" or not message.tool_call_id or message.not_dispatched:
            continue
        current = ledger.get(message.tool_call_id)
        if RANK[current] > best_rank:
            best, best_rank = current, RANK[current]
    return best


def expected_dropped(
    evicted: Sequence[Message], ledger: Mapping[str, Standing]
) -> tuple[DroppedStanding, ...]:
    """docs/findings.md#evicted-results-and-their-standings read directly: one entry per evicted
    result; no standing when undeclared or settled."""
    entries = []
    for message in evicted:
        if message.role != "tool" or not message.tool_call_id:
            continue
        judged = None if message.not_dispatched else ledger.get(message.tool_call_id)
        entries.append(
            DroppedStanding(tool_call_id=message.tool_call_id)
            if judged is None
            else DroppedStanding(tool_call_id=message.tool_call_id, standing=judged)
        )
    return tuple(entries)


def blocking(filed: Sequence[tuple[int, frozenset[str]]]) -> bool:
    """docs/findings.md#ceiling-precedence-and-stand-down read directly: each of the last two filed
    visits removed 0 and names the family."""
    last = filed[-2:]
    return len(last) == 2 and all(
        removed == 0 and not reasons.isdisjoint(FAMILY) for removed, reasons in last
    )


async def visit(
    strategy: WindowStrategy,
    window: Sequence[Message],
    fold: LedgerFold,
    *,
    prior: Any,
    fact_limit: int,
    recency: int,
) -> VisitOutcome | None:
    """One armed visit, with ``turn_standing`` bound over the fold as the loop binds it."""
    return await visit_window(
        strategy,
        history=tuple(window),
        said=TASK,
        measured=None,
        iteration=ITERATION,
        run_id=RUN_ID,
        agent_model="agent-model",
        provider_name="scripted",
        now_ms=NOW_MS,
        origins=origins(len(window)),
        prior=prior,
        keep_last_tool_results=recency,
        fact_limit=fact_limit,
        turn_standing=partial(real_turn_standing_of, standing_of=fold.standing_of),
    )


def check_fact_pins_hold(
    window: Sequence[Message],
    outcome: VisitOutcome,
    fold: LedgerFold,
    ledger: Mapping[str, Standing],
    fact_limit: int,
) -> None:
    """A fact turn among the admitted pins keeps every message, unless the pin stood down."""
    turns = segment(window)
    anchor = current_request_index(window, TASK)
    bound = partial(real_turn_standing_of, standing_of=fold.standing_of)
    candidates = ledger_fact_pins(turns, window, bound, anchor)
    for pin in candidates:
        assert independent_turn_standing(turns[pin.turn_index], ledger) == "fact"
    evicted = {eviction.index for eviction in outcome.evictions}
    record = outcome.record
    pinned = record.ledger_facts
    if outcome.facts_stood_down:
        assert pinned is not msgspec.UNSET and pinned.stand_down is True and not pinned.pinned
        return
    # The newest `fact_limit` candidates are each either free (inside the keep window) or
    # admitted under the ceiling; either way none of their messages may leave.
    held = {pin.turn_index for pin in candidates[:fact_limit]}
    if pinned is not msgspec.UNSET:
        listed = {p.turn_index for p in pinned.pinned}
        assert listed <= {pin.turn_index for pin in candidates}
        assert len(listed) <= fact_limit
        held |= listed
    for index in held:
        turn = turns[index]
        span = range(turn.start, turn.start + turn.length)
        assert evicted.isdisjoint(span), f"fact turn {index} left without a stand-down"


def check_dropped(
    window: Sequence[Message], outcome: VisitOutcome, fold: LedgerFold, ledger: Mapping[str, Any]
) -> None:
    """Every evicted tool result is listed, in eviction order, with exactly its standing."""
    assert outcome.evicted == tuple(window[e.index] for e in outcome.evictions)
    dropped = dropped_standings(outcome.evicted, fold.standing_of)
    assert dropped == expected_dropped(outcome.evicted, ledger)
    listed = [entry.tool_call_id for entry in dropped]
    assert listed == [
        m.tool_call_id for m in outcome.evicted if m.role == "tool" and m.tool_call_id
    ]
    for entry in dropped:
        wire = msgspec.to_builtins(entry)
        judged = ledger.get(entry.tool_call_id)
        settled_here = any(
            m.not_dispatched for m in outcome.evicted if m.tool_call_id == entry.tool_call_id
        )
        if judged is None or settled_here:
            assert "standing" not in wire  # absent, never "open" or null
        else:
            assert wire["standing"] == judged


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A starting window and ledger, the dials, and the steps between consecutive visits."""
    base = draw(windows(max_turns=8))
    extra = itertools.count()
    fresh = (f"n{i}" for i in extra)
    start = [U(TASK)] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 4))):
        start += draw(new_round(fresh))
    window = start + base if draw(st.booleans()) else [*base, *start]
    seen = result_ids(window)
    rows = draw(standing_rows(seen, max_size=12))
    steps = []
    for _ in range(draw(st.integers(2, 7))):
        appended = draw(new_round(fresh))
        seen = seen + result_ids(appended)
        steps.append((appended, draw(standing_rows(seen, max_size=3))))
    return {
        "window": window,
        "rows": rows,
        "steps": steps,
        "keep": draw(st.integers(1, 3)),
        "fact_limit": draw(st.integers(0, 4)),
        "recency": draw(st.integers(0, 2)),
        "sliding": draw(st.booleans()),
    }


@settings(max_examples=300, deadline=None)
@given(case=scenarios())
async def test_admitted_facts_stay_and_every_eviction_reports_its_standing(
    case: dict[str, Any],
) -> None:
    """docs/findings.md#keeping-facts-in-the-window (cases 11, 14, 15 generalised):
    over consecutive visits, an admitted fact turn leaves only on a stand-down visit, stand-down
    happens exactly when the pin family blocked the last two filed visits, and droppedStandings
    carries exactly the ledger's standings (absent when undeclared or settled)."""
    keep, fact_limit, recency = case["keep"], case["fact_limit"], case["recency"]
    strategy: WindowStrategy = (
        sliding_window(keep_recent_turns=keep) if case["sliding"] else Dropper(keep=keep)
    )
    window: list[Message] = list(case["window"])
    fold = fold_ledger(None, case["rows"])
    ledger: dict[str, Standing] = {}
    for row in case["rows"]:
        ledger[row.tool_call_id] = row.standing
    prior: Any = ()
    filed: list[tuple[int, frozenset[str]]] = []
    for appended, rows in [([], []), *case["steps"]]:
        window += appended
        fold = fold_ledger(fold, rows)  # incremental, as the loop passes rows through
        for row in rows:
            ledger[row.tool_call_id] = row.standing
        assert dict(fold.standing_of.items()) == ledger
        expect_stand_down = fact_limit > 0 and blocking(filed)
        outcome = await visit(
            strategy, window, fold, prior=prior, fact_limit=fact_limit, recency=recency
        )
        if outcome is None:
            continue
        assert outcome.facts_stood_down is expect_stand_down
        check_fact_pins_hold(window, outcome, fold, ledger, fact_limit)
        check_dropped(window, outcome, fold, ledger)
        record = outcome.record
        filed.append((record.removed_message_count, frozenset(r.reason for r in record.refusals)))
        prior = outcome.prior
        if not isinstance(outcome.window, msgspec.UnsetType):
            window = list(outcome.window)


@settings(max_examples=150, deadline=None)
@given(case=scenarios())
async def test_an_unarmed_visit_files_no_fact_pin_whatever_the_limit(case: dict[str, Any]) -> None:
    """docs/findings.md#the-keep-ledger-facts-dial, case 21: without ``turn_standing``
    the same visits carry no ``ledgerFacts`` and never stand the fact pin down, whatever the fact
    limit."""
    window: list[Message] = list(case["window"])
    prior: Any = ()
    for appended, _ in [([], []), *case["steps"]]:
        window += appended
        outcome = await visit_window(
            Dropper(keep=case["keep"]),
            history=tuple(window),
            said=TASK,
            measured=None,
            iteration=ITERATION,
            run_id=RUN_ID,
            agent_model="agent-model",
            provider_name="scripted",
            now_ms=NOW_MS,
            origins=origins(len(window)),
            prior=prior,
            keep_last_tool_results=case["recency"],
            fact_limit=case["fact_limit"],
            turn_standing=None,
        )
        assert outcome is not None
        assert outcome.record.ledger_facts is msgspec.UNSET
        assert outcome.facts_stood_down is False
        assert "ledger-fact" not in {r.reason for r in outcome.record.refusals}
        prior = outcome.prior
        if not isinstance(outcome.window, msgspec.UnsetType):
            window = list(outcome.window)
