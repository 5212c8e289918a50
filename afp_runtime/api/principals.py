"""Principals: who a request is, proven by its bearer token (docs/api.md#principals-and-tokens).

A token file holds one principal a line, ``NAME ROLE SHA256``: a name (what ``from`` and the
conversation's owner spell), ``user`` or ``admin``, and the hex SHA-256 of the principal's
token. Only the hash is kept, so the file opens nothing by being read. ``afp token add`` writes
it (``add_token``); the server reads it at start-up (``parse_tokens``). The single token of
``--token-file`` / ``AFP_API_TOKEN`` stands for the admin principal ``admin``.

A request's token is hashed and compared with every principal's hash with
``hmac.compare_digest``, none skipped once one matched, so the time an answer takes says
nothing about which hashes are near.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import tempfile
from collections.abc import Sequence
from pathlib import Path

import msgspec

from afp_runtime.api.constants import MIN_TOKEN_CHARS
from afp_runtime.errors import ConfigError

__all__ = [
    "ADMIN_NAME",
    "Principal",
    "Principals",
    "add_token",
    "default_tokens_path",
    "parse_tokens",
]

ADMIN_NAME = "admin"
"""The principal the single ``--token-file`` / ``AFP_API_TOKEN`` token stands for."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
"""A principal's name: no spaces (the file splits on them), at most 128 characters."""
ROLES = ("user", "admin")
_DIGEST = re.compile(r"[0-9a-f]{64}")
TOKEN_BYTES = 32
"""Random bytes of a token ``afp token add`` makes (43 URL-safe characters)."""


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who a request is: a name, and whether it may act for anyone (an admin)."""

    name: str
    admin: bool = False


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


class Principals:
    """The principals a server knows, each by the hash of its token.

    Args:
        entries: each principal with the SHA-256 digest of its token.
    """

    def __init__(self, entries: Sequence[tuple[Principal, bytes]]) -> None:
        self._entries = tuple(entries)

    @classmethod
    def of_token(cls, token: str) -> Principals:
        """The admin principal of the single configured token."""
        return cls([(Principal(name=ADMIN_NAME, admin=True), _digest(token.encode("utf-8")))])

    def __add__(self, other: Principals) -> Principals:
        return Principals([*self._entries, *other._entries])

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> tuple[str, ...]:
        """The principals' names, in file order."""
        return tuple(principal.name for principal, _ in self._entries)

    def authenticate(self, token: bytes) -> Principal | None:
        """The principal whose token this is, or None."""
        given = _digest(token)
        found: Principal | None = None
        for principal, digest in self._entries:
            if hmac.compare_digest(given, digest) and found is None:
                found = principal
        return found

    def bearer(self, authorization: str | None) -> Principal | None:
        """The principal an ``Authorization: Bearer <token>`` header proves, or None."""
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self.authenticate(given.strip().encode("utf-8"))

    def entries(self) -> tuple[tuple[Principal, bytes], ...]:
        """Each principal with its token's SHA-256 digest (what an inspector session is bound
        to, ``afp_runtime/api/inspector/session.py``)."""
        return self._entries


def parse_tokens(text: str, *, source: str) -> Principals:
    """The principals of a token file's text.

    Raises:
        ConfigError: a line that is not ``NAME ROLE SHA256``, an unknown role, a name given
            twice (names the file, the line and what is wrong; never a hash).
    """
    entries: list[tuple[Principal, bytes]] = []
    names: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{source} line {number}"
        if len(words) != 3:
            raise ConfigError(
                f"{where} must be NAME ROLE SHA256, not {len(words)} words", field="api.tokens"
            )
        name, role, digest = words
        if NAME.fullmatch(name) is None:
            raise ConfigError(
                f"{where}: a principal's name is 1 to 128 of [A-Za-z0-9._@+-], not {name[:40]!r}",
                field="api.tokens",
            )
        if role not in ROLES:
            raise ConfigError(
                f"{where}: the role must be user or admin, not {role[:40]!r}", field="api.tokens"
            )
        if _DIGEST.fullmatch(digest) is None:
            raise ConfigError(
                f"{where}: the third word must be a token's SHA-256 in 64 lower-case hex digits",
                field="api.tokens",
            )
        if name in names:
            raise ConfigError(f"{where}: principal {name!r} is named twice", field="api.tokens")
        names.add(name)
        entries.append((Principal(name=name, admin=role == "admin"), bytes.fromhex(digest)))
    return Principals(entries)


def default_tokens_path(db: str) -> Path | None:
    """Where the token file of a store lives unless ``--tokens`` says: next to a SQLite file
    (``afp.db.tokens``); a database URL has no such place (None)."""
    from afp_runtime.store import sqlite_path

    if "://" in db and not db.startswith("sqlite://"):
        return None
    try:
        path = sqlite_path(db)
    except ConfigError:
        return None
    return path.with_name(path.name + ".tokens")


def add_token(path: Path, name: str, *, admin: bool) -> str:
    """Add principal ``name`` to the token file at ``path`` (made, mode 0600, if missing) with a
    new random token; returns the token, which is stored only as its hash.

    Blocking: call it off the event loop.

    Raises:
        ConfigError: the name is not allowed or already in the file, or the file is damaged or
            cannot be written.
    """
    if NAME.fullmatch(name) is None:
        raise ConfigError(
            f"a principal's name is 1 to 128 of [A-Za-z0-9._@+-], not {name[:40]!r}",
            field="api.tokens",
        )
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", field="api.tokens") from exc
    known = parse_tokens(text, source=str(path))
    if name in known.names():
        raise ConfigError(
            f"{path} names principal {name!r} already; remove its line to replace its token",
            field="api.tokens",
        )
    token = secrets.token_urlsafe(TOKEN_BYTES)
    assert len(token) >= MIN_TOKEN_CHARS
    line = f"{name} {'admin' if admin else 'user'} {_digest(token.encode()).hex()}\n"
    body = text if not text or text.endswith("\n") else text + "\n"
    _replace(path, body + line)
    return token


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all, readable by its owner only."""
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc}", field="api.tokens") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:  # mkstemp makes it 0600
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise ConfigError(f"cannot write {path}: {exc}", field="api.tokens") from exc
