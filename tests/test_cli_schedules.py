"""``afp schedules`` as a person runs it: a real process on a real database file
(docs/api.md#command-reference): list, set, pause, resume and remove, errors naming the field
or what exists, the text shown as data, and ``--json`` the API's body."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio

from afp_runtime.agents import Agent
from afp_runtime.loop import AgentDriver, SequentialIds
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock, answer

from .test_cli import afp

HOSTILE = "[bold red]wake[/bold red] \x1b[2J\u202eup"


async def _agent(db: Path) -> None:
    store = await SqliteStore.open(db)
    try:
        driver = AgentDriver(
            store,
            Agent("ops", ScriptedModel([answer("hi")])),
            clock=FakeClock(),
            ids=SequentialIds(),
        )
        await driver.post("hello")
        await driver.work()
    finally:
        await store.aclose()


def _wide(*args: str) -> str:
    """The table as a person on a wide terminal sees it (every column whole)."""
    done = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "COLUMNS": "400"},
    )
    return done.stdout


def _db(tmp_path: Path) -> str:
    db = tmp_path / "afp.db"
    anyio.run(_agent, db)
    return str(db)


def test_set_lists_it_in_its_zone_and_utc_with_the_text_as_data(tmp_path: Path) -> None:
    """A schedule set from the command line is listed with its form in words, its zone, its
    next due instant in that zone and in UTC, its source and its text made inert."""
    db = _db(tmp_path)
    assert "has no schedules" in afp("schedules", "ops", "--db", db).stdout
    done = afp(
        "schedules", "ops", "set", "morning", "--every", "weekday at 09:00",
        "--zone", "Europe/Berlin", "--text", HOSTILE, "--catch-up", "all", "--db", db,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = _wide("schedules", "ops", "--db", db)
    assert "every weekday at 09:00" in out
    assert "Europe/Berlin" in out and " UTC)" in out
    assert "09:00 Europe/Berlin" in out
    assert "cli" in out
    assert "\x1b" not in out and "\u202e" not in out
    assert "[bold red]wake[/bold red]" in out and "␛[2J" in out and "⟨U+202E⟩" in out
    body = json.loads(afp("schedules", "ops", "--json", "--db", db).stdout)
    (item,) = body["items"]
    assert body["next"] is None
    assert item["name"] == "morning" and item["source"] == "cli" and not item["paused"]
    assert item["schedule"] == {
        "name": "morning",
        "text": HOSTILE,
        "every": "weekday at 09:00",
        "zone": "Europe/Berlin",
        "catchUp": "all",
    }
    assert isinstance(item["nextDueMs"], int)


def test_pause_resume_remove_and_their_errors(tmp_path: Path) -> None:
    """Pause drops the next due instant, resume brings it back, remove empties the list; a bad
    field is exit 2 naming it, an unknown agent or schedule exit 1 naming what exists."""
    db = _db(tmp_path)
    assert afp("schedules", "ops", "set", "tick", "--cron", "*/5 * * * *", "--text", "t",
               "--db", db).returncode == 0  # fmt: skip
    paused = json.loads(afp("schedules", "ops", "pause", "tick", "--json", "--db", db).stdout)
    assert paused["paused"] is True and "nextDueMs" not in paused
    resumed = json.loads(afp("schedules", "ops", "resume", "tick", "--json", "--db", db).stdout)
    assert resumed["paused"] is False and isinstance(resumed["nextDueMs"], int)
    bad = afp("schedules", "ops", "set", "x", "--every", "now and then", "--text", "t", "--db", db)
    assert bad.returncode == 2 and "every" in bad.stderr
    zone = afp("schedules", "ops", "set", "x", "--at", "2027-01-01T09:00", "--zone", "Mars/Base",
               "--text", "t", "--db", db)  # fmt: skip
    assert zone.returncode == 2 and "zone" in zone.stderr
    missing = afp("schedules", "ops", "pause", "nope", "--db", db)
    assert missing.returncode == 1 and "'tick'" in missing.stderr
    nobody = afp("schedules", "nobody", "--db", db)
    assert nobody.returncode == 1 and "ops" in nobody.stderr
    nameless = afp("schedules", "ops", "remove", "--db", db)
    assert nameless.returncode == 2 and "NAME" in nameless.stderr
    assert afp("schedules", "ops", "remove", "tick", "--db", db).returncode == 0
    assert json.loads(afp("schedules", "ops", "--json", "--db", db).stdout)["items"] == []
