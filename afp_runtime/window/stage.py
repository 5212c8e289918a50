"""The pure part of the window stage: one visit, from guards to a validated, stamped record
(docs/window.md#visit-pipeline steps 3-13), and the wire form of records
(docs/window.md#record-schemas).

The loop reads committed state, calls ``visit_window`` and commits what it returns; nothing here
reads a clock, a store or the ledger. ``prior`` is the turn's last two filed records (oldest
first), as records or ``PriorVisit`` summaries; the outcome carries the updated pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, get_args

import msgspec

from afp_runtime.errors import WindowConfigError, WindowStrategyError
from afp_runtime.messages import Message, Usage
from afp_runtime.window.folds import FoldedSpan
from afp_runtime.window.names import CallNames, call_names, dropped_tool_names
from afp_runtime.window.observations import LedgerFactPin, ToolResultPin, WindowObservations
from afp_runtime.window.pins import ledger_fact_pins, tool_result_pins
from afp_runtime.window.plan import Guards
from afp_runtime.window.records import CUSTOM_FIELDS, BuiltinRecord, CustomRecord, WindowRecord
from afp_runtime.window.standdown import (
    FACT_PIN_REASONS,
    RECENCY_PIN_REASONS,
    PriorVisit,
    pin_is_blocking,
    remember,
    stand_down_block,
)
from afp_runtime.window.turns import Turn, current_request_index, segment
from afp_runtime.window.validate import validate_result
from afp_runtime.window.visit import (
    BudgetPressure,
    Eviction,
    MessageOrigin,
    Rebase,
    Spend,
    TurnStanding,
    WindowResult,
    WindowStrategy,
    WindowVisit,
)


class VisitOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What an engaged visit leaves for the loop to commit and report.

    Attributes:
        record: the strategy's record with the stage keys stamped (docs/window.md#visit-pipeline
        step 10). window: the new window, or UNSET when it is unchanged.
        rebase: how the new window relates to the old one (UNSET with no new window).
        evictions: one per removed pre-change index, ascending.
        evicted: the pre-change messages at those indexes, in the same order.
        folded: spans to append to ``foldedSpans``.
        budget_pressure: the strategy's budget reading, if it has a budget.
        spend: a billed call the strategy made.
        warning: text to log once per agent.
        stood_down: the recency pin stood down this visit.
        facts_stood_down: the ledger-fact pin stood down this visit.
        prior: the turn's last two filed visits, this one included (oldest first).
    """

    record: WindowRecord
    window: tuple[Message, ...] | msgspec.UnsetType = msgspec.UNSET
    rebase: Rebase | msgspec.UnsetType = msgspec.UNSET
    evictions: tuple[Eviction, ...] = ()
    evicted: tuple[Message, ...] = ()
    folded: tuple[FoldedSpan, ...] = ()
    budget_pressure: BudgetPressure | None = None
    spend: Spend | None = None
    warning: str | None = None
    stood_down: bool = False
    facts_stood_down: bool = False
    prior: tuple[PriorVisit, ...] = ()


def _known(
    window: tuple[Message, ...],
    turns: tuple[Turn, ...] | None,
    names: CallNames | None,
    answered: frozenset[str] | None,
) -> tuple[tuple[Turn, ...], CallNames, frozenset[str]]:
    """The turns, call names and answered call ids of ``window``: as given, else found."""
    if answered is None:
        answered = frozenset(m.tool_call_id for m in window if m.role == "tool" and m.tool_call_id)
    return (
        segment(window) if turns is None else turns,
        call_names(window) if names is None else names,
        answered,
    )


def _recency_limit(keep_last_tool_results: int | bool) -> int:
    """The recency ceiling: ``False`` and ``0`` switch the pin off; ``True`` is refused."""
    value: object = keep_last_tool_results
    if value is False:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WindowConfigError(
            f"keep_last_tool_results must be an int >= 0 or False, not {value!r}",
            option="keep_last_tool_results",
            value=value,
        )
    return value


async def visit_window(
    strategy: WindowStrategy,
    *,
    history: Sequence[Message],
    said: str | None,
    measured: Usage | None,
    iteration: int,
    run_id: str,
    agent_model: str,
    provider_name: str,
    now_ms: int,
    origins: Sequence[MessageOrigin],
    prior: Sequence[WindowRecord | PriorVisit],
    keep_last_tool_results: int | bool,
    paused_tool_call_id: str | None = None,
    paused_check_in: bool = False,
    fact_limit: int = 0,
    turn_standing: TurnStanding | None = None,
    turns: tuple[Turn, ...] | None = None,
    names: CallNames | None = None,
    answered_call_ids: frozenset[str] | None = None,
    chars: int | None = None,
) -> VisitOutcome | None:
    """Run one visit of ``strategy`` over ``history``; None when the strategy did not engage.

    Builds the guards (answered ids, the anchor of ``said``, the pause, the pins of
    docs/window.md#pins unless off or stood down by docs/window.md#stand-down over ``prior``),
    awaits ``strategy.plan``, validates the result
    (docs/window.md#result-validation) and stamps the stage keys on its record:
    ``droppedObservations`` (docs/window.md#the-droppedobservations-key), ``observations`` (the
    stand-down block, else the block of the plans the strategy obtained) and ``ledgerFacts``
    (likewise). Each key is stamped only when present / non-empty.

    The ledger-fact pin is armed only when ``fact_limit > 0`` **and** ``turn_standing`` is
    given (our reading of docs/window.md#visit-pipeline step 5: an unarmed agent has no standing
    callable, so no fact pin and no ``ledgerFacts`` key). ``droppedStandings`` is not stamped here:
    it needs the ledger fold (docs/findings.md#evicted-results-and-their-standings) and is left to
    the findings wiring.

    ``turns``, ``names``, ``answered_call_ids``, ``chars``: known of ``history`` if given.

    Raises:
        WindowStrategyError: the strategy broke a rule (its name is filled in when the error
            came from ``plan_removal``).
        WindowConfigError: ``keep_last_tool_results`` is not an int >= 0 or False.
    """
    window_before = tuple(history)
    turns, names, answered = _known(window_before, turns, names, answered_call_ids)
    anchor = current_request_index(window_before, said)
    pins = _pins(turns, names, anchor, prior, keep_last_tool_results, fact_limit, turn_standing)
    guards = pins.guards(answered, anchor, paused_tool_call_id, paused_check_in, fact_limit)
    visit = WindowVisit(
        history=window_before,
        measured=measured,
        iteration=iteration,
        run_id=run_id,
        agent_model=agent_model,
        provider_name=provider_name,
        now_ms=now_ms,
        guards=guards,
        origins=origins,
        turn_standing=turn_standing,
        turns=turns,
        names=names,
        chars=chars,  # docs/window.md#the-running-index
    )
    result = await _plan(strategy, visit)
    if result is None:
        return None
    validate_result(strategy.name, visit, result)
    evicted = tuple(window_before[e.index] for e in result.evictions)
    record = _stamped(result.record, visit, pins, dropped_tool_names(evicted, names), fact_limit)
    # Every field of the result, with the record as stamped.
    return VisitOutcome(
        **{**msgspec.structs.asdict(result), "record": record},
        evicted=evicted,
        stood_down=pins.stood_down,
        facts_stood_down=pins.facts_stood_down,
        prior=remember(prior, record),
    )


class _Pins(msgspec.Struct, frozen=True, kw_only=True):
    """The pins of one visit (docs/window.md#pins) and whether each stood down."""

    limit: int
    stood_down: bool
    recency: tuple[ToolResultPin, ...]
    armed: bool
    facts_stood_down: bool
    facts: tuple[LedgerFactPin, ...]

    def guards(
        self,
        answered_call_ids: frozenset[str],
        anchor: int | None,
        paused_tool_call_id: str | None,
        paused_check_in: bool,
        fact_limit: int,
    ) -> Guards:
        """The guards of a visit with these pins, given the window's answered call ids."""
        return Guards(
            answered_call_ids=answered_call_ids,
            current_request_index=anchor,
            paused_tool_call_id=paused_tool_call_id,
            paused_check_in=paused_check_in,
            recency_pins=self.recency,
            recency_limit=self.limit if self.recency else 0,
            fact_pins=self.facts,
            fact_limit=fact_limit if self.facts else 0,
        )


def _pins(
    turns: Sequence[Turn],
    names: CallNames,
    anchor: int | None,
    prior: Sequence[WindowRecord | PriorVisit],
    keep_last_tool_results: int | bool,
    fact_limit: int,
    turn_standing: TurnStanding | None,
) -> _Pins:
    """The recency pin unless off or stood down, and the ledger-fact pin when armed
    (docs/window.md#stand-down over ``prior``)."""
    limit = _recency_limit(keep_last_tool_results)
    stood_down = limit > 0 and pin_is_blocking(prior, RECENCY_PIN_REASONS)
    recency = () if limit == 0 or stood_down else tool_result_pins(turns, names, anchor)
    armed = fact_limit > 0 and turn_standing is not None
    facts_stood_down = armed and pin_is_blocking(prior, FACT_PIN_REASONS)
    facts: tuple[LedgerFactPin, ...] = ()
    if armed and not facts_stood_down and turn_standing is not None:
        facts = ledger_fact_pins(turns, names, turn_standing, anchor)
    return _Pins(
        limit=limit,
        stood_down=stood_down,
        recency=recency,
        armed=armed,
        facts_stood_down=facts_stood_down,
        facts=facts,
    )


async def _plan(strategy: WindowStrategy, visit: WindowVisit) -> WindowResult | None:
    """The strategy's plan; an error from ``plan_removal`` gets the strategy's name filled in."""
    try:
        return await strategy.plan(visit)
    except WindowStrategyError as exc:
        if not exc.strategy:
            exc.strategy = strategy.name
            exc.context["strategy"] = strategy.name
        raise


def _stamped(
    record: WindowRecord,
    visit: WindowVisit,
    pins: _Pins,
    dropped: Sequence[str],
    fact_limit: int,
) -> WindowRecord:
    """The record with the stage keys stamped, each only when present / non-empty."""
    stamps: dict[str, Any] = {}
    if dropped:
        stamps["dropped_observations"] = dropped
    observations: WindowObservations | msgspec.UnsetType = (
        stand_down_block(pins.limit) if pins.stood_down else visit.captured_observations
    )
    if observations is not msgspec.UNSET:
        stamps["observations"] = observations
    if pins.armed:
        ledger: WindowObservations | msgspec.UnsetType = (
            stand_down_block(fact_limit) if pins.facts_stood_down else visit.captured_ledger_facts
        )
        if ledger is not msgspec.UNSET:
            stamps["ledger_facts"] = ledger
    return msgspec.structs.replace(record, **stamps) if stamps else record


# --- wire form of records ----------------------------------------------------------------------

_KNOWN_TAGS = frozenset(record.__struct_config__.tag for record in get_args(BuiltinRecord))

_json_encode = msgspec.json.Encoder().encode
_json_decode = msgspec.json.Decoder().decode


def record_to_wire(record: WindowRecord) -> dict[str, Any]:
    """A record as its committed JSON object (camelCase keys, absent fields omitted, arrays as
    lists: exactly what JSON decoding of the committed bytes gives back).

    A custom record's ``extra`` keys are written flat beside the common fields, where
    ``extra`` sits in field order (after ``refusals``, before the stage keys). A typed field
    wins over an ``extra`` key of the same wire name.
    """
    data: dict[str, Any] = _json_decode(_json_encode(record))
    if not isinstance(record, CustomRecord):
        return data
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key == "extra":
            flat.update((k, v) for k, v in value.items() if k not in CUSTOM_FIELDS)
        else:
            flat[key] = value
    return flat


def record_from_wire(data: Mapping[str, Any]) -> WindowRecord:
    """Decode a committed record: a known tag to its class, anything else to ``CustomRecord``.

    A foreign record keeps every key that is not a common field in ``extra``, so
    ``record_to_wire(record_from_wire(d)) == d`` for every record this build wrote. A record
    carrying a built-in tag that does not decode as that built-in (a custom strategy that took
    a built-in name) is kept as a ``CustomRecord`` too. A built-in record decodes into its
    class, so keys its class does not know (written by a newer build) are not kept.

    Raises:
        msgspec.ValidationError: the common fields are missing or mistyped.
    """
    if data.get("strategy") in _KNOWN_TAGS:
        try:
            return msgspec.convert(dict(data), type=BuiltinRecord)
        except msgspec.ValidationError:
            pass
    common = {key: value for key, value in data.items() if key in CUSTOM_FIELDS}
    extra = {key: value for key, value in data.items() if key not in CUSTOM_FIELDS}
    return msgspec.convert({**common, "extra": extra}, type=CustomRecord)
