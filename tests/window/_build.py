"""Notation of docs/window.md#how-this-is-tested for the window tests: message builders, fixtures, a
visit helper and the "dropper" strategy of cases 35-37 and 45.

Names here are stable: other window test modules import them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from afp_runtime.messages import Message, ToolCall, Usage
from afp_runtime.window.plan import Guards
from afp_runtime.window.records import CustomRecord, WindowRecord
from afp_runtime.window.refusals import Refusal
from afp_runtime.window.stage import VisitOutcome, visit_window
from afp_runtime.window.standdown import PriorVisit
from afp_runtime.window.turns import window_chars
from afp_runtime.window.visit import (
    MessageOrigin,
    Rebase,
    TurnStanding,
    WindowResult,
    WindowStrategy,
    WindowVisit,
)

# A 131-code-point person request with no authored prefix (docs/window.md#how-this-is-tested
# notation).
TASK = ("Please audit the payment path and list every change since Monday, " * 2)[:131]
assert len(TASK) == 131
HOLDS = "h" * 62

BORN_AT_MS = 1000
NOW_MS = 2000
ITERATION = 4
RUN_ID = "run-1"


def U(c: str) -> Message:
    """A user message with content ``c``."""
    return Message(role="user", content=c)


def A(ids: Sequence[str], c: str = "", names: Sequence[str] | None = None) -> Message:
    """An assistant message calling ``ids`` (tool name ``look`` unless ``names`` says), args {}."""
    picked = list(names) if names is not None else ["look"] * len(ids)
    calls = tuple(ToolCall(id=i, name=n, args={}) for i, n in zip(ids, picked, strict=True))
    return Message(role="assistant", content=c, tool_calls=calls)


def T(id: str, c: str = "ok", name: str | None = "look") -> Message:
    """A tool result answering ``id``; ``name=None`` leaves out ``tool_name``."""
    return Message(role="tool", content=c, tool_call_id=id, tool_name=name)


def R(id: str, name: str = "look", c: str = "ok") -> list[Message]:
    """One tool round: an assistant calling ``id`` and its result."""
    return [A([id], names=[name]), T(id, c, name)]


def S(c: str) -> Message:
    """A system message."""
    return Message(role="system", content=c)


def answered(history: Sequence[Message]) -> frozenset[str]:
    """``tool_call_id`` of every tool message in ``history``."""
    return frozenset(m.tool_call_id for m in history if m.role == "tool" and m.tool_call_id)


def origins(n: int) -> tuple[MessageOrigin, ...]:
    """Origins ``writer#i`` for message ``i``, each born at 1000."""
    return tuple(MessageOrigin(stage_id=f"writer#{i}", born_at_ms=BORN_AT_MS) for i in range(n))


def guards(history: Sequence[Message], **kw: object) -> Guards:
    """Guards with the answered ids of ``history`` plus any field given in ``kw``."""
    return Guards(answered_call_ids=answered(history), **kw)  # type: ignore[arg-type]


def visit(
    history: Sequence[Message],
    *,
    guards: Guards | None = None,
    anchor: int | None = None,
    measured: Usage | None = None,
    iteration: int = ITERATION,
    now_ms: int = NOW_MS,
    run_id: str = RUN_ID,
    agent_model: str = "agent-model",
    provider_name: str = "scripted",
    origins: Sequence[MessageOrigin] | None = None,
    turn_standing: TurnStanding | None = None,
) -> WindowVisit:
    """A visit of ``history`` with the docs/window.md#how-this-is-tested defaults (iteration 4, now
    2000, run ``run-1``).

    Without ``guards`` the visit gets the answered ids of ``history`` and ``anchor``.
    """
    bound = guards
    if bound is None:
        bound = Guards(answered_call_ids=answered(history), current_request_index=anchor)
    return WindowVisit(
        history=history,
        measured=measured,
        iteration=iteration,
        run_id=run_id,
        agent_model=agent_model,
        provider_name=provider_name,
        now_ms=now_ms,
        guards=bound,
        origins=origins if origins is not None else _origins(len(history)),
        turn_standing=turn_standing,
    )


_origins = origins


class Dropper:
    """A custom strategy that removes exactly the plan span and inserts nothing.

    It engages at every visit. When removing the span would leave a non-user message first
    where the window began with a user one (result check 9), it removes nothing and prepends a
    ``replacement-not-smaller`` refusal instead, as the drop strategies do.
    """

    def __init__(self, keep: int = 2, name: str = "dropper") -> None:
        self.name = name
        self.keep = keep

    async def plan(self, visit: WindowVisit) -> WindowResult:
        """Remove the plan's span, if any."""
        history = visit.history
        before = window_chars(history)
        plan = visit.plan_removal(self.keep)
        refusals = plan.refusals
        if plan.span is not None:
            first, last = plan.span
            start = visit.turns[first].start
            end = visit.turns[last].start + visit.turns[last].length
            window = history[:start] + history[end:]
            if _first_talker(history) != "user" or _first_talker(window) == "user":
                facts = visit.removal_facts(range(start, end), visit.now())
                record = CustomRecord(
                    strategy=self.name,
                    iteration=visit.iteration,
                    removed_stage_ids=facts.removed_stage_ids,
                    removed_message_count=end - start,
                    window_chars_before=before,
                    window_chars_after=window_chars(window),
                    refusals=refusals,
                )
                return WindowResult(
                    record=record,
                    evictions=facts.evictions,
                    window=window,
                    rebase=Rebase(head_count=start, kept_tail_count=len(history) - end),
                )
            blocked = Refusal(
                reason="replacement-not-smaller", turn_index=first, message_index=start
            )
            refusals = (blocked, *refusals)
        record = CustomRecord(
            strategy=self.name,
            iteration=visit.iteration,
            removed_stage_ids=(),
            removed_message_count=0,
            window_chars_before=before,
            window_chars_after=before,
            refusals=refusals,
        )
        return WindowResult(record=record)


def _first_talker(messages: Sequence[Message]) -> str | None:
    """Role of the first non-system message, or None."""
    return next((m.role for m in messages if m.role != "system"), None)


def cr(t: int, m: int) -> Refusal:
    """``current-request`` at turn ``t``, message ``m``."""
    return Refusal(reason="current-request", turn_index=t, message_index=m)


def se(t: int, m: int) -> Refusal:
    """``system-envelope`` at turn ``t``, message ``m``."""
    return Refusal(reason="system-envelope", turn_index=t, message_index=m)


def pt(t: int, m: int) -> Refusal:
    """``paused-tool`` at turn ``t``, message ``m``."""
    return Refusal(reason="paused-tool", turn_index=t, message_index=m)


def pci(t: int, m: int) -> Refusal:
    """``pending-check-in`` at turn ``t``, message ``m``."""
    return Refusal(reason="pending-check-in", turn_index=t, message_index=m)


def urt(t: int, m: int) -> Refusal:
    """``unresolved-tool-call`` at turn ``t``, message ``m``."""
    return Refusal(reason="unresolved-tool-call", turn_index=t, message_index=m)


def ltr(t: int, m: int) -> Refusal:
    """``last-tool-result`` at turn ``t``, message ``m``."""
    return Refusal(reason="last-tool-result", turn_index=t, message_index=m)


def lf(t: int, m: int) -> Refusal:
    """``ledger-fact`` at turn ``t``, message ``m``."""
    return Refusal(reason="ledger-fact", turn_index=t, message_index=m)


def ikw(t: int, m: int) -> Refusal:
    """``inside-keep-window`` at turn ``t``, message ``m``."""
    return Refusal(reason="inside-keep-window", turn_index=t, message_index=m)


def oes(t: int, m: int) -> Refusal:
    """``only-existing-summary`` at turn ``t``, message ``m``."""
    return Refusal(reason="only-existing-summary", turn_index=t, message_index=m)


def sf(t: int, m: int) -> Refusal:
    """``summarizer-failed`` at turn ``t``, message ``m``."""
    return Refusal(reason="summarizer-failed", turn_index=t, message_index=m)


def rns(t: int, m: int) -> Refusal:
    """``replacement-not-smaller`` at turn ``t``, message ``m``."""
    return Refusal(reason="replacement-not-smaller", turn_index=t, message_index=m)


def wire(value: object) -> object:
    """A struct as its wire JSON value (camelCase keys, absent fields omitted)."""
    return msgspec.json.decode(msgspec.json.encode(value))


async def run_stage(
    strategy: WindowStrategy,
    history: Sequence[Message],
    *,
    said: str | None = None,
    prior: Sequence[WindowRecord | PriorVisit] = (),
    keep_last_tool_results: int | bool = 0,
    **kw: Any,
) -> VisitOutcome | None:
    """``visit_window`` with the docs/window.md#how-this-is-tested defaults (iteration 4, now 2000,
    run ``run-1``, origins ``writer#i``); recency pin off unless ``keep_last_tool_results`` says
    otherwise."""
    options: dict[str, Any] = {
        "measured": None,
        "iteration": ITERATION,
        "run_id": RUN_ID,
        "agent_model": "agent-model",
        "provider_name": "scripted",
        "now_ms": NOW_MS,
        "origins": _origins(len(history)),
    }
    options.update(kw)
    return await visit_window(
        strategy,
        history=history,
        said=said,
        prior=prior,
        keep_last_tool_results=keep_last_tool_results,
        **options,
    )


def unset_free(value: tuple[Message, ...] | msgspec.UnsetType) -> tuple[Message, ...]:
    """A result window that must be set (fails the test when it is UNSET)."""
    assert not isinstance(value, msgspec.UnsetType), "expected a new window"
    return value
