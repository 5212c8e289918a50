"""The password of a Postgres connection from a password file, read as libpq reads one
(docs/storage.md#passwords).

Each line is ``hostname:port:database:username:password``; ``*`` matches anything, ``\\:`` and
``\\\\`` are a literal colon and backslash, a line starting with ``#`` is a comment, and the first
line matching the connection wins. A Unix-socket connection matches the host ``localhost``.
On POSIX a file that its group or others may read is ignored with a warning, as libpq does.
Blocking (it reads a file): call it in a worker thread.
"""

from __future__ import annotations

import getpass
import os
import stat
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from afp_runtime._logging import get_logger

log = get_logger()

DEFAULT_PORT = "5432"


def default_path() -> Path | None:
    """``PGPASSFILE``, else ``~/.pgpass`` (``%APPDATA%\\postgresql\\pgpass.conf`` on Windows),
    else None when there is no home directory."""
    named = os.environ.get("PGPASSFILE")
    if named:
        return Path(named)
    if os.name == "nt":
        appdata = os.environ.get("APPDATA")
        return Path(appdata, "postgresql", "pgpass.conf") if appdata else None
    try:
        return Path.home() / ".pgpass"
    except RuntimeError:  # no home directory to be found
        return None


def connection_keys(dsn: str) -> tuple[str, str, str, str]:
    """The host, port, database and user a (password-less) DSN connects with, libpq's defaults
    filled in: the ``PG*`` variables, port 5432, the OS user, a database named as the user."""
    parts = urlsplit(dsn)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    host = unquote(parts.hostname or "") or query.get("host") or os.environ.get("PGHOST", "")
    host = host.split(",")[0]
    if not host or host.startswith("/"):
        host = "localhost"  # a Unix socket, as libpq matches it
    try:
        port_number = parts.port
    except ValueError:
        port_number = None
    port = str(port_number or query.get("port") or os.environ.get("PGPORT") or DEFAULT_PORT)
    user = unquote(parts.username or "") or query.get("user") or os.environ.get("PGUSER", "")
    if not user:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = ""
    database = (
        unquote(parts.path.lstrip("/"))
        or query.get("dbname")
        or query.get("database")
        or os.environ.get("PGDATABASE", "")
        or user
    )
    return host, port.split(",")[0], database, user


def lookup(path: Path, keys: tuple[str, str, str, str]) -> str | None:
    """The password of the first line of ``path`` matching ``keys`` (host, port, database,
    user); None when the file is missing, unreadable, too open, or has no matching line."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return None
        if os.name != "nt" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning(
                "the password file may be read by others and is ignored; chmod 0600 it",
                path=str(path),
            )
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        fields = _fields(line)
        if len(fields) < 5:
            continue
        if all(f == "*" or f == key for f, key in zip(fields[:4], keys, strict=True)):
            return fields[4]
    return None


def _fields(line: str) -> list[str]:
    """A line split at unescaped colons, ``\\`` escapes undone."""
    fields: list[str] = []
    current: list[str] = []
    chars = iter(line)
    for char in chars:
        if char == "\\":
            current.append(next(chars, ""))
        elif char == ":":
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
    fields.append("".join(current))
    return fields
