"""One way in for every door: ``open_store`` picks the backend from the location."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from afp_runtime.errors import ConfigError
from afp_runtime.store.base import Store


def sqlite_path(target: str | os.PathLike[str]) -> Path:
    """The SQLite file a path or URL names (``afp.db``, ``sqlite:///afp.db`` relative,
    ``sqlite:////srv/afp.db`` absolute, as SQLAlchemy spells them).

    Raises:
        ConfigError: a URL of another scheme (names it).
    """
    text = os.fspath(target)
    scheme, sep, rest = text.partition("://")
    if not sep or "/" in scheme or "\\" in scheme:
        return Path(text)
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ConfigError(
                f"a SQLite URL looks like sqlite:///relative.db or sqlite:////abs/path.db, "
                f"not {text!r}",
                field="store",
            )
        return Path(rest[1:])
    if scheme in ("postgresql", "postgres"):
        raise ConfigError(
            f"this build has no Postgres store (scheme {scheme!r}): open a SQLite file "
            "(a path or sqlite:///...)",
            field="store",
        )
    raise ConfigError(f"unknown store URL scheme {scheme!r} in {text!r}", field="store")


async def open_store(
    target: str | os.PathLike[str],
    *,
    read_only: bool = False,
    create: bool = True,
    now_ms: int = 0,
) -> Store:
    """Open the store at ``target`` (a SQLite path or ``sqlite:`` URL): a writer creates and
    migrates it unless ``create=False``; a reader never creates anything.

    Raises:
        ConfigError: a URL of a scheme this build has no backend for (named).
        StoreUnavailable: the store cannot be opened, or is missing and may not be created.
        StoreDamaged: the storage is not an afp_runtime store; it is left untouched.
        SchemaTooNew: a newer afp_runtime wrote it; it is left untouched.
    """
    path = target if isinstance(target, str) and "://" not in target else sqlite_path(target)
    # The backend loads when a store is first opened, in a worker thread (an import reads
    # files); the port itself imports no SQLite.
    name = "afp_runtime.store.sqlite"
    backend: Any = sys.modules.get(name) or await anyio.to_thread.run_sync(
        importlib.import_module, name
    )
    store: Store = await backend.SqliteStore.open(
        path, read_only=read_only, create=create, now_ms=now_ms
    )
    return store
