"""The inspector's sign-in: what its cookie holds and how a request proves it
(docs/inspector.md#signing-in).

With tokens the inspector asks for one once, in a form, and keeps a session value in a cookie
marked ``HttpOnly`` (no script reads it) and ``SameSite=Strict`` (no other site's page sends
it). A session is ``SID.ISSUED.MAC``: a random session id, the issue time (epoch ms on the
host's clock) and an HMAC-SHA-256 over both and the principal it signed in as (its name, role
and token hash), keyed by a secret made when the app is created and held only in memory. So
nothing on disk (the token file's hashes included) makes a session, a restart ends every
session, a principal whose token, name or role changed no longer matches, and a leaked cookie
opens the pages for at most ``SESSION_MAX_AGE_S`` and is no bearer token for the API.
``POST /logout`` revokes the session id it carries (``Sessions.revoke``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable

from afp_runtime.api.principals import Principal, Principals

__all__ = [
    "COOKIE",
    "SESSION_MAX_AGE_S",
    "Sessions",
    "clearing_cookie",
    "cookie_values",
]

COOKIE = "afp_session"
SESSION_MAX_AGE_S = 12 * 60 * 60
"""How long a sign-in lasts (docs/inspector.md#signing-in): the cookie's ``Max-Age`` and the
server's check of its issue time."""
_LABEL = b"afp inspector session v2"
_SECRET_BYTES = 32
_VALUE = re.compile(rb"([0-9a-f]{32})\.([0-9]{1,15})\.([0-9a-f]{64})")


def clearing_cookie() -> str:
    """The ``Set-Cookie`` value that signs a browser out."""
    return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"


def cookie_values(cookie_header: str | None) -> list[bytes]:
    """The session values a ``Cookie`` header carries (a browser may send several)."""
    values: list[bytes] = []
    for part in (cookie_header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            values.append(value.strip().encode("latin-1"))
    return values


def _bound(principal: Principal, digest: bytes) -> bytes:
    """What a session is bound to: the token's hash, the name and the role."""
    role = b"admin" if principal.admin else b"user"
    return b"\0".join((digest, principal.name.encode("utf-8"), role))


class Sessions:
    """The inspector's sessions of one serving process.

    Args:
        principals: the principals a session may stand for.
        now_ms: the clock (epoch ms) issue times are taken from and checked against.
        secret: the signing key (default: 32 random bytes, made here; never stored).
        max_age_s: how long a session lasts.
    """

    def __init__(
        self,
        principals: Principals,
        *,
        now_ms: Callable[[], int],
        secret: bytes | None = None,
        max_age_s: int = SESSION_MAX_AGE_S,
    ) -> None:
        self._entries = tuple(
            (principal, _bound(principal, digest)) for principal, digest in principals.entries()
        )
        self._now_ms = now_ms
        self._secret = secret if secret is not None else secrets.token_bytes(_SECRET_BYTES)
        self.max_age_s = max_age_s
        # Revoked session ids by issue time: one older than the max age is refused anyway, so
        # it is dropped, and the set holds at most the sign-ins of one max age.
        self._revoked: dict[bytes, int] = {}

    def _mac(self, sid: bytes, issued: bytes, bound: bytes) -> bytes:
        message = b"\0".join((_LABEL, sid, issued, bound))
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest().encode("ascii")

    def cookie(self, principal: Principal) -> str:
        """The ``Set-Cookie`` value that signs a browser in as ``principal``: a new session
        (a new id and issue time) on every call."""
        bound = next(bound for known, bound in self._entries if known == principal)
        sid = secrets.token_hex(16).encode("ascii")
        issued = str(self._now_ms()).encode("ascii")
        value = b".".join((sid, issued, self._mac(sid, issued, bound))).decode("ascii")
        return f"{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={self.max_age_s}"

    def _check(self, value: bytes) -> tuple[Principal, bytes, int] | None:
        """The principal, session id and issue time of a live session value, or None."""
        match = _VALUE.fullmatch(value)
        if match is None:
            return None
        sid, issued, mac = match.groups()
        found: Principal | None = None
        # Every principal is compared, none skipped once one matched (no timing tells which).
        for principal, bound in self._entries:
            if hmac.compare_digest(mac, self._mac(sid, issued, bound)) and found is None:
                found = principal
        issued_ms = int(issued)
        age_ms = self._now_ms() - issued_ms
        if found is None or not 0 <= age_ms < self.max_age_s * 1000 or sid in self._revoked:
            return None
        return found, sid, issued_ms

    def signed_in(self, cookie_header: str | None) -> Principal | None:
        """The principal whose live session a ``Cookie`` header carries, or None."""
        for value in cookie_values(cookie_header):
            checked = self._check(value)
            if checked is not None:
                return checked[0]
        return None

    def revoke(self, cookie_header: str | None) -> None:
        """End the live sessions a ``Cookie`` header carries: their values are refused from
        now on (until the process ends, which ends every session)."""
        oldest = self._now_ms() - self.max_age_s * 1000
        for sid in [sid for sid, issued in self._revoked.items() if issued < oldest]:
            del self._revoked[sid]
        for value in cookie_values(cookie_header):
            checked = self._check(value)  # only a genuine session takes room here
            if checked is not None:
                _, sid, issued_ms = checked
                self._revoked[sid] = issued_ms
