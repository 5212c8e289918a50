"""``afp token add`` and the token file ``afp serve`` reads (docs/api.md#principals-and-tokens)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from afp_runtime.api.principals import Principals, add_token, default_tokens_path, parse_tokens
from afp_runtime.cli._exits import EXIT_OK
from afp_runtime.cli._show import say, warn
from afp_runtime.errors import ConfigError


def tokens_path(given: str | None, db: str) -> tuple[Path | None, bool]:
    """The token file: ``--tokens``, else ``AFP_TOKENS``, else next to a SQLite ``--db``; and
    whether it was named (a named file must exist, the one next to the store may not)."""
    named = given or os.environ.get("AFP_TOKENS") or None
    if named is not None:
        return Path(named), True
    return default_tokens_path(db), False


async def load_principals(given: str | None, db: str) -> Principals | None:
    """The principals of the token file ``afp serve`` uses, or None when there is none.

    Raises:
        ConfigError: a named file is missing or unreadable, or a line of it is damaged.
    """
    path, named = tokens_path(given, db)
    if path is None:
        return None
    try:
        text = await anyio.Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        if not named:
            return None
        raise ConfigError(f"no token file {path}", field="api.tokens") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the token file {path}: {exc}", field="api.tokens") from exc
    return parse_tokens(text, source=str(path))


async def cmd_token_add(args: Any) -> int:
    """Add a principal; print its token once on stdout, where it went on stderr."""
    path, _ = tokens_path(args.tokens, args.db)
    if path is None:
        raise ConfigError(
            "a database URL has no file beside it: name the token file with --tokens",
            field="api.tokens",
        )
    token = await anyio.to_thread.run_sync(lambda: add_token(path, args.name, admin=args.admin))
    role = "admin" if args.admin else "user"
    warn(f"afp: added {role} principal {args.name} to {path}; its token (shown only now):")
    say(token)
    return EXIT_OK
