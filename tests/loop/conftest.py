"""Fixtures for loop tests: agent ``ops`` with counting tools, a real SQLite store, fake clock."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from afp_runtime.agents import Agent
from afp_runtime.loop import AgentDriver, Emitter, EventRecorder, LoopHooks, SequentialIds
from afp_runtime.models import ScriptedModel, ScriptEntry
from afp_runtime.records import Txn
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock
from afp_runtime.tools import Tool, ToolContext


class Crash(BaseException):
    """Stands for the process dying at a named point: nothing after it runs."""


class Invocations(Counter[str]):
    """How many times each tool call id ran."""


def make_tools(
    invocations: Invocations, *, behaviour: Mapping[str, Any] | None = None
) -> list[Tool]:
    """``alpha_tool`` (parallel-safe), ``beta_tool`` (serial), ``idem_tool`` (idempotent)."""
    behaviour = dict(behaviour or {})

    def make(name: str) -> Any:
        async def fn(args: Mapping[str, Any], ctx: ToolContext) -> Any:
            invocations[ctx.tool_call_id] += 1
            hook = behaviour.get(ctx.tool_call_id) or behaviour.get(name)
            if hook is not None:
                return await hook(args, ctx)
            return f"{name} did {ctx.tool_call_id}"

        return fn

    schema = {"type": "object", "properties": {}}
    return [
        Tool("alpha_tool", "Alpha.", schema, make("alpha_tool"), parallel_safe=True),
        Tool("beta_tool", "Beta.", schema, make("beta_tool")),
        Tool(
            "idem_tool",
            "Idempotent.",
            schema,
            make("idem_tool"),
            idempotent=True,
            parallel_safe=True,
        ),
    ]


class CrashingStore(SqliteStore):
    """A real SQLite store that records every commit and can die right after a chosen one."""

    crash_after: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.committed: list[Txn] = []

    async def commit(self, txn: Txn) -> None:
        await super().commit(txn)
        self.committed.append(txn)
        if self.crash_after is not None and self.crash_after(txn):
            self.crash_after = None
            raise Crash


class StopAfter(LoopHooks):
    """Dies right after the named stage's bundle commits (a bundle boundary, as a scenario's
    stage crash point)."""

    def __init__(self, stage: str) -> None:
        self.stage = stage

    def stops_after(self, stage: str, iteration: int) -> bool:
        return stage == self.stage

    def after_stage(self, stage: str, iteration: int) -> None:
        if stage == self.stage:
            raise Crash


def is_crash(exc: BaseException) -> bool:
    """True when ``exc`` is a Crash, or a group holding one."""
    if isinstance(exc, Crash):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(is_crash(e) for e in exc.exceptions)
    return False


class Harness:
    """One agent ``ops`` on a database file; ``restart()`` reopens it like a fresh process."""

    def __init__(self, path: Path, clock: FakeClock) -> None:
        self.path = path
        self.clock = clock
        self.ids = SequentialIds()
        self.invocations = Invocations()
        self.recorder = EventRecorder()
        self.store: CrashingStore | None = None

    async def open(self) -> CrashingStore:
        self.store = await CrashingStore.open(self.path, now_ms=self.clock.now_ms())
        return self.store

    def driver(
        self,
        script: Sequence[ScriptEntry] | Any,
        *,
        behaviour: Mapping[str, Any] | None = None,
        hooks: LoopHooks | None = None,
        **options: Any,
    ) -> AgentDriver:
        assert self.store is not None
        self.model = script if isinstance(script, ScriptedModel) else ScriptedModel(script)
        definition = Agent(
            "ops",
            self.model,
            tools=make_tools(self.invocations, behaviour=behaviour),
            **options,
        )
        return AgentDriver(
            self.store,
            definition,
            clock=self.clock,
            ids=self.ids,
            emitter=Emitter([self.recorder]),
            rng=random.Random(7),
            hooks=hooks,
        )

    async def work(self, driver: AgentDriver) -> list[Any]:
        """``driver.work()`` with the fake clock jumping whenever every task is blocked."""
        async with self.clock.autojump():
            return await driver.work()

    async def crash(self, driver: AgentDriver) -> None:
        """Run ``driver.work()`` until the planted crash ends it."""
        try:
            await self.work(driver)
        except BaseException as exc:
            if not is_crash(exc):
                raise
        else:
            raise AssertionError("the planted crash did not happen")

    async def restart(self) -> CrashingStore:
        if self.store is not None:
            await self.store.aclose()
        return await self.open()

    async def close(self) -> None:
        if self.store is not None:
            await self.store.aclose()
            self.store = None


@pytest.fixture(name="harness")
async def fixture_harness(tmp_path: Path) -> AsyncIterator[Harness]:
    """A harness on a fresh database file with a fake clock."""
    harness = Harness(tmp_path / "afp.db", FakeClock())
    await harness.open()
    yield harness
    await harness.close()
