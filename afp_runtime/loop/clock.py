"""The system clock: wall time and anyio's own deadlines."""

from __future__ import annotations

import time
from typing import Any

import anyio


class SystemClock:
    """The real clock (epoch milliseconds; anyio sleeps and cancel scopes)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)

    def fail_after(self, seconds: float) -> Any:
        return anyio.fail_after(seconds)

    def move_on_after(self, seconds: float) -> Any:
        return anyio.move_on_after(seconds)
