"""Health checks and the clean-shutdown marker on Postgres (docs/host.md#start-up step 1,
docs/host.md#graceful-shutdown step 4)."""

from __future__ import annotations

import hashlib

import anyio
import asyncpg

from afp_runtime.errors import StoreError, StoreUnavailable
from afp_runtime.store.postgres._core import PostgresCore
from afp_runtime.store.postgres.migrations import SCHEMA_VERSION

_TABLES = (
    "agents", "conversations", "bodies", "items", "runs", "bundles", "key_index", "inbox",
    "tool_journal", "folded_spans", "archived_conversations", "ledger_rows", "questions",
    "host_leases", "meta", "migrations",
)  # fmt: skip


class Health(PostgresCore):
    """``quick_check``, ``integrity_check``, the body check and the clean-shutdown marker."""

    async def clean_shutdown(self) -> bool:
        """Whether the last host on this database recorded a clean shutdown."""
        found = await self._fetch("SELECT value FROM meta WHERE key = 'clean_shutdown'")
        return bool(found) and found[0][0] == "1"

    async def _mark(self, value: str) -> None:
        async def work(conn: asyncpg.Connection) -> None:
            await conn.execute(
                "INSERT INTO meta VALUES ('clean_shutdown', $1)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                value,
            )

        await self._write(work, full=True)

    async def begin_serving(self) -> None:
        """Clear the clean-shutdown marker: a host is about to write (a crash leaves it clear)."""
        await self._mark("0")

    async def mark_clean_shutdown(self) -> None:
        """Record a clean shutdown."""
        await self._mark("1")

    async def checkpoint(self) -> str | None:
        """Nothing to do: the server checkpoints its own log."""
        return None

    async def quick_check(self) -> list[str]:
        """The server answers and the schema version is this build's: ``['ok']``, else the
        problem (counted in ``quick_checks``). Postgres checks its own pages.

        Raises:
            StoreUnavailable: the server cannot be reached now (that is no problem of the data:
                a host checks again once it can, docs/host.md#after-an-unclean-stop).
        """
        self.quick_checks += 1
        try:
            found = await self._fetch("SELECT value FROM meta WHERE key = 'schema_version'")
        except StoreUnavailable:
            raise
        except StoreError as exc:
            return [str(exc)]
        if not found or found[0][0] != str(SCHEMA_VERSION):
            return [f"schema version {found[0][0] if found else None!r}, not {SCHEMA_VERSION}"]
        return ["ok"]

    async def integrity_check(self) -> list[str]:
        """The quick check, and every table of the schema present: ``['ok']`` when healthy."""
        try:
            problems = [p for p in await self.quick_check() if p != "ok"]
        except StoreUnavailable as exc:
            problems = [str(exc)]
        found = await self._fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        present = {r[0] for r in found}
        problems += [f"table {t} is missing" for t in _TABLES if t not in present]
        return problems or ["ok"]

    async def body_check(self) -> list[str]:
        """Fingerprints whose stored body no longer hashes to them (content addressing)."""
        found = await self._fetch("SELECT fp, body FROM bodies")

        def check() -> list[str]:
            return [bytes(fp).hex() for fp, body in found if not _hashes_to(body, fp)]

        return await anyio.to_thread.run_sync(check)


def _hashes_to(body: object, fp: object) -> bool:
    """Whether a stored body is bytes whose SHA-256 is its fingerprint (a body stored as text,
    or a fingerprint that is not bytes, is damage too)."""
    if not isinstance(body, bytes | bytearray | memoryview):
        return False
    return hashlib.sha256(body).digest() == bytes(fp)  # type: ignore[call-overload]
