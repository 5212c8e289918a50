"""Findings in the loop's stages (armed agents only): peeling declarations off a batch and an
answer, filing their rows through the run's fold, and the events that go with them.

An unarmed agent never reaches this module: its calls are not peeled and nothing is filed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime.findings import (
    MISSING,
    BasisRow,
    ConflictRow,
    LedgerRow,
    StandingRow,
    answer_rows,
    declaration_rows,
    file_answer,
    file_batch,
    judged_name_of,
    known_ids,
    peel,
    peel_answer,
    rows_to_wire,
)
from afp_runtime.messages import ToolCall

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


def peel_batch(run: Run, calls: Sequence[ToolCall]) -> tuple[tuple[ToolCall, ...], list[Any]]:
    """The calls as tools see them (``_findings`` removed) and the rows they file, in the order
    of docs/findings.md#order-of-rows-in-a-batch; the assistant message keeps the model's arguments
    verbatim."""
    if run.d.findings is None:
        return tuple(calls), []
    declarations = []
    clean = []
    known = known_ids(run.history, run.fold)
    name_of = judged_name_of(run.history, run.fold)
    for call in calls:
        if call.name not in run.d.tools_by_name:
            # A tool the agent does not have was never decorated: not peeled, nothing filed
            # (docs/findings.md#peeling-before-the-tool-sees-it); the call is answered unknown-tool.
            clean.append(call)
            continue
        args, raw = peel(call.args)
        clean.append(msgspec.structs.replace(call, args=args) if raw is not MISSING else call)
        if raw is MISSING:
            continue
        declarations.append(
            declaration_rows(
                raw,
                tool_call_id=call.id,
                tool_name=call.name,
                turn=run.conv.turn,
                iteration=run.iteration,
                known_ids=known,
                name_of=name_of,
            )
        )
    if not declarations:
        return tuple(clean), []
    filed = file_batch(run.fold, declarations)
    run.fold = filed.fold
    _emit_rows(run, filed.rows)
    return tuple(clean), list(filed.rows)


def peel_final_answer(run: Run, content: str) -> tuple[str, list[Any]]:
    """The answer as delivered (``_findings`` removed) and the standing rows it files."""
    if run.d.findings is None:
        return content, []
    delivered, raw = peel_answer(content)
    if raw is MISSING:
        return content, []
    answer = answer_rows(
        raw,
        turn=run.conv.turn,
        iteration=run.iteration,
        known_ids=known_ids(run.history, run.fold),
        name_of=judged_name_of(run.history, run.fold),
    )
    filed = file_answer(run.fold, answer)
    run.fold = filed.fold
    _emit_rows(run, filed.rows)
    return delivered, list(filed.rows)


def ledger_writes(rows: Sequence[LedgerRow]) -> list[dict[str, Any]]:
    """Rows in wire form, for the bundle's ``findingsLedger`` append and the store."""
    return list(rows_to_wire(rows))


def _emit_rows(run: Run, rows: Sequence[LedgerRow]) -> None:
    """docs/findings.md#events: identities, enums and counts only; never values or texts. Conflict
    rows follow the standing row that caused them and are reported on its event."""
    for index, row in enumerate(rows):
        if isinstance(row, BasisRow):
            payload: dict[str, Any] = {
                "toolName": row.tool_name,
                "toolCallId": row.tool_call_id,
                "turn": row.turn,
                "iteration": row.iteration,
            }
            if row.basis is not msgspec.UNSET:
                payload["basis"] = row.basis
            if row.expect is not msgspec.UNSET:
                payload["expect"] = row.expect
            if row.proposition is not msgspec.UNSET:
                payload["hasProposition"] = True
            if row.malformed is not msgspec.UNSET:
                payload["malformed"] = row.malformed
            run.emit("findings.declared", payload)
        elif isinstance(row, StandingRow):
            payload = {
                "toolCallId": row.tool_call_id,
                "turn": row.turn,
                "iteration": row.iteration,
                "standing": row.standing,
                "declaredOn": "answer" if isinstance(row.declared_on, str) else "tool-call",
                "assertionCount": len(row.assertions),
            }
            if row.tool_name is not msgspec.UNSET:
                payload["toolName"] = row.tool_name
            if row.unknown_id is not msgspec.UNSET:
                payload["unknownId"] = True
            conflicts = []
            for later in rows[index + 1 :]:
                if not isinstance(later, ConflictRow):
                    break
                conflicts.append(list(later.key))
            if conflicts:
                payload["conflictKeys"] = conflicts
            run.emit("findings.standing", payload)
