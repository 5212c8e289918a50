"""The inspector's sign-in: what its cookie holds and how a request proves it
(docs/inspector.md#signing-in).

With tokens the inspector asks for one once, in a form, and keeps a session value in a cookie
marked ``HttpOnly`` (no script reads it) and ``SameSite=Strict`` (no other site's page sends
it). The cookie holds an HMAC keyed by the hash of the token it signed in with, not the token:
a leaked cookie opens the pages but is no bearer token for the API. Which principal a cookie
stands for is ``Principals.signed_in`` (``afp_runtime/api/principals.py``).
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = [
    "COOKIE",
    "clearing_cookie",
    "cookie_setting",
    "cookie_values",
    "session_of",
]

COOKIE = "afp_session"
_LABEL = b"afp inspector session v1"


def session_of(key: bytes) -> str:
    """The cookie value that stands for the token whose hash is ``key``."""
    return hmac.new(key, _LABEL, hashlib.sha256).hexdigest()


def cookie_setting(value: str) -> str:
    """The ``Set-Cookie`` value that signs a browser in with session ``value``."""
    return f"{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict"


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
