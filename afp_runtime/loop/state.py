"""What a run carries from one stage to the next (docs/loop.md#what-a-run-carries): everything
else passes between stages as arguments and results. Each field names its owner, the one stage
(or the one function of the run's commit path) that writes it; every other stage only reads it.
``OWNERS`` holds the same as data, and tests/loop/test_run_values.py holds the code to it. What
must outlive the run is also in the bundle or the checkpoint that the owner commits.

The definition is not here and is never written by a run: what a run learns (the window
warnings already logged) is kept in this state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from afp_runtime.loop.window_index import WindowIndex
from afp_runtime.messages import Cost, Message, Usage
from afp_runtime.records import ConversationState, PriorVisitRef, RunKind
from afp_runtime.served import RunningDigest, start_digest
from afp_runtime.store import LoadedConversation
from afp_runtime.window import MessageOrigin


@dataclass
class RunState:
    """The state of one run, shared by its stages: each field is written by its owner only."""

    conv: ConversationState
    """The conversation checkpoint as the run has it (owner: ``Run.checkpoint``, which every
    committing stage hands the conversation its commit carries)."""
    history: list[Message]
    """The window in memory (owner: ``Run.append_history`` appends, the window stage rebases)."""
    fps: list[str]
    """Fingerprints of ``history``, position by position (owner: as ``history``)."""
    used_call_ids: set[str]
    """Tool call ids the conversation holds, for renaming repeats (owner: tool-calls and halt,
    through ``route.unique_call_ids``)."""
    digest: RunningDigest
    """The running digest of the as-sent list (owner: receipt; window restarts it on a rebase)."""
    said: str | None = None
    """The person's message of the turn (fixed when the run starts)."""
    iteration: int = 1
    """The iteration under way (restored when the run starts; owner: ``Run.advance``, called
    by the stage that closes an iteration the turn goes on from)."""
    wrap_up_asked: bool = False
    """Whether the next call is the wrap-up call (restored; owner: wrap-up)."""
    stopped_early: dict[str, Any] | None = None
    """How the step budget ended the turn (restored; owner: ``ending.exhaust_budget``, called by
    wrap-up and final)."""
    last_usage: Usage | None = None
    """The last call's reported usage (restored; owner: call-model;
    docs/window.md#measurement)."""
    usage_missing: bool = False
    """Whether the last call reported no usage (restored; owner: call-model)."""
    prior: tuple[PriorVisitRef, ...] = ()
    """The last window visits, for stand-down (restored; owner: window;
    docs/window.md#stand-down)."""
    epochs: int = 0
    """Model calls of this run (owner: receipt)."""
    run_usage: Usage = field(default_factory=Usage)
    """Usage reported by this run's model calls (owner: call-model)."""
    run_cost: Cost = field(default_factory=Cost)
    """What this run's model calls cost (owner: ``spend.account``, called by call-model and
    window; docs/cost.md#figures)."""
    origins: list[MessageOrigin] = field(default_factory=list)
    """Where each window message came from (owner: seed stamps the restored ones, then as
    ``history``; docs/window.md#what-a-visit-offers)."""
    served: dict[str, Any] = field(default_factory=dict)
    """Served keys as last written, so only changes are written again (owner: context)."""
    digest_had_substitutions: bool = False
    """Whether ``digest`` was last extended with stubs applied (owner: receipt)."""
    schema_hashes: dict[str, str] = field(default_factory=dict)
    """Salted hashes of served tool schemas that do not vary (owner: receipt)."""
    body_hashes: dict[str, str] = field(default_factory=dict)
    """H(canonical body) by fingerprint, for the window's messages that were hashed in this
    run, so a receipt's new entries and an omission hash each body once (owner:
    ``Run.fingerprint_new`` fills it, receipt reads through it, window drops what it
    removes)."""
    base_counts: dict[str, int] = field(default_factory=dict)
    """Fingerprint counts of the base receipt's as-sent list (owner: seed sets the first, then
    receipt; docs/served.md#receipt-fields)."""
    base_is_prefix: bool = False
    """True while the base receipt is this run's previous call and the window only grew
    (owner: receipt; window clears it)."""
    warned: set[str] = field(default_factory=set)
    """Window warnings already logged in this run (owner: window; docs/window.md#warnings)."""
    window_index: WindowIndex = field(default_factory=WindowIndex)
    """The window's turns, names and chars, kept across visits (never assigned: only the window
    stage updates it, through its methods; docs/window.md#the-running-index)."""


# Who may write each field: a stage by its module (``stages.window``) or one function of the
# run's commit path (``run.Run.checkpoint``). Fields set only when the state is made list none.
OWNERS: Final[Mapping[str, tuple[str, ...]]] = {
    "conv": ("run.Run.checkpoint",),
    "history": ("run.Run.append_history", "stages.window"),
    "fps": ("run.Run.append_history", "stages.window"),
    "used_call_ids": ("stages.tool_calls", "stages.halt"),
    "digest": ("stages.receipt", "stages.window"),
    "said": (),
    "iteration": ("run.Run.advance",),
    "wrap_up_asked": ("stages.wrap_up",),
    "stopped_early": ("ending.exhaust_budget",),
    "last_usage": ("stages.call_model",),
    "usage_missing": ("stages.call_model",),
    "prior": ("stages.window",),
    "epochs": ("stages.receipt",),
    "run_usage": ("stages.call_model",),
    "run_cost": ("spend.account",),
    "origins": ("run.Run.append_history", "stages.window", "stages.seed"),
    "served": ("stages.context",),
    "digest_had_substitutions": ("stages.receipt",),
    "schema_hashes": ("stages.receipt",),
    "body_hashes": ("run.Run.fingerprint_new", "stages.receipt", "stages.window"),
    "base_counts": ("stages.seed", "stages.receipt"),
    "base_is_prefix": ("stages.receipt", "stages.window"),
    "warned": ("stages.window",),
    "window_index": (),
}


def start_state(
    loaded: LoadedConversation, *, run_id: str, kind: RunKind, text: str | None
) -> RunState:
    """The state a run starts from: the loaded conversation and, for a run that continues a
    turn, what its open turn carried over (the iteration, wrap-up, usage, stand-down)."""
    history = list(loaded.history)
    state = RunState(
        conv=loaded.state,
        history=history,
        fps=list(loaded.fingerprints),
        used_call_ids={c.id for m in history for c in m.tool_calls},
        digest=start_digest(run_id),
        said=text,
    )
    turn = loaded.state.open_turn
    if kind == "initial" or turn is None:
        return state
    state.iteration = turn.next_iteration
    state.wrap_up_asked = turn.wrap_up_asked
    state.stopped_early = turn.stopped_early
    state.last_usage = turn.last_usage
    state.usage_missing = turn.usage_missing
    state.prior = turn.prior_visits
    state.said = text or _last_person_message(history)
    return state


def _last_person_message(history: list[Message]) -> str | None:
    for message in reversed(history):
        if message.role == "user" and message.injected_by is None:
            return message.content
    return None
