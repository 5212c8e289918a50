"""The embedded runtime: ``afp.open`` and the ``Store`` it gives (docs/python.md)."""

from afp_runtime._embed.reading import AgentRef
from afp_runtime._embed.results import TurnEvents, TurnResult, TurnStatus
from afp_runtime._embed.running import run
from afp_runtime._embed.store import Store, open

__all__ = [
    "AgentRef",
    "Store",
    "TurnEvents",
    "TurnResult",
    "TurnStatus",
    "open",
    "run",
]
