"""A store holding one agent's calls across runs and turns, with a crash-abandoned call, for the
tests of the diff by agent-wide number (``store.diff_calls``, ``afp diff``,
``GET /v1/agents/{agentId}/calls/{n}/diff``; docs/python.md#reading-what-happened).

``crossed(path)`` writes agent ``support``'s life into a store (a SQLite file or a URL):

* turn 1, the first run: call 1 (asks ``lookup_order``), call 2 (answers);
* turn 2: call 3 is cut off by a crash while the model is asked, after its receipt committed
  (its epoch is abandoned in the crashed run); the recovery run makes call 4 (asks
  ``lookup_order`` again) and call 5 (answers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import afp_runtime as afp
from afp_runtime.messages import ModelRequest
from afp_runtime.testing import answer, call, tool_reply

AGENT = "support"
SECOND = "And [bold]1043[/bold]?"
"""Turn 2's message; it looks like Rich markup, which `afp diff` must print as typed."""


class Crash(BaseException):
    """Stands for the process dying while the model is asked (after the receipt committed)."""


@afp.tool(idempotent=True)
def lookup_order(order_id: str) -> dict[str, str]:
    """Look an order up by its id."""
    return {"orderId": order_id, "status": "shipped"}


def _reply(request: ModelRequest, number: int) -> afp.ModelReply:
    if request.messages[-1].role == "tool":
        return answer(f"Done: {request.messages[-1].content}")
    return tool_reply(call(f"c{len(request.messages)}", "lookup_order", order_id="1042"))


def _crashing(request: ModelRequest, number: int) -> afp.ModelReply:
    raise Crash


def support(script: Any = _reply) -> afp.Agent:
    """Agent ``support`` with ``lookup_order``: it looks the order up, then answers."""
    return afp.Agent(AGENT, afp.ScriptedModel(script), tools=[lookup_order])


async def crossed(path: Path | str) -> list[str]:
    """Write the life the module describes into ``path`` (a SQLite file or a database URL);
    the run ids in start order."""
    async with afp.open(path) as store:
        await store.run(support(), "Where is 1042?")
    with pytest.raises((Crash, BaseExceptionGroup)) as died:
        async with afp.open(path) as store:
            await store.run(support(_crashing), SECOND)
    assert isinstance(died.value, Crash) or died.group_contains(Crash)
    async with afp.open(path) as store:
        await store.work(support())
        return [run.run_id for run in await store.runs(AGENT)]
