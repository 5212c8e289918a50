"""The loop's own work per iteration (docs/loop.md#the-loops-own-overhead): no event payload is
built when nobody listens, the library logger is assembled once per structlog configuration, and
a tool deadline on the system clock still raises ``TimeoutError`` only for its own deadline."""

from __future__ import annotations

import importlib
import io
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest
import structlog

import afp_runtime as afp
from afp_runtime._logging import get_logger
from afp_runtime.loop import AgentDriver, Emitter, EventRecorder, SequentialIds, SystemClock
from afp_runtime.records import (
    IterationEnded,
    ModelEnded,
    ModelStarted,
    ToolEnded,
    ToolStarted,
    Txn,
)
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock, answer, call, tool_reply


@afp.tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


class _Unbuildable:
    """Stands in for a payload class: building one fails the test."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, **fields: Any) -> Any:
        raise AssertionError(f"{self.name} was built with nobody listening")


async def _turn_event_ids(path: Path, *, listening: bool) -> tuple[int, list[int]]:
    """Run one turn with one tool call; the emitter's next id after it, and the recorded ids."""
    recorder = EventRecorder()
    emitter = Emitter([recorder] if listening else [])
    script = [tool_reply(call("c1", "lookup", order_id="7")), answer("It shipped.")]
    store = await SqliteStore.open(path)
    try:
        agent = afp.Agent("desk", afp.ScriptedModel(script), tools=[lookup])
        driver = AgentDriver(store, agent, clock=FakeClock(), ids=SequentialIds(), emitter=emitter)
        await driver.post("Where is order 7?")
        await driver.work()
    finally:
        await store.aclose()
    return emitter._next_id, [event.id for event in recorder.events]


async def test_no_payload_is_built_when_nobody_listens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no sink, the per-iteration events of the model call, the tool call and the
    iteration's end are numbered but their payloads never built; with a sink the same turn
    numbers its events the same way."""
    heard, ids = await _turn_event_ids(tmp_path / "heard.db", listening=True)
    for module, name in (
        ("call_model", ModelStarted.__name__),
        ("call_model", ModelEnded.__name__),
        ("dispatch", ToolStarted.__name__),
        ("dispatch", ToolEnded.__name__),
        ("tool_calls", IterationEnded.__name__),
    ):
        stage = importlib.import_module(f"afp_runtime.loop.stages.{module}")
        monkeypatch.setattr(stage, name, _Unbuildable(name))
    unheard, none = await _turn_event_ids(tmp_path / "unheard.db", listening=False)
    assert none == []
    assert ids == list(range(1, heard + 1))
    assert unheard == heard


def test_the_logger_is_assembled_once_per_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Logging again under the same structlog configuration reuses the assembled logger; a new
    configuration, or a swapped standard stream, is followed at the next call."""
    assembled: list[Any] = []
    real = structlog.get_logger

    def counting(*args: Any, **kwargs: Any) -> Any:
        assembled.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(structlog, "get_logger", counting)
    first = io.StringIO()
    structlog.configure(
        processors=[structlog.processors.KeyValueRenderer(key_order=["event"])],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.PrintLoggerFactory(first),
    )
    log = get_logger()
    for number in range(3):
        log.info("iteration", number=number)
    assert len(assembled) == 1
    assert first.getvalue().count("event='iteration'") == 3

    second = io.StringIO()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(second))
    log.info("after", number=4)
    assert len(assembled) == 2
    assert "event='after'" in second.getvalue()
    assert "after" not in first.getvalue()

    # A print logger made without a file writes to the sys.stdout of its making.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory())
    log.info("to stdout one")
    swapped = io.StringIO()
    monkeypatch.setattr(sys, "stdout", swapped)
    log.info("to stdout two")
    assert "to stdout two" in swapped.getvalue()
    assert "to stdout one" not in swapped.getvalue()


async def test_the_system_clocks_deadline_raises_timeout_for_its_own_deadline_only() -> None:
    """``fail_after`` on the system clock raises ``TimeoutError`` when its deadline cancels the
    body; an outer cancellation passes through as a cancellation, and a body that ends in time
    sees nothing."""
    clock = SystemClock()
    with pytest.raises(TimeoutError), clock.fail_after(0.01):
        await anyio.sleep(5)
    with clock.fail_after(5) as scope:
        await anyio.lowlevel.checkpoint()
    assert not scope.cancelled_caught
    with anyio.CancelScope() as outer:
        with clock.fail_after(5):
            outer.cancel()
            await anyio.sleep(5)
    assert outer.cancelled_caught
    with pytest.raises(ValueError, match="the body's own"), clock.fail_after(5):
        raise ValueError("the body's own")


def test_merging_transactions_keeps_every_list_field() -> None:
    """``Txn.absorb`` names each list field rather than looping over them: a later transaction's
    rows in any list field are carried over after the earlier ones, and a transaction holding
    rows in only that field is not empty."""
    lists = [f.name for f in msgspec.structs.fields(Txn) if f.default_factory is list]
    assert "journal" in lists and "bundles" in lists
    for name in lists:
        earlier = Txn(agent_id="a", **{name: ["first"]})
        later = Txn(agent_id="a", **{name: ["second"]})
        assert not later.empty(), name
        earlier.absorb(later)
        assert getattr(earlier, name) == ["first", "second"], name
        assert all(getattr(earlier, other) == [] for other in lists if other != name), name
    assert Txn(agent_id="a").empty()
