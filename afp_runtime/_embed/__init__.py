"""The embedded runtime: ``afp.open`` and the ``Store`` it gives (docs/python.md)."""

from afp_runtime._embed.results import TurnResult, TurnStatus
from afp_runtime._embed.store import AgentRef, Store, TurnEvents, open

__all__ = [
    "AgentRef",
    "Store",
    "TurnEvents",
    "TurnResult",
    "TurnStatus",
    "open",
]
