"""``afp copy`` as a person runs it (docs/storage.md#moving-between-stores): real processes, a
real SQLite source with history, a real Postgres database on the way there and back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest

from tests.store._copy_world import build_source
from tests.store._postgres import FreshDatabase
from tests.test_cli import afp

SECRET = "s3cret-pw-never-shown"


def with_password(url: str) -> str:
    """``url`` with a password for its user (the test server trusts it and ignores it)."""
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user or 'afp'}:{SECRET}@{host}"))


@pytest.mark.timeout(240)
def test_copy_to_postgres_and_back_serves_the_same_and_never_shows_the_password(
    tmp_path: Path,
) -> None:
    """`afp copy` SQLite → Postgres → SQLite says what it copied, refuses a second copy naming
    the agents (exit 5), and the copy's served views, conformance and doctor match the
    source's; the URL's password is printed nowhere."""
    source = tmp_path / "source.db"
    anyio.run(build_source, source, "time-rows-and-questions")
    database = FreshDatabase()
    try:
        _there_and_back(source, with_password(anyio.run(database.create)), tmp_path / "back.db")
    finally:
        anyio.run(database.drop)


def _there_and_back(source: Path, url: str, back: Path) -> None:
    """The test above, once the database exists."""
    there = afp("copy", "--from", str(source), "--to", url, "--json")
    assert there.returncode == 0, there.stderr
    report = json.loads(there.stdout)
    assert (report["agents"], report["from"]) == (3, str(source))
    assert report["runs"] > 8 and report["bundles"] > report["runs"] > 0
    assert report["bodies"] == report["newBodies"] > 0 and report["questions"] == 2
    again = afp("copy", "--from", str(source), "--to", url)
    assert again.returncode == 5
    assert "'demo', 'scenario', 'waiting' already" in again.stderr
    home = afp("copy", "--from", url, "--to", str(back))
    assert home.returncode == 0, home.stderr
    assert "copied 3 agents" in home.stdout and "afp doctor" in home.stdout
    for done in (there, again, home):
        assert SECRET not in done.stdout + done.stderr
        assert "Traceback" not in done.stderr
    assert "***" in home.stdout

    for run in ("scenario:last", "demo:last"):
        for command in ("served", "conform"):
            extra = ["--all"] if command == "served" else []
            expected = afp(command, run, *extra, "--db", str(source), "--json")
            copied = afp(command, run, *extra, "--db", str(back), "--json")
            assert expected.returncode == copied.returncode == 0, copied.stderr
            assert copied.stdout == expected.stdout
    reports = json.loads(afp("conform", "demo:last", "--db", str(back), "--json").stdout)
    assert reports and {r["verdict"] for r in reports} == {"verified"}
    for read in (["questions", "scenario", "--all"], ["findings", "scenario"], ["agents"]):
        assert afp(*read, "--db", str(back), "--json").stdout == (
            afp(*read, "--db", str(source), "--json").stdout
        )
    doctor = afp("doctor", "--db", str(back), "--json")
    assert doctor.returncode == 0 and json.loads(doctor.stdout)["healthy"]


def test_copy_refuses_a_newer_destination_and_bad_arguments(tmp_path: Path) -> None:
    """A destination written by a newer build is refused (exit 4) and left as it was; an empty
    --agents is a usage error; an unknown agent exits 1 before any destination is made."""
    source = tmp_path / "source.db"
    anyio.run(build_source, source, "findings")
    newer = tmp_path / "newer.db"
    assert afp("migrate", "--db", str(newer)).returncode == 0
    with sqlite3.connect(newer) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    conn.close()
    before = newer.read_bytes()
    refused = afp("copy", "--from", str(source), "--to", str(newer))
    assert refused.returncode == 4 and "newer" in refused.stderr
    assert newer.read_bytes() == before
    empty = afp("copy", "--from", str(source), "--to", str(tmp_path / "x.db"), "--agents", " ,")
    assert empty.returncode == 2 and "--agents" in empty.stderr
    unknown = afp("copy", "--from", str(source), "--to", str(tmp_path / "y.db"), "--agents", "zed")
    assert unknown.returncode == 1 and "'zed'" in unknown.stderr
    assert not (tmp_path / "y.db").exists()  # said before the destination was made
