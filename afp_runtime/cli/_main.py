"""The entry point of ``afp``: parse, import the one command asked for, cross into async once,
and turn what went wrong into an exit code and one line on stderr (never a traceback)."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable, Coroutine, MutableMapping, Sequence
from typing import Any

from afp_runtime.cli._exits import (
    EXIT_INTERNAL,
    EXIT_MISSING,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    Refused,
    Unavailable,
    UsageError,
)
from afp_runtime.cli._parser import build_parser, command_named

Command = Callable[[Any], Coroutine[Any, Any, int]]
_LOG_FORMATS = ("console", "json")


def _configure_logging(verbose: bool, log_format: str) -> None:
    """The application's structlog setup: stderr only, JSON lines with ``--log-format json``
    (or ``AFP_LOG_FORMAT=json``), ANSI colour only when stderr is a terminal."""
    import structlog  # loaded only by commands whose code logs (checked in ``main``)

    from afp_runtime._secrets import redact_event

    level = logging.INFO if verbose else logging.WARNING
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            # docs/host.md#secrets-in-errors-and-logs: no credential reaches a log line.
            redact_event,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )
    # Libraries that log through the standard ``logging`` (asyncpg's pool, the HTTP server)
    # come out in the same format, JSON lines included, rather than as bare text.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso"),
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                # Without -v a library's traceback (asyncpg's pool while a server is down) is
                # one line, as ours are (docs/host.md#hosts-and-a-failing-store).
                *([] if verbose else [_exception_in_one_line]),
                structlog.processors.format_exc_info,
                redact_event,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def _exception_in_one_line(
    logger: Any, name: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A log record's exception as ``error="Type: message"`` instead of its traceback."""
    found = event.pop("exc_info", None)
    if found is True:
        found = sys.exc_info()
    error = found if isinstance(found, BaseException) else (found[1] if found else None)
    if error is not None:
        event["error"] = f"{type(error).__name__}: {error}"
    return event


def _warn_of_a_password(words: Sequence[str]) -> None:
    """One line on stderr when the command line holds a password (a store URL's): every local
    user can read it in the process list (docs/storage.md#passwords)."""
    from afp_runtime._secrets import redact

    if any("://" in word and redact(word) != word for word in words):
        from afp_runtime.cli._show import warn

        warn(
            "afp: warning: a password on the command line can be read by every local user "
            "(ps); give it in PGPASSWORD, a password file or ~/.pgpass instead"
        )


def _command(reference: str) -> Command:
    module_name, _, function = reference.partition(":")
    module = importlib.import_module(f"{__package__}.{module_name}")
    found: Command = getattr(module, function)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``afp``: parse, then cross into async exactly once."""
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(command_named(words)).parse_args(words)
    log_format = args.log_format or os.environ.get("AFP_LOG_FORMAT") or "console"
    if log_format not in _LOG_FORMATS:
        sys.stderr.write("afp: AFP_LOG_FORMAT must be console or json\n")
        return EXIT_USAGE
    _warn_of_a_password(words)
    command = _command(args.command_ref)
    if "structlog" in sys.modules:
        # The command's code logs: configure it before anything runs.
        _configure_logging(args.verbose, log_format)
    return _run(command, args)


def _run(command: Command, args: Any) -> int:
    import anyio

    from afp_runtime.cli._show import warn
    from afp_runtime.errors import (
        AfpError,
        ConfigError,
        CopyRefused,
        IdempotencyConflict,
        NotFound,
        NotOwner,
        QuestionClosed,
        RunNotHeld,
        RunNotResumable,
        StoreError,
    )

    try:
        try:
            return anyio.run(command, args, backend_options=_loop_options(args))
        except BaseExceptionGroup as group:
            # A task group (``afp serve``'s signal watcher) wraps what its body raised: one
            # error is answered by its own rule (a store that cannot be written exits 4).
            raise _sole_error(group) from None
    except NotFound as exc:
        warn(f"afp: {exc.message}")
        return EXIT_MISSING
    except (UsageError, ConfigError) as exc:
        warn(f"afp: {exc}")
        return EXIT_USAGE
    except (
        NotOwner,
        QuestionClosed,
        RunNotHeld,
        RunNotResumable,
        IdempotencyConflict,
        CopyRefused,
    ) as exc:
        # A write the state or the ownership refuses.
        warn(f"afp: {exc.message}")
        return EXIT_REFUSED
    except Refused as exc:
        warn(f"afp: {exc}")
        return EXIT_REFUSED
    except (StoreError, Unavailable) as exc:
        warn(f"afp: {exc}")
        return EXIT_UNAVAILABLE
    except AfpError as exc:
        warn(f"afp: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # A failure with no rule above is a bug: one line, never a traceback; -v logs it.
        if getattr(args, "verbose", False):
            logging.getLogger("afp").exception("internal error")
        warn(f"afp: internal error, {type(exc).__name__}: {exc} (run with -v for the traceback)")
        return EXIT_INTERNAL


def _loop_options(args: Any) -> dict[str, Any]:
    """uvloop for ``afp serve`` when installed (``--loop``, ``AFP_LOOP``;
    docs/host.md#the-event-loop); the other commands run briefly on asyncio's own loop."""
    if not hasattr(args, "loop"):
        return {}
    from afp_runtime._embed.running import backend_options

    return backend_options(args.loop)


def _sole_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error inside ``group`` (and its nested groups), else the group itself."""
    found: BaseException = group
    while isinstance(found, BaseExceptionGroup) and len(found.exceptions) == 1:
        found = found.exceptions[0]
    return group if isinstance(found, BaseExceptionGroup) else found
