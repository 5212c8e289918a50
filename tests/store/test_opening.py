"""``open_store`` and every door on it (``afp.open``, ``--db``) pick the backend by URL scheme
from one registry, ``BACKENDS`` (docs/storage.md#store-locations): an unknown scheme is refused
naming it and the known ones, with the location's password masked."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import afp_runtime as afp
import afp_runtime.store
from afp_runtime.errors import ConfigError, StoreUnavailable
from afp_runtime.store import BACKENDS, backend_name, open_store, sqlite_path

KNOWN = "known: postgres://, postgresql://, sqlite://, or a file path"


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("redis://x", "'redis' in 'redis://x'"),
        ("mysql://ann:hunter2@db/afp", "'mysql' in 'mysql://ann:***@db/afp'"),
        ("SQLITE:///afp.db", "'SQLITE' in 'SQLITE:///afp.db'"),
    ],
)
async def test_afp_open_refuses_an_unknown_scheme_naming_the_known_ones(
    location: str, shown: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as caught:
        async with afp.open(location):
            pass
    text = str(caught.value)
    assert f"unknown store URL scheme {shown}" in text
    assert KNOWN in text
    assert "hunter2" not in text


def test_sqlite_path_and_backend_name_use_the_same_registry() -> None:
    with pytest.raises(ConfigError, match=KNOWN):
        sqlite_path("redis://x")
    with pytest.raises(ConfigError, match="a Postgres URL names a database"):
        sqlite_path("postgres://db/afp")
    assert [backend_name(t) for t in ("afp.db", "sqlite:///a.db", "postgresql://h/d")] == [
        "sqlite",
        "sqlite",
        "postgres",
    ]


async def test_each_scheme_reaches_its_backend(tmp_path: Path) -> None:
    """A path and a ``sqlite:`` URL open the SQLite file; a Postgres URL goes to Postgres
    (nobody listens on port 1: StoreUnavailable, its password masked)."""
    target = tmp_path / "a.db"
    store = await open_store(f"sqlite:///{target}")
    await store.aclose()
    assert await anyio.Path(target).exists()
    for scheme in ("postgresql", "postgres"):
        with pytest.raises(StoreUnavailable) as caught:
            await open_store(f"{scheme}://ann:hunter2@127.0.0.1:1/afp")
        assert "hunter2" not in str(caught.value)


def test_every_backend_package_is_registered() -> None:
    """A backend package added under ``afp_runtime/store`` without a registry entry (or an
    entry naming no package) fails here."""
    root = Path(next(iter(afp_runtime.store.__path__)))
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    assert {backend.name for backend in BACKENDS.values()} == packages
