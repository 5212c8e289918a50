"""How a run ended, and the committed form of a model reply."""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.loop.output import OutputError
from afp_runtime.messages import (
    Cost,
    ModelReply,
    ToolCall,
    Usage,
)
from afp_runtime.records import (
    RunKind,
    RunStatus,
)


class RunOutcome(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """How a run ended.

    Attributes:
        run_id: the run (wire ``runId``).
        message_id: the person's message the run's turn answers (wire ``messageId``).
        kind: ``initial``, ``recovery``, ``retry``, ``answer`` or ``operator``.
        turn: the turn number within the agent's conversation.
        status: how the run ended (``answered``, ``paused``, ``held``, ``stalled``...).
        epochs: model calls the run made.
        usage: tokens the run's model calls reported.
        iteration: the iteration the run ended in.
        final_answer: the answer's text, when the run answered (wire ``finalAnswer``).
        error_kind: why a held or stalled run stopped (wire ``errorKind``).
        error: the reason in words.
        cost: what the run's model calls cost, for an agent with pricing (docs/cost.md#figures).
        final_value: the answer decoded against the agent's output schema, as JSON values
            (wire ``finalValue``; docs/loop.md#typed-answers).
        output_error: why an answer has no typed value after the retries (wire
            ``outputError``).
    """

    run_id: str
    message_id: str
    kind: RunKind
    turn: int
    status: RunStatus
    epochs: int
    usage: Usage
    iteration: int
    final_answer: str | None = None
    error_kind: str | None = None
    error: str | None = None
    cost: Cost | None = None
    final_value: Any = msgspec.UNSET
    output_error: OutputError | None = None


class CommittedReply(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The ``reply`` run-state value: the model's reply and how many sends it took."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    stop_reason: str = "end"
    attempts: int = 1

    def as_reply(self) -> ModelReply:
        """The reply as the model port shapes it."""
        return ModelReply(
            content=self.content,
            tool_calls=self.tool_calls,
            usage=self.usage,
            stop_reason=self.stop_reason,  # type: ignore[arg-type]
        )
