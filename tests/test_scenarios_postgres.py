"""Scenarios on Postgres (docs/scenarios.md#on-postgres): a golden scenario run on a fresh
Postgres database gives the same bytes as on SQLite, and ``afp scenario run --db URL`` works on
one, refuses it once used, and never prints its password."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.scenario import encode_result, run_scenario
from tests.store._postgres import FreshDatabase

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
# A crash recovered by a fresh host, a fold into a summary, a check-in answered across a crash,
# schedules delivered over virtual days (a restart and a down host between due times).
GOLDEN = (
    "crash_during_send",
    "summarize_oldest_conversation",
    "checkin_crash_in_answer_run",
    "schedules_weekday_week_and_wakeup",
)
FAKE_PASSWORD = "not-a-real-secret-7731"


@pytest.fixture
async def database() -> AsyncIterator[FreshDatabase]:
    """A fresh database on the test server, dropped afterwards."""
    fresh = FreshDatabase()
    try:
        yield fresh
    finally:
        await fresh.drop()


@pytest.mark.parametrize("name", GOLDEN)
async def test_a_golden_scenario_gives_the_same_bytes_on_postgres_as_on_sqlite(
    name: str, database: FreshDatabase, tmp_path: Path
) -> None:
    """The scenario's result on a fresh Postgres database equals its SQLite result byte for
    byte, and both are its expected file."""
    data = await anyio.Path(SCENARIOS / f"{name}.json").read_bytes()
    on_sqlite = encode_result(await run_scenario(data, db_path=tmp_path / "afp.db"))
    on_postgres = encode_result(await run_scenario(data, db_path=await database.create()))
    assert on_postgres == on_sqlite
    assert on_postgres == await anyio.Path(SCENARIOS / f"{name}.expected.json").read_bytes()


async def test_a_used_postgres_database_is_refused_with_its_password_masked(
    database: FreshDatabase,
) -> None:
    """A second run on the same database is an InvalidValue that names the URL masked."""
    data = await anyio.Path(SCENARIOS / "auth_error_held.json").read_bytes()
    url = _with_password(await database.create())
    await run_scenario(data, db_path=url)
    with pytest.raises(InvalidValue) as caught:
        await run_scenario(data, db_path=url)
    assert caught.value.context["field"] == "db_path"
    assert "holds a scenario agent already" in caught.value.message
    password = urlsplit(url).password
    assert password is None or password not in str(caught.value)


async def test_the_command_runs_on_a_postgres_url_and_never_prints_the_password(
    database: FreshDatabase,
) -> None:
    """`afp scenario run FILE --db URL` prints the expected result; run again on the same
    database it exits 2, and neither run shows the URL's password."""
    url = _with_password(await database.create())
    command = [sys.executable, "-m", "afp_runtime.cli", "scenario", "run"]
    command += [str(SCENARIOS / "auth_error_held.json"), "--db", url]
    first = await anyio.run_process(command, check=False)
    second = await anyio.run_process(command, check=False)
    assert first.returncode == 0, first.stderr.decode()
    expected = await anyio.Path(SCENARIOS / "auth_error_held.expected.json").read_bytes()
    assert first.stdout == expected
    assert second.returncode == 2
    assert b"holds a scenario agent already" in second.stderr
    password = urlsplit(url).password
    for done in (first, second):
        assert password is None or password.encode() not in done.stdout + done.stderr


def _with_password(url: str) -> str:
    """``url`` with a password in it when it has none and none is set apart (the test server
    trusts its local user, so any password is accepted), to show it is never printed."""
    parts = urlsplit(url)
    if parts.password is not None or os.environ.get("PGPASSWORD") or parts.username is None:
        return url
    head, _, tail = url.partition(f"{parts.username}@")
    return f"{head}{parts.username}:{FAKE_PASSWORD}@{tail}"
