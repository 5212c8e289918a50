"""What a host is doing and why it admits nothing: its states and the errors that name them
(docs/host.md#running-a-host)."""

from __future__ import annotations

from typing import Literal

from afp_runtime.errors import StateError

__all__ = ["AgentNotHosted", "HostState", "HostStopping", "StoreCheck", "StoreCheckFailed"]

HostState = Literal["starting", "running", "stopping", "stopped"]
# The start-up store check (docs/host.md#after-an-unclean-stop): ``not-needed`` after a clean
# stop; else ``checking`` while ``quick_check`` runs behind the serving host, then ``ok`` or
# ``damaged`` (the host then takes no more turns and admits nothing).
StoreCheck = Literal["not-needed", "checking", "ok", "damaged"]


class HostStopping(StateError):
    """The host is stopping (or not started): it admits no new message or run."""


class StoreCheckFailed(HostStopping):
    """The store failed its check after an unclean stop: the host takes no turns and admits
    nothing (docs/host.md#after-an-unclean-stop)."""


class AgentNotHosted(StateError):
    """The named agent is not run by this host."""
