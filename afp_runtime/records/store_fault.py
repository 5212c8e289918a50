"""Why a host's store is degraded, as health reports it (docs/host.md#hosts-and-a-failing-store).

A value of its own, apart from the host that tracks it, so the API's shapes and the ``afp``
command can name it without loading the host.
"""

from __future__ import annotations

import msgspec


class StoreFault(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Why the store is degraded.

    Attributes:
        cause: ``disk-full``, ``read-only``, ``io-error``, ``cannot-open``, ``wal-limit``,
            ``unreachable`` (``StoreUnavailable.cause``) or ``checkpoint`` (the WAL could not be
            checkpointed several times in a row).
        message: what the store said, in one line.
        since_ms: when it began, on the host's clock (wire ``sinceMs``).
    """

    cause: str
    message: str
    since_ms: int
