"""The loop's extension port (docs/loop.md#extensions)."""

from afp_runtime.extensions._port import (
    Ask,
    At,
    Dispatch,
    Event,
    Extension,
    Filed,
    Piece,
    RunExtension,
    RunStart,
    Seeded,
    SeedInput,
    Settled,
)

__all__ = [
    "Ask",
    "At",
    "Dispatch",
    "Event",
    "Extension",
    "Filed",
    "Piece",
    "RunExtension",
    "RunStart",
    "SeedInput",
    "Seeded",
    "Settled",
]
