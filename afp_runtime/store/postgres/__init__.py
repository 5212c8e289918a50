"""The Postgres backend of the store port (docs/storage.md#the-postgres-backend)."""

from afp_runtime.store.postgres.connect import masked
from afp_runtime.store.postgres.migrations import SCHEMA_VERSION
from afp_runtime.store.postgres.runlog import PostgresRunLog
from afp_runtime.store.postgres.store import PostgresStore

__all__ = ["SCHEMA_VERSION", "PostgresRunLog", "PostgresStore", "masked"]
