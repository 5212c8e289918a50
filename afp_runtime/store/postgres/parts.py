"""A ``Txn`` as one part of a server-side commit (docs/storage.md#one-round-trip-per-commit).

``part`` makes the ``afp_part`` value: plain tuples and lists, which asyncpg sends as binary
composites and arrays. A group of parts is one call of ``afp_commit`` (made by migration 4, see
``commit_sql``; ``group`` queues them), one statement in one implicit transaction, durable
(``synchronous_commit`` on) when any member asked for it. The function returns each part's
outcome; ``part_error`` turns a failed part's into the error its own caller sees, the same a
lone transaction raised before.
"""

from __future__ import annotations

from typing import Any

import msgspec

from afp_runtime.errors import StoreError
from afp_runtime.messages import message_body
from afp_runtime.records import Txn, crashed_at_ms
from afp_runtime.store import checks
from afp_runtime.store import rows as common
from afp_runtime.store.postgres.writes import text_cell
from afp_runtime.store.rows import TURN_CLOSED, encoder, fp_key

__all__ = ["CALL", "Member", "part", "part_error", "retryable"]

CALL = "SELECT afp_commit($1::afp_part[], $2)"

_outcome = msgspec.json.Decoder(dict[str, Any])


class Member:
    """One waiter's txn in a group, and what came of it."""

    __slots__ = ("agent_id", "done", "error", "fence", "full", "part", "tries")

    def __init__(self, txn: Txn, fence: tuple[str, int] | None) -> None:
        self.agent_id = txn.agent_id
        self.fence = fence
        self.full = txn.full
        self.part = part(txn, fence)
        self.done = False
        self.error: BaseException | None = None
        self.tries = 0


def part(txn: Txn, fence: tuple[str, int] | None) -> tuple[Any, ...]:
    """``txn`` as an ``afp_part`` value, in the order of the type's fields."""
    start = txn.run_start
    end = txn.run_end
    ended = common.run_end_values(end) if end is not None else (None,) * 8
    keys = [(b.run_id, w.key, b.seq, w.verb) for b in txn.bundles for w in b.writes]
    return (
        txn.agent_id,
        *(fence if fence is not None else (None, None)),
        *(
            (s.run_id, s.turn, s.kind, s.message_id, s.recovered_from, s.started_at_ms)
            if (s := start) is not None
            else (None,) * 6
        ),
        # item_values leads with the agent, which the function fills in.
        [(*common.item_values(0, i)[1:], message_body(i.message)) for i in txn.items],
        [
            (b.run_id, b.seq, b.stage, b.iteration, b.committed_at_ms, common.bundle_writes(b))
            for b in txn.bundles
        ],
        keys,
        None if txn.conversation is None else encoder.encode(txn.conversation),
        txn.crashed_run,
        crashed_at_ms(txn) if txn.crashed_run is not None else None,
        ended[7],
        ended[0],
        ended[1],
        ended[2],
        text_cell(ended[3]),
        ended[4],
        text_cell(ended[5]),
        ended[6],
        [(u.message_id, u.status, u.turn, u.status in TURN_CLOSED) for u in txn.inbox],
        [(r.message_id, r.tool_call_id, r.state, r.run_id, r.outcome) for r in txn.journal],
        [(str(r.get("kind")), r.get("turn"), encoder.encode(r)) for r in txn.ledger],
        [_question(q) for q in txn.questions],
        [(fp_key(s.summary_fingerprint), encoder.encode(s)) for s in txn.folded],
    )


def _question(q: Any) -> tuple[Any, ...]:
    row = common.question_values(0, q)
    # question_values leads with (question_id, agent): the part names no agent.
    return (row[0], *row[2:6], text_cell(row[6]), *row[7:])


# What a part failed with when Postgres rolled it back to resolve a conflict with another
# transaction (deadlock_detected, serialization_failure): trying again is the remedy.
_RETRYABLE = ("40P01", "40001")


def retryable(outcome: str | None) -> bool:
    """Whether a part's outcome is a conflict that trying again resolves."""
    return outcome is not None and _outcome.decode(outcome).get("code") in _RETRYABLE


def part_error(outcome: str | None, member: Member) -> BaseException | None:
    """The error of a part whose outcome is not None, as its caller sees it."""
    if outcome is None:
        return None
    found = _outcome.decode(outcome)
    if "fence" in found:
        assert member.fence is not None
        host_id, epoch = member.fence
        claim = found["fence"]
        try:
            checks.check_fence(claim, member.agent_id, host_id, epoch)
        except StoreError as exc:
            return exc
    if "agent" in found:
        return StoreError(f"no agent {member.agent_id!r} in the store", agent_id=member.agent_id)
    if found.get("code") == "AF003":
        run_id = found.get("message")
        return StoreError(f"no run {run_id!r} in the store", run_id=run_id)
    return StoreError(f"a store transaction failed: {found.get('message')}")
