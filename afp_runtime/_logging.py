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
import sys
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


# The application's logger as last assembled, and what it was assembled from: the configuration's
# parts and the standard streams (a print logger made without a file writes to the ``sys.stdout``
# of its making). Assembling one costs ~20 µs, and the loop logs every iteration. The parts are
# compared by identity (their ``id``s, the parts kept alive so no id is reused): structlog's test
# capture edits the processor list in place, and a fresh list equal to an old one is another list.
_assembled: tuple[tuple[int, ...], tuple[Any, ...], Any] | None = None


def _configured() -> Any:
    """The application's structlog logger, assembled again only when its configuration (or a
    standard stream) changed since the last one."""
    global _assembled
    config = structlog.get_config()
    parts = (
        config["processors"],
        config["wrapper_class"],
        config["context_class"],
        config["logger_factory"],
        sys.stdout,
        sys.stderr,
    )
    ids = tuple(map(id, parts))
    held = _assembled
    if held is not None and held[0] == ids:
        return held[2]
    logger = structlog.get_logger().bind()
    _assembled = (ids, parts, logger)
    return logger


class _Logger:
    """Resolves, at every call, to the application's structlog logger or to the fallback."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        target = _configured() if structlog.is_configured() else _unconfigured()
        return getattr(target, name)


def get_logger() -> Any:
    """The logger a library module keeps as ``log = get_logger()``."""
    return _Logger()
