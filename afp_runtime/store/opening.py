"""One way in for every door: ``open_store`` picks the backend from the location, by its URL
scheme, from one registry (``BACKENDS``; docs/storage.md#store-locations)."""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

import anyio
import msgspec

from afp_runtime.errors import ConfigError
from afp_runtime.store.base import Store


def sqlite_path(target: str | os.PathLike[str]) -> Path:
    """The SQLite file a path or URL names (``afp.db``, ``sqlite:///afp.db`` relative,
    ``sqlite:////srv/afp.db`` absolute, as SQLAlchemy spells them).

    Raises:
        ConfigError: a URL of another scheme (names it).
    """
    text = os.fspath(target)
    scheme = store_scheme(text)
    if scheme is None:
        return Path(text)
    if BACKENDS[scheme].name != "sqlite":
        raise ConfigError(
            f"a {BACKENDS[scheme].name.capitalize()} URL names a database, not a SQLite file: "
            "open it with open_store",
            field="store",
        )
    rest = text.partition("://")[2]
    if not rest.startswith("/") or rest == "/":
        raise ConfigError(
            f"a SQLite URL looks like sqlite:///relative.db or sqlite:////abs/path.db, "
            f"not {text!r}",
            field="store",
        )
    return Path(rest[1:])


def store_scheme(target: str | os.PathLike[str]) -> str | None:
    """The URL scheme of a store location, a key of ``BACKENDS``; None for a file path.

    Raises:
        ConfigError: a URL of a scheme no backend opens (names it, the location with its
            password masked, and the known schemes).
    """
    text = os.fspath(target)
    scheme, sep, _ = text.partition("://")
    if not sep or "/" in scheme or "\\" in scheme:
        return None
    if scheme not in BACKENDS:
        known = ", ".join(f"{name}://" for name in sorted(BACKENDS))
        raise ConfigError(
            f"unknown store URL scheme {scheme!r} in {shown_location(text)!r} (known: {known}, "
            "or a file path)",
            field="store",
        )
    return scheme


def backend_name(target: str | os.PathLike[str]) -> str:
    """The backend that opens a location: ``sqlite`` for a file path or ``sqlite:`` URL,
    ``postgres`` for a ``postgresql:``/``postgres:`` URL.

    Raises:
        ConfigError: an unknown URL scheme (see ``store_scheme``).
    """
    scheme = store_scheme(target)
    return "sqlite" if scheme is None else BACKENDS[scheme].name


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


class _Opener(Protocol):
    async def __call__(
        self, target: str | os.PathLike[str], *, read_only: bool, create: bool, now_ms: int
    ) -> Store: ...


async def _module(name: str) -> Any:
    # A backend loads when a store is first opened, in a worker thread (an import reads
    # files); the port itself imports no backend.
    return sys.modules.get(name) or await anyio.to_thread.run_sync(importlib.import_module, name)


async def _open_sqlite(
    target: str | os.PathLike[str], *, read_only: bool, create: bool, now_ms: int
) -> Store:
    backend = await _module("afp_runtime.store.sqlite")
    path = target if isinstance(target, str) and "://" not in target else sqlite_path(target)
    store: Store = await backend.SqliteStore.open(
        path, read_only=read_only, create=create, now_ms=now_ms
    )
    return store


async def _open_postgres(
    target: str | os.PathLike[str], *, read_only: bool, create: bool, now_ms: int
) -> Store:
    try:
        backend = await _module("afp_runtime.store.postgres")
    except ModuleNotFoundError as missing:
        # asyncpg comes with the extra only (docs/storage.md#the-postgres-backend).
        if missing.name != "asyncpg":
            raise
        raise ConfigError(
            f"{shown_location(target)} is a Postgres store and the Postgres driver (asyncpg) is "
            "not installed: pip install 'afp-runtime[postgres]'",
            field="store",
        ) from None
    store: Store = await backend.PostgresStore.open(
        os.fspath(target), read_only=read_only, create=create, now_ms=now_ms
    )
    return store


class Backend(msgspec.Struct, frozen=True):
    """A store backend: its name and how it opens a location."""

    name: str
    open: _Opener


_SQLITE = Backend("sqlite", _open_sqlite)
_POSTGRES = Backend("postgres", _open_postgres)

# URL scheme -> the backend that opens it; a location without a scheme is a SQLite file path.
BACKENDS: Mapping[str, Backend] = MappingProxyType(
    {"sqlite": _SQLITE, "postgresql": _POSTGRES, "postgres": _POSTGRES}
)


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
        ConfigError: a URL of a scheme this build has no backend for (named, with the known
            ones), or a Postgres URL without the ``postgres`` extra installed (names it).
        StoreUnavailable: the store cannot be opened, or is missing and may not be created.
        StoreDamaged: the storage is not an afp_runtime store; it is left untouched.
        SchemaTooNew: a newer afp_runtime wrote it; it is left untouched.
    """
    scheme = store_scheme(target)
    backend = _SQLITE if scheme is None else BACKENDS[scheme]
    return await backend.open(target, read_only=read_only, create=create, now_ms=now_ms)
