"""Findings as a loop extension (docs/findings.md#arming-an-agent): an armed agent's requests
carry the findings instruction, the ledger piece and the ``_findings`` argument; its calls and
answers are peeled, their rows filed through the run's fold, and the window pins by standing.

An unarmed agent has no findings extension: its calls are not peeled and nothing is filed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import msgspec

from afp_runtime.extensions import (
    At,
    Event,
    Filed,
    Piece,
    RunExtension,
    RunStart,
    Seeded,
    SeedInput,
)
from afp_runtime.findings.config import FindingsConfig
from afp_runtime.findings.declare import (
    MISSING,
    answer_rows,
    declaration_rows,
    peel,
    peel_answer,
)
from afp_runtime.findings.filing import (
    file_answer,
    file_batch,
    judged_name_of,
    known_ids,
)
from afp_runtime.findings.fold import (
    EMPTY_FOLD,
    LedgerFold,
    dropped_standings,
    fold_ledger,
    turn_standing_of,
)
from afp_runtime.findings.rows import (
    BasisRow,
    ConflictRow,
    LedgerRow,
    StandingRow,
    rows_to_wire,
)
from afp_runtime.findings.serve import decorate_schema, offer_ids, serve_findings
from afp_runtime.messages import Message, ToolCall, ToolSchema
from afp_runtime.records import FindingsDeclared, FindingsStanding
from afp_runtime.tools import Tool
from afp_runtime.window import VisitOutcome


class FindingsExtension:
    """The findings extension of an armed agent."""

    name = "findings"

    def __init__(self, config: FindingsConfig) -> None:
        self.config = config

    def shape(self) -> Any:
        return self.config

    def start(self, run: RunStart) -> FindingsRun:
        return FindingsRun(self.config, run)


class FindingsRun(RunExtension):
    """One armed run: the ledger fold, rebuilt once at seed, then updated from the rows each
    stage files (docs/architecture.md#decision-13-folds-are-incremental)."""

    # The served schema carries each request's offer, so it changes between calls.
    schemas_vary = True

    def __init__(self, config: FindingsConfig, run: RunStart) -> None:
        self.config = config
        self.tools_by_name = run.tools_by_name
        self.fold: LedgerFold = EMPTY_FOLD

    async def seed(self, seed: SeedInput) -> Seeded:
        # The one full fold of the run; every later row passes through it once.
        self.fold = fold_ledger(None, seed.ledger)
        return Seeded()

    def serve(
        self, pieces: list[Piece], messages: tuple[Message, ...]
    ) -> tuple[list[Piece], tuple[Message, ...]]:
        served = serve_findings(messages, self.fold, self.config)
        pieces = [*pieces, {"slot": "findings", "source": "findings", "text": served.instruction}]
        if served.ledger_piece is not None:
            pieces.append({"slot": "ledger", "source": "findings", "text": served.ledger_piece})
        return pieces, tuple(served.messages)

    def serve_tools(
        self, tools: Sequence[Tool], schemas: tuple[ToolSchema, ...], history: Sequence[Message]
    ) -> tuple[ToolSchema, ...]:
        # Every served schema gains the optional _findings argument
        # (docs/findings.md#how-the-schema-is-served); the registry's schemas are never changed.
        offer = offer_ids(history, self.fold.standing_of)
        return tuple(
            msgspec.structs.replace(
                schema, input_schema=decorate_schema(schema.input_schema, offer)
            )
            for schema in schemas
        )

    def turn_standing(self) -> Any:
        return functools.partial(turn_standing_of, standing_of=self.fold.standing_of)

    def after_visit(self, outcome: VisitOutcome) -> VisitOutcome:
        if not outcome.evicted:
            return outcome
        # Each evicted result with the ledger's standing
        # (docs/findings.md#evicted-results-and-their-standings).
        dropped = dropped_standings(outcome.evicted, self.fold.standing_of)
        if not dropped:
            return outcome
        record = msgspec.structs.replace(outcome.record, dropped_standings=dropped)
        return msgspec.structs.replace(outcome, record=record)

    def peel(
        self, calls: Sequence[ToolCall], at: At, history: Sequence[Message]
    ) -> tuple[tuple[ToolCall, ...], Filed]:
        """The calls as tools see them (``_findings`` removed) and the rows they file, in the
        order of docs/findings.md#order-of-rows-in-a-batch."""
        declarations = []
        clean = []
        known = known_ids(history, self.fold)
        name_of = judged_name_of(history, self.fold)
        for call in calls:
            # A tool the agent does not have was never decorated: not peeled, nothing filed
            # (docs/findings.md#peeling-before-the-tool-sees-it); it is answered unknown-tool.
            args, raw = peel(call.args) if call.name in self.tools_by_name else (call.args, MISSING)
            if raw is MISSING:
                clean.append(call)
                continue
            clean.append(msgspec.structs.replace(call, args=args))
            declarations.append(
                declaration_rows(
                    raw,
                    tool_call_id=call.id,
                    tool_name=call.name,
                    turn=at.turn,
                    iteration=at.iteration,
                    known_ids=known,
                    name_of=name_of,
                )
            )
        if not declarations:
            return tuple(clean), Filed()
        filed = file_batch(self.fold, declarations)
        self.fold = filed.fold
        return tuple(clean), _filed(filed.rows)

    def strip(self, call: ToolCall) -> ToolCall:
        return msgspec.structs.replace(call, args=peel(call.args)[0])

    def answer(self, content: str, at: At, history: Sequence[Message]) -> tuple[str, Filed]:
        """The answer as delivered (``_findings`` removed) and the standing rows it files."""
        delivered, raw = peel_answer(content)
        if raw is MISSING:
            return content, Filed()
        answer = answer_rows(
            raw,
            turn=at.turn,
            iteration=at.iteration,
            known_ids=known_ids(history, self.fold),
            name_of=judged_name_of(history, self.fold),
        )
        filed = file_answer(self.fold, answer)
        self.fold = filed.fold
        return delivered, _filed(filed.rows)


def _filed(rows: Sequence[LedgerRow]) -> Filed:
    return Filed(rows=rows_to_wire(rows), events=_events(rows))


def _events(rows: Sequence[LedgerRow]) -> list[Event]:
    """docs/findings.md#events: identities, enums and counts only; never values or texts. Conflict
    rows follow the standing row that caused them and are reported on its event."""
    events: list[Event] = []
    for index, row in enumerate(rows):
        if isinstance(row, BasisRow):
            events.append(
                FindingsDeclared(
                    tool_name=row.tool_name,
                    tool_call_id=row.tool_call_id,
                    turn=row.turn,
                    iteration=row.iteration,
                    basis=row.basis,
                    expect=row.expect,
                    has_proposition=True if row.proposition is not msgspec.UNSET else msgspec.UNSET,
                    malformed=row.malformed,
                )
            )
        elif isinstance(row, StandingRow):
            conflicts: list[list[str]] = []
            for later in rows[index + 1 :]:
                if not isinstance(later, ConflictRow):
                    break
                conflicts.append(list(later.key))
            events.append(
                FindingsStanding(
                    tool_call_id=row.tool_call_id,
                    turn=row.turn,
                    iteration=row.iteration,
                    standing=row.standing,
                    declared_on="answer" if isinstance(row.declared_on, str) else "tool-call",
                    assertion_count=len(row.assertions),
                    tool_name=row.tool_name,
                    unknown_id=True if row.unknown_id is not msgspec.UNSET else msgspec.UNSET,
                    conflict_keys=conflicts or msgspec.UNSET,
                )
            )
    return events
