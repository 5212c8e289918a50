"""The inspector's sign-in: what its cookie holds and how a request proves it
(docs/inspector.md#signing-in).

With a token the inspector asks for it once, in a form, and keeps a session value in a cookie
marked ``HttpOnly`` (no script reads it) and ``SameSite=Strict`` (no other site's page sends
it). The cookie holds an HMAC of the token, not the token: a leaked cookie opens the pages but
is no bearer token for the API.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = [
    "COOKIE",
    "clearing_cookie",
    "matches",
    "session_cookie",
    "session_of",
    "signed_in",
]

COOKIE = "afp_session"
_LABEL = b"afp inspector session v1"


def matches(given: bytes, token: bytes) -> bool:
    """Whether a token typed into the form is the token (compared in constant time)."""
    return hmac.compare_digest(given, token)


def session_of(token: bytes) -> str:
    """The cookie value that stands for ``token``."""
    return hmac.new(token, _LABEL, hashlib.sha256).hexdigest()


def session_cookie(token: bytes) -> str:
    """The ``Set-Cookie`` value that signs a browser in."""
    return f"{COOKIE}={session_of(token)}; Path=/; HttpOnly; SameSite=Strict"


def clearing_cookie() -> str:
    """The ``Set-Cookie`` value that signs a browser out."""
    return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"


def signed_in(cookie_header: str | None, token: bytes) -> bool:
    """Whether a ``Cookie`` header carries the session of ``token``."""
    expected = session_of(token).encode("ascii")
    for part in (cookie_header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and hmac.compare_digest(value.strip().encode("latin-1"), expected):
            return True
    return False
