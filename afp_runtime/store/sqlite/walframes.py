"""How many WAL frames (pages) the store's transactions wrote (docs/storage.md#wal-frames-written).

SQLite keeps the count of valid frames in the WAL (``mxFrame``) and the WAL's salt in the header
of the wal-index, the ``-shm`` file beside the database (https://sqlite.org/walformat.html,
"The WAL-Index Header"). Reading it before and after a transaction, while the writer lock is
held, gives the frames that transaction appended: one ``pread`` of 40 bytes each side, no
``stat``, no statement. When the salt changed, the transaction restarted the WAL from its start
after a checkpoint, and every frame in it now is the transaction's.

Runs on the connection's own thread; a ``-shm`` that cannot be read counts nothing rather than
failing a write.
"""

from __future__ import annotations

import os
import struct

__all__ = ["WalFrames"]

# iVersion, unused, iChange, isInit, bigEndCksum, szPage, mxFrame, nPage, aFrameCksum[2],
# aSalt[2], in the host's byte order.
_HEADER = struct.Struct("=3I2BH2I2I2I")
# A frame is its page and a 24-byte frame header.
FRAME_HEADER_BYTES = 24

Mark = tuple[int, int, int] | None  # (mxFrame, salt1, salt2), or None: not readable


class WalFrames:
    """The running count of WAL frames written, and their bytes."""

    def __init__(self, shm: str) -> None:
        self._shm = shm
        self._fd: int | None = None
        self.frames = 0
        self.page_size = 0

    def mark(self) -> Mark:
        """Where the WAL ends now (inside a write transaction: no other writer moves it)."""
        try:
            if self._fd is None:
                self._fd = os.open(self._shm, os.O_RDONLY)
            raw = os.pread(self._fd, _HEADER.size, 0)
        except OSError:
            return None
        if len(raw) < _HEADER.size:
            return None
        fields = _HEADER.unpack(raw)
        size = fields[5]
        # The wal-index stores a page size of 65536 as 1 (it fits in 16 bits).
        self.page_size = 65536 if size == 1 else size
        return fields[6], fields[10], fields[11]

    def count(self, before: Mark) -> None:
        """Add the frames written since ``before``."""
        after = self.mark()
        if before is None or after is None:
            return
        restarted = before[1:] != after[1:]
        self.frames += after[0] if restarted else max(0, after[0] - before[0])

    @property
    def bytes(self) -> int:
        """The bytes those frames took in the ``-wal`` file."""
        return self.frames * (self.page_size + FRAME_HEADER_BYTES)

    def close(self) -> None:
        """Let go of the ``-shm`` file."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
