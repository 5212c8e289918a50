"""The one exception hierarchy of afp_runtime.

Every error names what was wrong (a field path, an offending value truncated to 200 code
points) in our own words. Bad input is validated before any transaction, so an error never
leaves stored data half-written.

    AfpError
    ├── ConfigError
    │   ├── AgentDefinitionError
    │   ├── ToolDefinitionError
    │   ├── PeriodDeclarationError (field)
    │   ├── WindowConfigError
    │   └── FindingsConfigError
    ├── InputError
    │   ├── InvalidValue
    │   ├── CheckpointInvalid
    │   ├── ConversationMismatch
    │   ├── IdempotencyConflict
    │   ├── NotOwner
    │   ├── TimeNotEnabled
    │   └── InvalidAnswer         (reason)
    ├── NotFound                  (what, value)
    ├── StateError
    │   ├── RunNotResumable
    │   ├── RunNotHeld
    │   ├── QuestionClosed
    │   ├── ScriptExhausted
    │   └── CopyRefused
    ├── ModelCallError            (error_kind, status, retryable, provider)
    ├── WindowStrategyError       (strategy, field, detail) holds the turn: window-strategy
    ├── CompactionUnmeasurableError (provider)      holds the turn: usage-unmeasurable
    ├── TimeReaderError                             holds the turn: time-reader
    ├── McpServerError            (server)  an MCP server did not start, answer or follow MCP
    ├── McpToolError              (server, tool)  an MCP tool answered with an error
    └── StoreError
        ├── StoreUnavailable
        ├── SchemaTooNew
        ├── StoreDamaged
        └── LeaseLost
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from afp_runtime._secrets import redact, redact_value

_VALUE_LIMIT = 200


def shown(value: Any) -> str:
    """Render an offending value for an error message, truncated to 200 code points."""
    text = repr(value)
    return text if len(text) <= _VALUE_LIMIT else text[:_VALUE_LIMIT] + "…"


class AfpError(Exception):
    """Base of every error afp_runtime raises on purpose."""

    def __init__(self, message: str, **context: Any) -> None:
        # A provider or server may echo a credential into the text an error quotes: it is
        # taken out here, before any row, event, page or log line can hold it
        # (docs/host.md#secrets-in-errors-and-logs).
        message = redact(message)
        super().__init__(message)
        self.message = message
        self.context: dict[str, Any] = {key: redact_value(v) for key, v in context.items()}

    def __str__(self) -> str:
        if not self.context:
            return self.message
        where = ", ".join(f"{k}={v}" for k, v in self.context.items())
        return f"{self.message} ({where})"


class ConfigError(AfpError):
    """A configuration file, agent definition or option is invalid."""


class AgentDefinitionError(ConfigError):
    """An agent definition is invalid (names the field)."""


class ToolDefinitionError(ConfigError):
    """A tool declaration is invalid (names the tool and the property)."""


class PeriodDeclarationError(ConfigError):
    """A tool's period declaration is invalid (docs/time.md#validation-at-definition-time); names
    the field."""


class WindowConfigError(ConfigError):
    """A window strategy or its options are invalid (names the factory, option and value)."""


class FindingsConfigError(ConfigError):
    """A findings configuration option is invalid (names the option and the value)."""


class InputError(AfpError):
    """A value from outside (a model, a client, an import) is invalid."""


class InvalidValue(InputError, ValueError):
    """A value cannot be accepted; names its path and the value."""


class CheckpointInvalid(InputError):
    """A conversation checkpoint failed strict validation."""


class ConversationMismatch(InputError):
    """A checkpoint belongs to another agent than the one it is loaded into."""


class IdempotencyConflict(InputError):
    """An idempotency key was reused with different content."""


class TimeNotEnabled(InputError):
    """A message carried ``time`` for an agent without the time layer (422
    ``time-not-enabled``)."""


class NotOwner(InputError):
    """A message or answer came from a principal other than the conversation's owner."""


class InvalidAnswer(InputError):
    """An answer does not fit its question's kind; ``reason`` is a short code."""

    def __init__(self, message: str, *, reason: str, **context: Any) -> None:
        super().__init__(message, reason=reason, **context)
        self.reason = reason


class NotFound(AfpError, LookupError):
    """The named agent, run, epoch, question or folded span does not exist."""


class StateError(AfpError):
    """An operation does not fit the current state."""


class RunNotResumable(StateError):
    """A run or turn cannot be resumed in its current state."""


class RunNotHeld(StateError):
    """A dismiss named a run whose turn is not held."""


class QuestionClosed(StateError):
    """The question was already answered or abandoned."""


class ScriptExhausted(StateError):
    """A scripted model or tool ran out of scripted replies."""


class CopyRefused(StateError):
    """A copy between stores would overwrite what the destination holds, or take agents a live
    host holds in the source (docs/storage.md#moving-between-stores); names them. Nothing was
    written."""


class ModelCallError(AfpError):
    """A model call failed; carries the error kind, HTTP status and whether a retry may help.

    ``error_kind`` is one of ``context-length``, ``auth``, ``bad-request``, ``rate-limited``,
    ``server``, ``network``, ``bad-response``, ``resource``, ``script-exhausted``, ``adapter``.
    """

    def __init__(
        self,
        message: str,
        *,
        error_kind: str,
        provider: str,
        status: int | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
        **context: Any,
    ) -> None:
        super().__init__(message, **context)
        self.error_kind = error_kind
        self.provider = provider
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        # Set by the retry loop: every failed send of the epoch, in order.
        self.attempts: tuple[Any, ...] = ()


# Out of descriptors, memory or disk space: the process's or the machine's state, not the code's
# or the input's, so the same call may succeed later (docs/loop.md#error-classification).
TRANSIENT_RESOURCE_ERRNOS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOSPC, errno.ENOBUFS}
)


def transient_resource_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` of a transient resource shortage (``EMFILE``, ``ENFILE``, ``ENOMEM``,
    ``ENOSPC``, ``ENOBUFS``) that ``exc`` is or was raised from, if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in TRANSIENT_RESOURCE_ERRNOS:
            return current
        current = current.__cause__ or current.__context__
    return None


class WindowStrategyError(AfpError):
    """A window strategy broke the rules of the window family; the turn is held.

    ``error_kind`` is ``window-strategy``: the same code would fail the same way, so the turn is
    never retried automatically.
    """

    error_kind = "window-strategy"

    def __init__(self, message: str, *, strategy: str, field: str, **context: Any) -> None:
        super().__init__(message, strategy=strategy, field=field, **context)
        self.strategy = strategy
        self.field = field


class CompactionUnmeasurableError(AfpError):
    """A token strategy read a usage of 0 input and 0 output tokens; the turn is held."""

    error_kind = "usage-unmeasurable"

    def __init__(self, message: str, *, provider: str, **context: Any) -> None:
        super().__init__(message, provider=provider, **context)
        self.provider = provider


class TimeReaderError(AfpError):
    """A time reader returned output that is not shaped ``{mentions: [...]}``; the turn is held
    (docs/time.md#readers)."""

    error_kind = "time-reader"


class McpServerError(AfpError):
    """An MCP server did not start, stopped answering, or sent what MCP does not allow; a call
    it was to answer gets this as its error observation (docs/mcp.md#when-a-server-fails)."""


class McpToolError(AfpError):
    """An MCP tool answered its call with ``isError``: the model reads its text as the error
    observation (docs/mcp.md#results)."""


class StoreError(AfpError):
    """The store failed or holds something it cannot accept."""


class StoreUnavailable(StoreError):
    """The store cannot be opened or written, for now (docs/host.md#hosts-and-a-failing-store).

    ``cause`` is a short stable code: ``unreachable`` (a server down, a file locked),
    ``disk-full``, ``read-only`` (the file or its folder may not be written), ``io-error``,
    ``cannot-open`` (the file is gone or cannot be opened) or ``wal-limit`` (a SQLite WAL past its
    bound, docs/storage.md#store-faults).
    """

    def __init__(self, message: str, *, cause: str = "unreachable", **context: Any) -> None:
        super().__init__(message, **context)
        self.cause = cause


class SchemaTooNew(StoreError):
    """The database was written by a newer afp_runtime; it is never overwritten."""


class StoreDamaged(StoreError):
    """The database is damaged or is not an afp_runtime database."""


class LeaseLost(StoreError):
    """This host no longer holds the lease (or the claim) its commit was fenced by; nothing
    of the transaction was written."""


@contextmanager
def error_context(**context: Any) -> Iterator[None]:
    """Attach context (agent id, run id, field) to any AfpError passing through."""
    try:
        yield
    except AfpError as exc:
        for key, value in context.items():
            exc.context.setdefault(key, value)
        raise


_DECODED_AT = re.compile(r" ?- at `\$\.?(?P<path>[^`]*)`$")
_UNKNOWN_FIELD = re.compile(r"unknown field `(?P<name>[^`]*)`")
_NAMED_FIELD = re.compile(r"(?:unknown|missing required) field `(?P<name>[^`]*)`")


def decoded_path(error: msgspec.ValidationError, *, missing: bool = True) -> tuple[str, str]:
    """The wire path a msgspec decoding error names and what is wrong there: msgspec's
    ``at `$...``` followed by the field a struct's own check names (an ``InvalidValue`` raised in
    its ``__post_init__``, relative to that struct), or the unknown key (and, with ``missing``,
    the missing one). The path is ``""`` for the top level."""
    text = str(error)
    at = _DECODED_AT.search(text)
    path = at.group("path") if at else ""
    cause = error.__cause__
    if isinstance(cause, InvalidValue):
        name, detail = str(cause.context.get("field", "")), cause.message
    else:
        detail = text[: at.start()] if at else text
        named = (_NAMED_FIELD if missing else _UNKNOWN_FIELD).search(detail)
        name = named.group("name") if named else ""
    if name:
        path = f"{path}.{name}" if path else name
    return path, detail
