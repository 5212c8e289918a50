"""The library's logger: structlog events that never reach stdout on their own.

A library must not decide where its logs go. ``get_logger()`` hands out a logger that follows
the application's structlog configuration once there is one (``afp`` configures it: stderr,
colour only on a terminal, JSON with ``--log-format json``). Until then, events go to the
standard ``logging`` logger ``afp_runtime`` as plain ``event key=value`` text, so an embedding
program sees warnings on stderr (``logging``'s last-resort handler) and nothing else unless it
configures ``logging`` itself (docs/python.md#logs).

Every event is redacted (``_secrets.redact_event``) before it is rendered, so a credential the
runtime holds, or one an endpoint echoed, never reaches a log line. Whoever configures structlog
for the application keeps that step: ``afp`` does (docs/host.md#secrets-in-errors-and-logs).

Like ``errors.py``, this module imports nothing of ours but the ``_secrets`` leaf, and every
layer may import it.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

from afp_runtime._secrets import redact_event

_fallback: Any = None


def _unconfigured() -> Any:
    """The logger used while the application has not configured structlog."""
    global _fallback
    if _fallback is None:
        _fallback = structlog.wrap_logger(
            logging.getLogger("afp_runtime"),
            processors=[
                structlog.contextvars.merge_contextvars,
                structlog.stdlib.filter_by_level,
                structlog.processors.format_exc_info,
                redact_event,
                structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
            ],
            wrapper_class=structlog.stdlib.BoundLogger,
        )
    return _fallback


class _Logger:
    """Resolves, at every call, to the application's structlog logger or to the fallback."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        target = structlog.get_logger() if structlog.is_configured() else _unconfigured()
        return getattr(target, name)


def get_logger() -> Any:
    """The logger a library module keeps as ``log = get_logger()``."""
    return _Logger()
