"""One way in for every door: ``open_store`` picks the backend from the location."""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio

from afp_runtime.errors import ConfigError
from afp_runtime.store.base import Store

POSTGRES_SCHEMES = ("postgresql", "postgres")


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
    if scheme in POSTGRES_SCHEMES:
        raise ConfigError(
            "a Postgres URL names a database, not a SQLite file: open it with open_store",
            field="store",
        )
    raise ConfigError(
        f"unknown store URL scheme {scheme!r} in {shown_location(text)!r}", field="store"
    )


def shown_location(target: str | os.PathLike[str]) -> str:
    """A store location as messages, logs and hints show it: a URL with its password spelled
    ``***`` (``postgresql://ann:***@db/afp``, and a ``password=`` query parameter), anything
    else as given (docs/storage.md#store-locations)."""
    text = os.fspath(target)
    if "://" not in text:
        return text
    shown = _USERINFO_PASSWORD.sub(r"\g<head>:***@", text)
    return _QUERY_PASSWORD.sub(r"\g<key>***", shown)


# Up to the last ``@`` before any query: the driver splits user information there, so a
# password holding ``@`` (or an unencoded ``/``) is masked whole.
_USERINFO_PASSWORD = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*):[^?#]*@")
_QUERY_PASSWORD = re.compile(r"(?P<key>[?&]password=)[^&#]*", re.IGNORECASE)


def _backend_name(target: str | os.PathLike[str]) -> str:
    text = os.fspath(target)
    if isinstance(target, str) and text.partition("://")[0] in POSTGRES_SCHEMES:
        return "afp_runtime.store.postgres"
    return "afp_runtime.store.sqlite"


async def open_store(
    target: str | os.PathLike[str],
    *,
    read_only: bool = False,
    create: bool = True,
    now_ms: int = 0,
) -> Store:
    """Open the store at ``target``: a SQLite path or ``sqlite:`` URL, or a Postgres database
    (``postgresql://user:password@host:port/db``, also ``postgres://``;
    docs/storage.md#the-postgres-backend).
    A writer creates and migrates it unless ``create=False``; a reader never creates anything.
    Messages name a Postgres URL with its password masked.

    Raises:
        ConfigError: a URL of a scheme this build has no backend for (named).
        StoreUnavailable: the store cannot be opened, or is missing and may not be created.
        StoreDamaged: the storage is not an afp_runtime store; it is left untouched.
        SchemaTooNew: a newer afp_runtime wrote it; it is left untouched.
    """
    # The backend loads when a store is first opened, in a worker thread (an import reads
    # files); the port itself imports no backend.
    name = _backend_name(target)
    backend: Any = sys.modules.get(name) or await anyio.to_thread.run_sync(
        importlib.import_module, name
    )
    store: Store
    if name.endswith(".postgres"):
        store = await backend.PostgresStore.open(
            os.fspath(target), read_only=read_only, create=create, now_ms=now_ms
        )
        return store
    path = target if isinstance(target, str) and "://" not in target else sqlite_path(target)
    store = await backend.SqliteStore.open(path, read_only=read_only, create=create, now_ms=now_ms)
    return store
