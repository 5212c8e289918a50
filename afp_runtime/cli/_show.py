"""What ``afp`` prints: content shown exactly as data, never as markup.

Every text that comes from a conversation, a tool, a config or an error goes through
``visible``: control characters become visible pictures (``␛`` for ESC, so an ANSI sequence
cannot colour or move the terminal), bidirectional overrides are named (``⟨U+202E⟩``), and
nothing is read as Rich markup or emoji. JSON output (``write_json``) is the encoder's bytes,
exactly; on a terminal the characters the tables show as pictures are written as escapes
(``\\u202e``) instead, still JSON that decodes to the same value. docs/api.md#the-afp-command.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table
from rich.text import Text

from afp_runtime.cli._exits import EXIT_OK

# Characters that reorder or hide text on a terminal (the "Trojan source" set) and the
# Unicode line separators: named, so what is shown is what is stored.
_NAMED = frozenset(
    [0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)

# Piped output is read by people too (less, a file): 160 columns unless COLUMNS says otherwise,
# so ids and times are not folded to fit 80.
_PIPED_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160

out = Console(markup=False, highlight=False, emoji=False, width=_PIPED_WIDTH)
err = Console(stderr=True, markup=False, highlight=False, emoji=False)


def _picture(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀..␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\u27e8U+{code:04X}\u27e9"


def visible(text: str, *, keep_lines: bool = True) -> str:
    """``text`` with every control character made visible; newlines and tabs stay when
    ``keep_lines`` (they lay a multi-line content out), else they become pictures too."""
    kept = "\n\t" if keep_lines else ""
    return "".join(
        _picture(char)
        if (
            (ord(char) < 0x20 and char not in kept)
            or 0x7F <= ord(char) <= 0x9F
            or ord(char) in _NAMED
        )
        else char
        for char in text
    )


def say(text: str) -> None:
    """Print one line of output (data, shown exactly)."""
    out.print(Text(visible(text)), soft_wrap=True)


def warn(text: str) -> None:
    """Print one line to stderr (an error or a notice), shown exactly."""
    err.print(Text(visible(text)), soft_wrap=True)


# JSON text holds a raw control only inside a string (the encoders escape C0 there already,
# but not DEL, C1 or the bidi marks) or as whitespace between tokens (tab, newline, carriage
# return), which stays as it is.
_TERMINAL_ESCAPES = {
    code: f"\\u{code:04x}"
    for code in (*range(0x20), *range(0x7F, 0xA0), *_NAMED)
    if chr(code) not in "\t\n\r"
}


def json_for_terminal(text: str) -> str:
    """JSON text with the C0 and C1 controls, DEL, the bidi marks and the line separators escaped
    (``\\u202e``; inside a JSON string, the only place they can be): the same value, but nothing
    a terminal would act on or reorder."""
    return text.translate(_TERMINAL_ESCAPES)


def write_json(data: bytes | str) -> None:
    """Write JSON text and a newline to stdout: byte for byte to a file or a pipe, with
    ``json_for_terminal`` applied on a terminal (docs/api.md#json-output)."""
    text = data.decode() if isinstance(data, bytes) else data
    if sys.stdout.isatty():
        text = json_for_terminal(text)
    sys.stdout.write(text + "\n")


def print_json(value: Any) -> int:
    """The value as indented JSON on stdout (``write_json``); returns ``EXIT_OK``, so a
    command can end with it."""
    write_json(msgspec.json.format(msgspec.json.encode(value)))
    return EXIT_OK


def when(ms: int | None) -> str:
    """Epoch milliseconds as a UTC time for tables; ``-`` for none."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def brief(value: Any, limit: int = 60) -> str:
    """A value as compact JSON, cut at ``limit`` code points with ``…``."""
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


WIDE = frozenset(
    {
        "text",
        "content",
        "prompt",
        "writes",
        "detail",
        "refusals",
        "pins",
        "value",
        "clauses not passing",
        "calls / id",
        "tool calls / id",
        "",
    }
)
"""Columns of free text: they fold to fit; every other column (ids, times, counts) keeps its
cells on one line, whole."""


def table(*headers: str, title: str | None = None) -> Table:
    """A table whose cells fold rather than vanish behind an ellipsis."""
    grid = Table(title=Text(visible(title)) if title else None)
    for header in headers:
        grid.add_column(Text(header), no_wrap=header not in WIDE, overflow="fold")
    return grid


def add_row(grid: Table, cells: Iterable[Any]) -> None:
    """Add a row; every cell is shown as data (``visible``), never as markup."""
    grid.add_row(*(Text(visible(str(cell))) for cell in cells))


def show_table(grid: Table, *, empty: str) -> None:
    """Print the table, or ``empty`` when it has no rows (so an empty result says so)."""
    if grid.row_count == 0:
        say(empty)
    else:
        out.print(grid)


def command_name() -> str:
    """How a person types this command in the shell it was run from: ``afp`` when that name
    on ``PATH`` is this installation's, else the path of this installation's ``afp`` (relative
    when it lies under the working directory, as ``.venv/bin/afp`` after ``scripts/demo``), so a
    printed hint runs as printed (docs/api.md#the-afp-command). Reads the file system: call it
    off the event loop."""
    here = Path(sys.executable).with_name("afp")
    found = shutil.which("afp")
    if not here.exists() or (found is not None and Path(found).resolve() == here.resolve()):
        return "afp"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)
