"""Host: standing agents on one store, their durable inbox, workers and event bus."""

from afp_runtime.host.events import (
    DEFAULT_RING_SIZE,
    DEFAULT_SUBSCRIBER_BUFFER,
    Delivered,
    EventBus,
    GapReason,
    StreamGap,
    Subscription,
)
from afp_runtime.host.host import Host
from afp_runtime.host.states import (
    AgentNotHosted,
    HostState,
    HostStopping,
    StoreCheck,
    StoreCheckFailed,
)
from afp_runtime.host.watch import HostWatch

__all__ = [
    "AgentNotHosted",
    "DEFAULT_RING_SIZE",
    "DEFAULT_SUBSCRIBER_BUFFER",
    "Delivered",
    "EventBus",
    "GapReason",
    "Host",
    "HostState",
    "HostStopping",
    "HostWatch",
    "StoreCheck",
    "StoreCheckFailed",
    "StreamGap",
    "Subscription",
]
