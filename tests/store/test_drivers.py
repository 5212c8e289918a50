"""The backends' drivers. asyncpg comes with the ``postgres`` extra only
(docs/storage.md#the-postgres-backend): without it ``afp_runtime`` and everything SQLite work, and
a Postgres location is refused with a ``ConfigError`` naming the extra (``afp`` exits 2 with one
line). A missing asyncpg is simulated in a fresh interpreter: ``sys.modules["asyncpg"] = None``
makes ``import asyncpg`` raise ``ModuleNotFoundError`` as an environment without it would.
Every driver's version is bounded both ways, and aiosqlite's private API is reached in one
function only (docs/storage.md#the-sqlite-driver)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
DRIVERS = ("aiosqlite", "asyncpg")

HIDE_ASYNCPG = "import sys; sys.modules['asyncpg'] = None\n"
EXTRA = "pip install 'afp-runtime[postgres]'"

EMBEDDED = """
import json, sys
import anyio
import afp_runtime as afp
from afp_runtime.errors import ConfigError

async def main(db):
    async with afp.open(db) as store:
        pass
    # What SQLite loaded, before anything asks for Postgres.
    loaded = sorted(m for m in sys.modules if m.startswith("afp_runtime.store."))
    try:
        async with afp.open("postgresql://ann:hunter2@127.0.0.1:1/afp"):
            pass
    except ConfigError as refused:
        error = [type(refused).__name__, str(refused)]
    print(json.dumps({"error": error, "loaded": loaded}))

anyio.run(main, sys.argv[1])
"""

CLI = "import runpy; runpy.run_module('afp_runtime.cli', run_name='__main__')\n"


def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE_ASYNCPG + code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_sqlite_works_and_postgres_names_the_extra(tmp_path: Path) -> None:
    db = tmp_path / "afp.db"
    done = python(EMBEDDED, str(db))
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert db.exists()
    name, text = seen["error"]
    assert name == "ConfigError"
    assert EXTRA in text and "postgresql://ann:***@127.0.0.1:1/afp" in text
    assert "hunter2" not in text
    assert "afp_runtime.store.sqlite" in seen["loaded"]
    assert not [m for m in seen["loaded"] if m.startswith("afp_runtime.store.postgres")]


def test_the_cli_exits_2_with_one_line_naming_the_extra(tmp_path: Path) -> None:
    db = tmp_path / "afp.db"
    for command in ("migrate", "doctor"):
        sqlite = python(CLI, command, "--db", str(db))
        assert sqlite.returncode == 0, sqlite.stderr
    done = python(CLI, "doctor", "--db", "postgresql://ann@127.0.0.1:1/afp")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("afp: postgresql://ann@127.0.0.1:1/afp ") and EXTRA in line


def test_asyncpg_is_an_extra_and_every_driver_is_bounded_both_ways() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = {Requirement(r).name: Requirement(r) for r in project["dependencies"]}
    extras = project["optional-dependencies"]
    postgres = {Requirement(r).name: Requirement(r) for r in extras["postgres"]}
    assert "asyncpg" not in required
    assert "afp-runtime[postgres]" in extras["dev"]
    drivers = {"aiosqlite": required["aiosqlite"], "asyncpg": postgres["asyncpg"]}
    for name, requirement in drivers.items():
        operators = {spec.operator for spec in requirement.specifier}
        assert {">=", "<"} <= operators, requirement
        assert requirement.specifier.contains(version(name)), (requirement, version(name))


def test_aiosqlites_private_api_is_reached_in_on_thread_only() -> None:
    """``_execute`` on anything but ``self``, and ``_conn`` of anything but ``self``, is
    aiosqlite's: allowed in ``on_thread`` alone."""
    reached = []
    for path in sorted((REPO / "afp_runtime").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed = {
            id(node)
            for fn in ast.walk(tree)
            if isinstance(fn, ast.AsyncFunctionDef) and fn.name == "on_thread"
            for node in ast.walk(fn)
        }
        for node in ast.walk(tree):
            private = isinstance(node, ast.Attribute) and node.attr in ("_execute", "_conn")
            own = isinstance(node, ast.Attribute) and ast.unparse(node.value) == "self"
            if private and not own and id(node) not in allowed:
                reached.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert reached == []
