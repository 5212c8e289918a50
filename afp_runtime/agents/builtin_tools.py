"""What the built-in tools bound to a run's store share (``scheduleWakeup``,
docs/schedules.md#the-schedulewakeup-tool; ``recall``, docs/recall.md#the-recall-tool): the
agent's tool entry is served and planned as any tool, and each run swaps in the same tool bound
to its own store, collecting the ledger rows its calls file for the batch's results.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, ClassVar

from afp_runtime.extensions import Dispatch, RunExtension, RunStart
from afp_runtime.tools import PlannedCall, Tool, ToolContext


class BoundToolRun(RunExtension, Dispatch):
    """One run of a built-in tool: ``entry`` (the agent's entry) planned with ``bound``, the
    same tool calling this run's ``_call``; the rows its calls filed, handed over with the
    batch's results."""

    entry: ClassVar[Tool]

    def __init__(self, zone: str, run: RunStart) -> None:
        self.zone = zone
        self.agent_id = run.agent_id
        self.store = run.store
        self.rows: list[dict[str, Any]] = []
        self.bound = Tool(
            name=self.entry.name,
            description=self.entry.description,
            input_schema=self.entry.input_schema,
            fn=self._call,
            idempotent=True,
        )

    def dispatching(self) -> Dispatch:
        return self

    def prepare(self, plan: PlannedCall) -> PlannedCall:
        if plan.tool is not self.entry:
            return plan
        return PlannedCall(call=plan.call, tool=self.bound, args=plan.args, outcome=plan.outcome)

    def context(self, tool_call_id: str) -> Mapping[str, Any]:
        return {}

    def take_rows(self) -> list[dict[str, Any]]:
        rows, self.rows = self.rows, []
        return rows

    @abc.abstractmethod
    async def _call(self, args: Any, ctx: ToolContext) -> str:
        """One call of the tool, bound to this run's store: its observation's text."""
