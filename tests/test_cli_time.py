"""`afp findings AGENT --kind call-window` and `afp send --zone/--now` on a real file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from afp_runtime.agents import Agent
from afp_runtime.loop import AgentDriver, SequentialIds
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from afp_runtime.time import Period, TimeConfig
from afp_runtime.tools import Tool, ToolContext

from .test_cli import afp

NOW_MS = 1791560400000


async def _activity(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "ok"


async def _turn(db: Path) -> None:
    tool = Tool(
        "activity",
        "Activity.",
        {"type": "object", "properties": {"window": {"type": "string"}}},
        _activity,
        period=Period(argument="window", accepts=("iso-range",)),
    )
    model = ScriptedModel([tool_reply(call("c1", "activity")), answer("done")])
    definition = Agent("ops", model, tools=[tool], time=TimeConfig(zone="America/Los_Angeles"))
    store = await SqliteStore.open(db)
    try:
        driver = AgentDriver(
            store, definition, clock=FakeClock(start_ms=NOW_MS), ids=SequentialIds()
        )
        window = {"from": "2026-10-09T14:00:00Z", "to": "2026-10-09T15:00:00Z"}
        await driver.post("any activity?", time={"window": window})
        await driver.work()
    finally:
        await store.aclose()


def test_findings_lists_the_call_window_rows(tmp_path: Path) -> None:
    db = tmp_path / "afp.db"
    anyio.run(_turn, db)
    listed = afp("findings", "ops", "--kind", "call-window", "--db", str(db), "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["how"], row["toolCallId"]) == ("filled", "c1")
    table = afp("findings", "ops", "--db", str(db))
    assert table.returncode == 0, table.stderr
    assert "filled" in table.stdout and "clock" in table.stdout


def test_send_carries_the_message_time(tmp_path: Path) -> None:
    db = tmp_path / "afp.db"
    anyio.run(_turn, db)
    sent = afp(
        "send",
        "ops",
        "and now?",
        "--zone",
        "Europe/Paris",
        "--now",
        "2026-10-09T16:00:00Z",
        "--db",
        str(db),
    )
    assert sent.returncode == 0, sent.stderr
    inbox = json.loads(afp("inbox", "ops", "--db", str(db), "--json").stdout)["items"]
    assert inbox[-1]["time"] == {"zone": "Europe/Paris", "now": "2026-10-09T16:00:00Z"}
    bad = afp("send", "ops", "x", "--zone", "PST", "--db", str(db))
    assert bad.returncode == 2 and "zone" in bad.stderr
