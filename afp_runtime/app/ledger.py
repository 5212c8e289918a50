"""An agent's findings ledger (docs/findings.md, docs/architecture.md#the-application-layer):
its rows rendered to wire form, filtered, and the fold of all of them (standings and
conflicts), from the store's typed rows (docs/storage.md#typed-ledger-rows)."""

from __future__ import annotations

from typing import Any

from afp_runtime.findings import LedgerFold, fold_ledger
from afp_runtime.records import ledger_row_to_wire
from afp_runtime.store import Store


async def findings(
    store: Store,
    agent_id: str,
    *,
    kind: str | None = None,
    turn: int | None = None,
    tool_call_id: str | None = None,
) -> list[dict[str, Any]]:
    """The agent's ledger rows in filing order, in wire form; ``kind`` (``basis``,
    ``standing``, ``conflict``, ``permission`` or a time row kind), ``turn`` and
    ``tool_call_id`` filter them."""
    rows = [ledger_row_to_wire(row) for row in await store.ledger(agent_id, kind=kind, turn=turn)]
    if tool_call_id is not None:
        rows = [row for row in rows if row.get("toolCallId") == tool_call_id]
    return rows


async def ledger_fold(store: Store, agent_id: str) -> LedgerFold:
    """Every ledger row of the agent folded: each tool call's current standing, conflicts."""
    return fold_ledger(None, await store.ledger(agent_id))
