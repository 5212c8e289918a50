"""What happened to a person's message: its inbox status, the latest run of its turn, and the
answer or the reason there is none (docs/architecture.md#the-application-layer).

Readings settled here (the API's, which every door now shares):

* ``runId`` is the latest run of the message's turn; ``answer`` comes from that run when the
  message is answered (runs committed before schema version 11 keep it in their commit log
  only, where ``message_outcome`` reads it; the list does not).
* ``errorKind``/``error`` are the latest run's when the turn stopped (held, stalled, halted);
  a stopped turn whose run says nothing (a crash loop: its last run crashed) takes them from
  the open turn. Any other status has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from afp_runtime.records import FinalAnswerWrite, OpenTurn
from afp_runtime.store import InboxRow, RunRow, Store, StoredBundle

_STOPPED = frozenset({"held", "stalled", "halted"})


class MessageOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What happened to one inbox message.

    Attributes:
        row: the inbox row as stored (status, position, turn...).
        runs: the runs of its turn, in start order.
        answer: the final answer's text, when it was answered.
        error_kind: why its turn stopped (held, stalled, halted), else None.
        error: the same in words.
    """

    row: InboxRow
    runs: tuple[RunRow, ...]
    answer: str | None
    error_kind: str | None
    error: str | None

    @property
    def run_id(self) -> str | None:
        """The latest run of the message's turn, if any ran."""
        return self.runs[-1].run_id if self.runs else None


def final_answer(bundle: StoredBundle | None) -> str | None:
    """The final answer a bundle wrote, if it wrote one (its ``FinalAnswerWrite``): the one
    place that reads it back from the commit log."""
    for write in bundle.writes if bundle is not None else ():
        if isinstance(write, FinalAnswerWrite):
            return write.value
    return None


async def answer_of(store: Store, run_id: str) -> str | None:
    """The final answer a run committed, read from its last bundle."""
    return final_answer(await store.last_bundle(run_id))


def _outcome(row: InboxRow, runs: Sequence[RunRow], open_turn: OpenTurn | None) -> MessageOutcome:
    """The outcome of ``row`` from its turn's runs and the agent's open turn."""
    latest = runs[-1] if runs else None
    stopped = row.status in _STOPPED
    error_kind = latest.error_kind if stopped and latest is not None else None
    error = latest.error if stopped and latest is not None else None
    mine = open_turn is not None and open_turn.message_id == row.message_id
    if stopped and error_kind is None and mine and open_turn is not None:
        error_kind, error = open_turn.error_kind, open_turn.error
    answered = latest is not None and row.status == "answered"
    return MessageOutcome(
        row=row,
        runs=tuple(runs),
        answer=latest.answer if answered and latest is not None else None,
        error_kind=error_kind,
        error=error,
    )


def _by_message(runs: Iterable[RunRow]) -> dict[str, list[RunRow]]:
    grouped: dict[str, list[RunRow]] = {}
    for run in runs:
        grouped.setdefault(run.message_id, []).append(run)
    return grouped


async def _open_turn(store: Store, agent_id: str) -> OpenTurn | None:
    state = await store.conversation_state(agent_id)
    return state.open_turn if state is not None else None


async def message_outcomes(
    store: Store, agent_id: str, *, status: str | None = None
) -> list[MessageOutcome]:
    """The outcome of each of the agent's inbox messages (of one ``status``), position order."""
    rows = await store.inbox(agent_id, status=status)
    runs = _by_message(await store.runs(agent_id))
    open_turn = await _open_turn(store, agent_id)
    return [_outcome(row, runs.get(row.message_id, []), open_turn) for row in rows]


async def message_outcome(store: Store, message_id: str) -> MessageOutcome | None:
    """What happened to one message, or None when the store has no such message."""
    row = await store.inbox_message(message_id)
    if row is None:
        return None
    runs = _by_message(await store.runs(row.agent_id)).get(message_id, [])
    found = _outcome(row, runs, await _open_turn(store, row.agent_id))
    if row.status == "answered" and found.answer is None and runs:
        # A run that ended before schema version 11 keeps its answer in its commit log only.
        found = msgspec.structs.replace(found, answer=await answer_of(store, runs[-1].run_id))
    return found
