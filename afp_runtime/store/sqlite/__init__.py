"""The embedded SQLite backend of the store port."""

from afp_runtime.store.sqlite.migrations import SCHEMA_VERSION
from afp_runtime.store.sqlite.runlog import SqliteRunLog
from afp_runtime.store.sqlite.store import SqliteStore

__all__ = ["SCHEMA_VERSION", "SqliteRunLog", "SqliteStore"]
