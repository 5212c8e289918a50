"""From a ``postgresql://`` URL to an asyncpg pool (docs/storage.md#the-postgres-backend).

The URL is split once at open: the store's own query parameters (``pool_min``, ``pool_max``,
``statement_timeout_ms``, ``connect_timeout_s``) are taken out, the password is kept apart and
never shown (``masked`` spells the URL with ``***`` in its place, the form every message and
log uses, and the password is held for ``redact``, so a server that echoes it cannot show it
either). A password the URL does not give comes from ``PGPASSWORD``, else from the password
file (``passfile=``, ``PGPASSFILE`` or ``~/.pgpass``), read in a worker thread
(``with_password``), as is the TLS context, since asyncpg would read those files on the event
loop at every new connection.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

__all__ = ["Target", "masked", "parse", "ssl_context", "with_password"]

import msgspec

from afp_runtime._secrets import hold
from afp_runtime.errors import ConfigError
from afp_runtime.store.opening import shown_location as masked
from afp_runtime.store.postgres import passfile

POOL_MIN = 1
POOL_MAX = 10
STATEMENT_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_S = 10.0
_OURS = ("pool_min", "pool_max", "statement_timeout_ms", "connect_timeout_s")
_SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """Where and how to connect: the URL without secrets and options, and the options."""

    dsn: str
    """The URL asyncpg connects to, without password, TLS mode or the store's own options."""
    location: str
    """The URL as messages show it (the password masked)."""
    password: str
    pool_min: int = POOL_MIN
    pool_max: int = POOL_MAX
    statement_timeout_ms: int = STATEMENT_TIMEOUT_MS
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    ssl_mode: str = "disable"
    ssl_root_cert: str | None = None
    passfile: str | None = None
    """The password file named by the URL's ``passfile=`` (else ``PGPASSFILE`` or
    ``~/.pgpass``), read by ``with_password`` when no password was given."""


def parse(url: str, **overrides: Any) -> Target:
    """Split a ``postgresql://`` (or ``postgres://``) URL; keyword overrides win over the URL's
    query parameters.

    Raises:
        ConfigError: an option is not a number, or the pool bounds or TLS mode are invalid.
    """
    location = masked(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - read for its check: a port that is no number or past 65535
    except ValueError:
        # The parser's own text may quote pieces of the password: never shown.
        raise ConfigError(
            f"{location} is not a Postgres URL afp can read: its host or port cannot be parsed"
            " (a password holding / ? # or @ must be percent-encoded)",
            field="store",
        ) from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    options: dict[str, Any] = {}
    kept: list[tuple[str, str]] = []
    ssl_mode = os.environ.get("PGSSLMODE", "prefer")
    root_cert = os.environ.get("PGSSLROOTCERT")
    query_password: str | None = None
    pass_file: str | None = None
    for name, value in query:
        if name in _OURS:
            try:
                options[name] = float(value) if name == "connect_timeout_s" else int(value)
            except ValueError:
                raise ConfigError(
                    f"{name} in {location} must be a number, not {value!r}", field="store"
                ) from None
        elif name == "sslmode":
            ssl_mode = value
        elif name == "sslrootcert":
            root_cert = value
        elif name == "password":
            query_password = value  # given apart, as libpq takes it; never left in the DSN
        elif name == "passfile":
            pass_file = value  # read by with_password, off the event loop
        else:
            kept.append((name, value))
    options.update({k: v for k, v in overrides.items() if v is not None})
    sockets = [v for k, v in kept if k == "host"]
    host = parts.hostname or (sockets[0] if sockets else "")
    if not host or host.startswith("/"):
        ssl_mode = "disable"  # a Unix socket: TLS does not apply
    if ssl_mode not in _SSL_MODES:
        raise ConfigError(f"unknown sslmode {ssl_mode!r} in {location}", field="store")
    password = unquote(parts.password) if parts.password is not None else ""
    password = password or query_password or os.environ.get("PGPASSWORD", "")
    hold(password)  # docs/host.md#secrets-in-errors-and-logs
    netloc = parts.netloc.rpartition("@")[2]
    if parts.username is not None:
        netloc = f"{parts.username}@{netloc}"
    scheme = "postgresql"
    # Written out, not urlunsplit: that drops the "//" of a URL with no host part
    # (postgresql:///afp?host=/run/postgresql), which then reads as a different URL.
    dsn = f"{scheme}://{netloc}{parts.path}" + (f"?{urlencode(kept)}" if kept else "")
    target = Target(
        dsn=dsn,
        location=location,
        password=password,
        ssl_mode=ssl_mode,
        ssl_root_cert=root_cert,
        passfile=pass_file,
        **options,
    )
    if not 1 <= target.pool_min <= target.pool_max:
        raise ConfigError(
            f"the pool bounds of {location} must satisfy 1 <= pool_min <= pool_max, not "
            f"{target.pool_min} and {target.pool_max}",
            field="store",
        )
    return target


def with_password(target: Target) -> Target:
    """``target`` with the password of its password file when it has none (blocking: the file
    is read; call it in a worker thread). The file is ``passfile=``, else ``PGPASSFILE``, else
    ``~/.pgpass``; a missing file, or one without a matching line, leaves the password empty
    (docs/storage.md#passwords)."""
    if target.password:
        return target
    path = Path(target.passfile) if target.passfile else passfile.default_path()
    if path is None:
        return target
    found = passfile.lookup(path, passfile.connection_keys(target.dsn))
    if not found:
        return target
    hold(found)
    return msgspec.structs.replace(target, password=found)


def ssl_context(target: Target) -> ssl.SSLContext | bool:
    """The ``ssl`` argument for asyncpg (blocking: certificate files are read; call it in a
    worker thread). ``disable`` is no TLS; ``allow``, ``prefer`` and ``require`` encrypt
    without verifying the server (``prefer`` falls back to plain when the server has no TLS,
    see ``_core``); ``verify-ca`` and ``verify-full`` verify it against the system's or
    ``sslrootcert``'s authorities."""
    if target.ssl_mode == "disable":
        return False
    if target.ssl_mode.startswith("verify-"):
        try:
            context = ssl.create_default_context(cafile=target.ssl_root_cert)
        except (OSError, ssl.SSLError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(
                f"sslrootcert {target.ssl_root_cert} of {target.location} cannot be read as "
                f"certificate authorities: {reason}",
                field="store",
            ) from None
        context.check_hostname = target.ssl_mode == "verify-full"
        return context
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
