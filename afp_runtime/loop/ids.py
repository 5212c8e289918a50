"""Id factories: run ids and inbox message ids (docs/host.md#ownership-and-leases).

The default factory makes time-ordered ids (UUIDv7 layout: 48 bits of the injected clock's
milliseconds, then 74 random bits), so ids sort by creation. Ids act as capabilities in URLs
(a run to resume or dismiss, a question to answer), so the random bits come from the operating
system's cryptographic source (``random.SystemRandom``) unless a test or scenario injects a
seeded ``random.Random`` for repeatable ids (docs/host.md#ids-are-capabilities).
"""

from __future__ import annotations

import random as _random
import uuid
from collections.abc import Callable
from typing import Protocol


class IdFactory(Protocol):
    """Makes new ids for runs and inbox messages."""

    def run_id(self) -> str: ...

    def message_id(self) -> str: ...

    def question_id(self) -> str: ...


class TimeOrderedIds:
    """UUIDv7-shaped ids from a clock and a random source (both injected; the source defaults
    to the system's cryptographic one)."""

    def __init__(self, now_ms: Callable[[], int], rng: _random.Random | None = None) -> None:
        self._now_ms = now_ms
        self._rng = rng if rng is not None else _random.SystemRandom()

    def _uuid7(self) -> str:
        ms = self._now_ms() & ((1 << 48) - 1)
        rand_a = self._rng.getrandbits(12)
        rand_b = self._rng.getrandbits(62)
        value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
        return str(uuid.UUID(int=value))

    def run_id(self) -> str:
        return "run-" + self._uuid7()

    def message_id(self) -> str:
        return "msg-" + self._uuid7()

    def question_id(self) -> str:
        return "q-" + self._uuid7()


class SequentialIds:
    """Deterministic ids ``run-1, run-2, …`` and ``msg-1, …`` (tests, scenarios)."""

    def __init__(self, *, start: int = 1) -> None:
        self._runs = start - 1
        self._messages = start - 1
        self._questions = start - 1

    def run_id(self) -> str:
        self._runs += 1
        return f"run-{self._runs}"

    def message_id(self) -> str:
        self._messages += 1
        return f"msg-{self._messages}"

    def question_id(self) -> str:
        self._questions += 1
        return f"q-{self._questions}"
