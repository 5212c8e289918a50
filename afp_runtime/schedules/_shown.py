"""A due instant as a person reads it: wall time in the schedule's zone, and UTC beside it."""

from __future__ import annotations

from datetime import UTC, datetime

from afp_runtime.time import load_zone


def due_text(ms: int, zone: str) -> str:
    """``2026-12-08 09:00 Europe/Berlin (2026-12-08 08:00 UTC)``, or ``… UTC`` alone for a UTC
    schedule, read on the time layer's zone database (docs/time.md#zone-names-and-the-database)
    so every door shows what delivery computes. A first use of a zone may read its file: call
    it off the event loop."""
    utc = datetime.fromtimestamp(ms / 1000, UTC)
    local = f"{utc.astimezone(load_zone(zone)):%Y-%m-%d %H:%M} {zone}"
    return local if zone == "UTC" else f"{local} ({utc:%Y-%m-%d %H:%M} UTC)"
