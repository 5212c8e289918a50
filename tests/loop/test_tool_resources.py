"""A tool short of descriptors, memory or disk stalls the turn and runs again later; it is
neither handed to the model as an error nor held (docs/loop.md#observations)."""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from typing import Any

import pytest

from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import ToolContext

from .conftest import Harness


@pytest.mark.parametrize("durability", ["sync", "iteration"])
@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENOMEM, errno.ENOSPC])
async def test_a_tool_out_of_a_resource_stalls_and_runs_again(
    harness: Harness, code: int, durability: str
) -> None:
    """``beta_tool`` raises ``OSError(code)``: the turn stalls under ``resource`` with a retry
    scheduled, and the model sees nothing of it. Once due, the retry run settles the same reply:
    the short call runs again (the model is not asked again), the call that succeeded is taken
    from the journal where there is one, and the turn answers."""
    short = True

    async def beta(args: Mapping[str, Any], ctx: ToolContext) -> str:
        if short:
            raise OSError(code, os.strerror(code))
        return "beta done"

    reply = tool_reply(call("a", "alpha_tool"), call("b", "beta_tool"))
    driver = harness.driver(
        [reply, answer("done")], behaviour={"beta_tool": beta}, durability=durability
    )
    await driver.post("go")
    [stalled] = await harness.work(driver)
    assert (stalled.status, stalled.error_kind) == ("stalled", "resource")
    assert os.strerror(code) in (stalled.error or "")
    state = await harness.store.conversation_state("ops")
    assert state.open_turn.status == "stalled"
    assert state.open_turn.retry_at_ms == harness.clock.now_ms() + 60_000
    assert [r.status for r in await harness.store.inbox("ops")] == ["stalled"]
    assert harness.model.calls == 1

    short = False
    harness.clock.advance(60)
    [retried] = await harness.work(driver)
    assert (retried.kind, retried.status, retried.final_answer) == ("retry", "answered", "done")
    assert harness.model.calls == 2  # the reply was settled, not asked for again
    assert harness.invocations["b"] == 2
    assert harness.invocations["a"] == (1 if durability == "sync" else 2)
    second = harness.model.requests[1]
    results = [m.content for m in second.messages if m.role == "tool"]
    assert results == ["alpha_tool did a", "beta done"]
