"""A small disk that fills (docs/storage.md#store-faults): a 2 MB tmpfs the suite mounts (it runs
as root here). Where it may not mount one, it says so in a warning and fills the file instead
with ``PRAGMA max_page_count`` (SQLite answers the same ``SQLITE_FULL``), so the rules are still
tested in process; tests of ``afp`` processes, which need a real disk, are then skipped saying
why (the ``disk`` and ``real_disk`` fixtures, tests/host/conftest.py)."""

from __future__ import annotations

import errno
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio

DISK_BYTES = 2 * 1024 * 1024


class Disk:
    """A small disk holding ``path``: ``fill`` takes all its free space, ``free`` gives it back.

    On a tmpfs a filler file takes the space; without one, ``max_page_count`` on the store's
    writer connection stands in (``real`` is False then)."""

    def __init__(self, folder: Path, *, real: bool) -> None:
        self.folder = folder
        self.real = real
        self.path = folder / "afp.db"
        self._filler = folder / "filler"

    async def fill(self, store: Any) -> None:
        if self.real:
            await anyio.to_thread.run_sync(self._fill)
        else:
            pages = await store._conn.execute_fetchall("PRAGMA page_count")
            await store._conn.execute(f"PRAGMA max_page_count={pages[0][0]}")

    def _fill(self) -> None:
        with self._filler.open("wb", buffering=0) as out:
            chunk = b"\0" * 4096
            try:
                while True:
                    out.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc

    async def free(self, store: Any) -> None:
        if self.real:
            await anyio.Path(self._filler).unlink()
        else:
            await store._conn.execute("PRAGMA max_page_count=1073741823")


def mount(point: Path) -> bool:
    """Mount a ``DISK_BYTES`` tmpfs on ``point``; False (with a warning) where it may not."""
    if not sys.platform.startswith("linux"):
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        warnings.warn(
            f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}); the full "
            "disk is PRAGMA max_page_count instead",
            stacklevel=1,
        )
    return done.returncode == 0
