"""Throwaway Postgres databases for the test suite and the benchmarks (imported on its own:
``import afp_runtime.testing.postgres``): a database of its own per test or measurement on a
server the caller may create databases on, reached over a plain connection that takes the
password and TLS options as the store does (docs/storage.md#the-postgres-tests)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import anyio
import asyncpg

from afp_runtime.store.postgres import connect

__all__ = ["create_database", "database_name", "drop_database", "plain_connection", "with_database"]


def with_database(url: str, name: str) -> str:
    """``url`` naming the database ``name`` instead."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def database_name(url: str) -> str:
    """The database a URL names."""
    return urlsplit(url).path.lstrip("/")


async def plain_connection(url: str) -> asyncpg.Connection:
    """One connection on ``url`` outside any store (TLS prepared off the event loop, as the
    store does); the caller closes it."""
    target = await anyio.to_thread.run_sync(connect.with_password, connect.parse(url))
    ssl = await anyio.to_thread.run_sync(connect.ssl_context, target)
    conn: asyncpg.Connection = await asyncpg.connect(
        target.dsn, password=target.password, ssl=ssl, timeout=target.connect_timeout_s
    )
    return conn


async def create_database(server: str, name: str, *, template: str | None = None) -> str:
    """Create the database ``name`` on ``server`` (a copy of ``template`` when given); its URL."""
    conn = await plain_connection(server)
    try:
        copy = f' TEMPLATE "{template}"' if template else ""
        await conn.execute(f'CREATE DATABASE "{name}"{copy}')
    finally:
        await conn.close()
    return with_database(server, name)


async def drop_database(server: str, name: str) -> None:
    """Drop the database ``name`` on ``server``, closing whatever still holds it open."""
    conn = await plain_connection(server)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()
