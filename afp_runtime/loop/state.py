"""What a run carries from one stage to the next (docs/loop.md#run-state-keys): everything else
passes between stages as arguments and results. Each field names the stage that owns it (the
one that writes it; others only read it). What must outlive the run is also in the bundle or the
checkpoint that the owner commits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from afp_runtime.messages import Cost, Message, Usage
from afp_runtime.records import ConversationState, PriorVisitRef
from afp_runtime.served import RunningDigest
from afp_runtime.window import MessageOrigin


@dataclass
class RunState:
    """The mutable state of one run, shared by its stages."""

    conv: ConversationState
    """The conversation checkpoint as the run has it (owner: every stage that commits one)."""
    history: list[Message]
    """The window in memory (owner: seed, and every stage that appends; window rebases it)."""
    fps: list[str]
    """Fingerprints of ``history``, position by position (owner: as ``history``)."""
    used_call_ids: set[str]
    """Tool call ids the conversation holds, for renaming repeats (owner: tool-calls)."""
    digest: RunningDigest
    """The running digest of the as-sent list (owner: receipt; window restarts it on a rebase)."""
    iteration: int = 1
    """The iteration under way (owner: seed restores it; tool-calls and wrap-up advance it)."""
    epochs: int = 0
    """Model calls of this run (owner: receipt)."""
    run_usage: Usage = field(default_factory=Usage)
    """Usage reported by this run's model calls (owner: call-model)."""
    run_cost: Cost = field(default_factory=Cost)
    """What this run's model calls cost (owner: call-model; docs/cost.md#figures)."""
    wrap_up_asked: bool = False
    """Whether the next call is the wrap-up call (owner: wrap-up; seed restores it)."""
    stopped_early: dict[str, Any] | None = None
    """How the step budget ended the turn (owner: wrap-up and final; seed restores it)."""
    origins: list[MessageOrigin] = field(default_factory=list)
    """Where each window message came from (owner: seed, then appends and window;
    docs/window.md#what-a-visit-offers)."""
    last_usage: Usage | None = None
    """The last call's reported usage (owner: call-model; docs/window.md#measurement)."""
    usage_missing: bool = False
    """Whether the last call reported no usage (owner: call-model)."""
    prior: tuple[PriorVisitRef, ...] = ()
    """The last window visits, for stand-down (owner: window; docs/window.md#stand-down)."""
    served: dict[str, Any] = field(default_factory=dict)
    """Served keys as last written, so only changes are written again (owner: context)."""
    digest_had_substitutions: bool = False
    """Whether ``digest`` was last extended with stubs applied (owner: receipt)."""
    schema_hashes: dict[str, str] = field(default_factory=dict)
    """Salted hashes of served tool schemas that do not vary (owner: receipt)."""
    body_hashes: dict[str, str] = field(default_factory=dict)
    """H(canonical body) by fingerprint, for the window's messages that were hashed in this
    run, so a receipt's new entries and an omission hash each body once (owner: receipt and
    every stage that appends fill it; window drops what it removes)."""
    base_counts: dict[str, int] = field(default_factory=dict)
    """Fingerprint counts of the base receipt's as-sent list (owner: receipt; seed sets the
    first; docs/served.md#receipt-fields)."""
    base_is_prefix: bool = False
    """True while the base receipt is this run's previous call and the window only grew
    (owner: receipt; window clears it)."""
    seed_hold: tuple[str, str] | None = None
    """Why an extension holds the turn at seed, ``(error kind, error)`` (owner: seed)."""
