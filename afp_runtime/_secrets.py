"""Credentials the runtime holds, and one ``redact`` that takes them out of any text.

Every adapter registers its API key (and the Basic credentials of a base URL), a Postgres
store its password; ``redact`` replaces each held secret with ``***`` and, whoever's it is, the
value after ``Bearer``/``Basic``, the password of a URL's user information and an
``api_key=``/``password=``-style value. It runs where an error is made (``AfpError``), where a
turn's error is stored and on every log line, so a provider or server that echoes a credential
back cannot put it in a row, an API answer, a page or a log
(docs/host.md#secrets-in-errors-and-logs).

Like ``errors.py``, this module imports nothing of ours, and every layer may import it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import MutableMapping
from typing import Any

MASK = "***"

# A held secret shorter than this is not matched on its own (it would cut ordinary words);
# the patterns below still find it after Bearer/Basic, in a URL or after password=.
_MIN_HELD = 3
# Shorter held secrets match only as a whole word, so a password "hunter2" does not cut
# "hunter22"; longer ones (keys) match anywhere.
_WHOLE_WORD_BELOW = 12

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # The credential of an Authorization header, echoed in any form.
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\1\2{MASK}"),
    # A URL's user information: scheme://user:password@host.
    (
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/?#@\"'<>]*):[^\s@/?#\"'<>]*@"),
        rf"\1:{MASK}@",
    ),
    # key=value and "key": "value" forms of the usual credential names.
    (
        re.compile(
            r"(?i)\b(x-api-key|api[-_]?key|password|passwd|secret[-_]?key|access[-_]?token)"
            r"(\"?'?\s*[:=](?:\s*[\"'])?)[^\s\"'&,;}]+"
        ),
        rf"\1\2{MASK}",
    ),
)

_lock = threading.Lock()
_held: frozenset[str] = frozenset()
_held_pattern: re.Pattern[str] | None = None


def hold(secret: str | None) -> None:
    """Remember ``secret`` so ``redact`` takes it out of every text from now on (for the life
    of the process). None, an empty or a very short value is ignored."""
    global _held, _held_pattern
    if not secret or len(secret) < _MIN_HELD or secret in _held:
        return
    with _lock:
        held = _held | {secret}
        # Longest first, so a key is masked whole when a shorter secret is a part of it.
        parts = [
            re.escape(s)
            if len(s) >= _WHOLE_WORD_BELOW
            else rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])"
            for s in sorted(held, key=len, reverse=True)
        ]
        _held_pattern = re.compile("|".join(parts))
        _held = held


def redact(text: str) -> str:
    """``text`` with every held secret and every credential-looking value spelled ``***``."""
    if not text:
        return text
    pattern = _held_pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    for found, replacement in _PATTERNS:
        text = found.sub(replacement, text)
    return text


def redact_value(value: Any) -> Any:
    """``value`` with ``redact`` applied to every string in it (dicts, lists and tuples are
    rebuilt; anything else is returned as is)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_value(item) for item in value)
    return value


def redact_event(
    logger: Any, name: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: ``redact`` every string of a log event (exceptions included,
    so put it after ``format_exc_info``)."""
    for key, value in event.items():
        if isinstance(value, BaseException):
            event[key] = redact(f"{type(value).__name__}: {value}")
        else:
            event[key] = redact_value(value)
    return event
