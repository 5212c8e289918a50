"""What one call of ``afp.Store`` tells about a person's turn: its result, and its events as
they happen."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream

from afp_runtime.app import Event, OutputError, RunOutcome
from afp_runtime.messages import Cost, Usage
from afp_runtime.records import QuestionRow

TurnStatus = Literal[
    "answered",
    "halted",
    "paused",
    "held",
    "stalled",
    "queued",
    "dismissed",
    "crashed",
    "cancelled",
]
"""Where a turn stands: ``answered``; ``halted`` by a budget or a permission rule before it
could answer (see ``error_kind``, ``error``); ``paused`` on a question (see ``questions``); ``held``
for an operator or ``stalled`` until a retry (see ``error_kind``); ``queued`` behind an earlier
turn that is not done; ``dismissed`` by an operator; ``crashed``/``cancelled`` when the process
was cut off (the next ``work()`` or host start recovers it)."""


class TurnResult(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """How a person's message fared: the answer, or where the turn stopped and why.

    Attributes:
        agent_id: the agent (wire ``agentId``).
        message_id: the person's message in the agent's inbox (wire ``messageId``).
        status: see ``TurnStatus``.
        answer: the answer's text when ``status == "answered"``.
        turn: the turn number within the conversation (0 while queued).
        run_id: the turn's latest run (wire ``runId``); None while queued.
        runs: the runs this call made for the turn, in order (a recovery, the first run, an
            answer run...).
        usage: tokens the model calls of those runs reported, summed.
        cost: what the model calls of those runs cost (docs/cost.md#figures); ``cost.total`` is
            None while a call's cost is unknown. None for an agent without pricing or budgets.
        value: the answer decoded against the agent's ``output`` (an instance of its Struct or
            dataclass, or the JSON value of a JSON schema); UNSET without an output or when the
            answer did not decode (docs/loop.md#typed-answers).
        output_error: why the answer has no ``value`` after the retries: ``kind``
            (``output-invalid``), the last ``problem`` and the ``attempts``.
        error_kind: why a held, stalled or halted turn stopped (wire ``errorKind``).
        error: the same in words.
        questions: the open questions a paused turn waits on; answer them with
            ``Store.answer`` or close them with ``Store.abandon``.
    """

    agent_id: str
    message_id: str
    status: TurnStatus
    answer: str | None = None
    turn: int = 0
    run_id: str | None = None
    runs: tuple[RunOutcome, ...] = ()
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: Cost | None = None
    value: Any = msgspec.UNSET
    output_error: OutputError | None = None
    error_kind: str | None = None
    error: str | None = None
    questions: tuple[QuestionRow, ...] = ()


class TurnEvents:
    """The events of one turn as they happen: ``async for event in events``.

    Iteration ends when the turn has stopped (answered, paused, held...); ``result`` then holds
    its ``TurnResult``.
    """

    def __init__(self, receive: MemoryObjectReceiveStream[Event]) -> None:
        self._receive = receive
        self._result: TurnResult | None = None

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    async def _events(self) -> AsyncIterator[Event]:
        async with self._receive:
            async for event in self._receive:
                yield event

    @property
    def result(self) -> TurnResult:
        """The turn's result, once the events have ended.

        Raises:
            RuntimeError: the turn has not stopped yet.
        """
        if self._result is None:
            raise RuntimeError("the turn has not stopped yet; iterate the events first")
        return self._result
