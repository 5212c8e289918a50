"""The permission gate as a loop extension: it judges every call before dispatch
(docs/permissions.md#in-the-loop)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import CheckpointInvalid
from afp_runtime.extensions import Ask, At, RunExtension, RunStart
from afp_runtime.permissions._rules import Permissions, Verdict
from afp_runtime.records import PermissionRow, ledger_row_to_wire
from afp_runtime.tools import (
    PlannedCall,
    permission_ask_text,
    permission_denied_text,
    unrun_outcome,
)

ROW_KIND = "permission"
"""The ledger row kind of a decision (docs/permissions.md#decision-rows)."""


def validate_permission_row(row: Mapping[str, Any], index: int) -> None:
    """Check a stored decision row, else ``CheckpointInvalid`` naming its index and field."""
    try:
        msgspec.convert(row, PermissionRow)
    except msgspec.ValidationError as exc:
        raise CheckpointInvalid(
            f"findingsLedger[{index}] (permission): {exc}", field=f"findingsLedger[{index}]"
        ) from None


class PermissionsExtension:
    """An agent's permission gate, enabled like any other extension."""

    name = "permissions"

    def __init__(self, permissions: Permissions) -> None:
        self.permissions = permissions

    def shape(self) -> Any:
        return self.permissions.shape()

    def start(self, run: RunStart) -> PermissionsRun:
        return PermissionsRun(self.permissions)


class PermissionsRun(RunExtension):
    """One run's gate: the verdict on each call it would dispatch, filed as a row."""

    def __init__(self, permissions: Permissions) -> None:
        self.permissions = permissions
        self.rows: list[dict[str, Any]] = []
        self.halted: tuple[str, str] | None = None

    async def decide(
        self, planned: Sequence[PlannedCall], at: At
    ) -> tuple[list[PlannedCall], list[Ask]]:
        out: list[PlannedCall] = []
        asks: list[Ask] = []
        for plan in planned:
            if not plan.runnable:
                # Refused already (unknown tool, bad arguments, a time refusal): nothing to gate.
                out.append(plan)
                continue
            call = plan.call
            verdict = await self.permissions.judge(call)
            self.rows.append(_row(at, plan, verdict))
            if verdict.decision == "deny":
                text = permission_denied_text(call.name, verdict.rule, verdict.reason)
                plan = PlannedCall(
                    call=call, tool=plan.tool, outcome=unrun_outcome(call, "refused", text)
                )
            elif verdict.decision == "ask" and not (plan.tool is not None and plan.tool.check_in):
                # A tool that checks in asks its own approval question; one question per call.
                args = call.args_text or msgspec.json.encode(call.args).decode()
                prompt = permission_ask_text(call.name, args, verdict.rule, verdict.reason)
                asks.append(("approval", prompt, (call.id,), None))
            elif verdict.decision == "halt" and self.halted is None:
                reason = f": {verdict.reason}" if verdict.reason else ""
                self.halted = (
                    "permission",
                    f"permission rule {verdict.rule!r} halts the turn at a call to "
                    f"{call.name!r}{reason}",
                )
            out.append(plan)
        return out, asks

    def halts(self) -> tuple[str, str] | None:
        return self.halted

    def take_rows(self) -> list[dict[str, Any]]:
        rows, self.rows = self.rows, []
        return rows


def _row(at: At, plan: PlannedCall, verdict: Verdict) -> dict[str, Any]:
    row = PermissionRow(
        turn=at.turn,
        iteration=at.iteration,
        tool_call_id=plan.call.id,
        tool_name=plan.call.name,
        decision=verdict.decision,
        rule=verdict.rule,
        reason=verdict.reason or None,
    )
    return ledger_row_to_wire(row)
