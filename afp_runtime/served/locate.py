"""Locating epochs (model calls) in one run's commit log (docs/served.md#where-epochs-are-found).

Every ``receipt`` bundle anchors an epoch; so does a ``call-model`` bundle that no receipt
covers (a legacy or damaged log). Both come from the log's anchor index (``RunLog.anchors``),
never from walking the log.

Readings settled here:

* A receipt at ``seq == n`` is answered by the ``call-model`` bundle at ``n + 1`` (the receipt
  commits immediately before its call, and ``callRuntimeStageId`` is ``call-model#(n+1)``), when
  that bundle exists and has the receipt's iteration stamp. A ``call-model`` anchor that is not
  directly preceded by a receipt of its iteration anchors an epoch of its own (a legacy or
  damaged log), with the bundle's own id.
* The number of an epoch is the folded ``iteration`` at its anchor when that is an ``int``;
  otherwise (unknown, or not an int) its 1-based position among the located epochs.
* ``epoch_at``/``served_at``/``receipt_at`` first ask the index for the earliest receipt stamped
  with iteration ``k`` (``RunLog.anchor_at``) and confirm it with one
  ``value_at("iteration", seq)``: a fixed number of reads whatever ``k`` is. Only when that
  fails (a legacy anchor, a position-numbered epoch of a partial log, a damaged or absent
  number) do they read the whole anchor list. Numbers below 1 are absent without any read.
* ``outcome`` and ``attempts`` come from the answering ``call-model`` bundle: ``replied`` when
  it writes ``reply``, ``failed`` otherwise; ``attempts`` is the ``attempts`` that record
  holds, and 1 when it holds none (the loop omits the default of one send). Without that bundle
  the epoch is ``in-flight`` while the run is live and ``abandoned`` once it has ended, with 0
  attempts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

import msgspec

from afp_runtime.records import (
    Anchor,
    CallFailureWrite,
    CommitBundle,
    ReplyWrite,
    RunLog,
    Write,
    runtime_stage_id,
)

Outcome = Literal["replied", "failed", "in-flight", "abandoned"]


class EpochLocation(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Where one epoch sits in its run's log and how its call ended.

    Attributes:
        epoch: the epoch's number (docs/served.md#what-counts-as-an-epoch).
        anchor_seq: the seq of the anchoring bundle (wire ``anchorSeq``).
        call_runtime_stage_id: the id of the epoch's ``call-model`` execution.
        outcome: ``replied``, ``failed``, ``in-flight`` or ``abandoned``.
        attempts: the sends recorded for the call (0 when its call never committed).
    """

    epoch: int
    anchor_seq: int
    call_runtime_stage_id: str
    outcome: Outcome
    attempts: int


class Located(NamedTuple):
    """An anchor that starts an epoch, before its number is looked up.

    ``position`` is the 1-based place among located epochs (0 when found through the index
    without listing); ``call_seq`` is the seq of the bundle that answers it.
    """

    anchor: Anchor
    position: int
    call_seq: int
    call_runtime_stage_id: str


def check_epoch(k: object) -> int:
    """Refuse an epoch number that is not an ``int`` (a ``bool`` included)."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"epoch must be an int, not {type(k).__name__} {k!r}")
    return k


def _located(anchor: Anchor, position: int) -> Located:
    """The epoch ``anchor`` starts: a receipt is answered by the next bundle, a lone
    ``call-model`` anchor answers itself."""
    call_seq = anchor.seq + 1 if anchor.stage == "receipt" else anchor.seq
    return Located(anchor, position, call_seq, runtime_stage_id("call-model", call_seq))


class Locator:
    """Incremental epoch location over anchors in commit order (shared by index and one pass)."""

    def __init__(self) -> None:
        self.located: list[Located] = []
        self._previous: Anchor | None = None

    def feed(self, anchor: Anchor) -> Located | None:
        """Take the next anchor; return the epoch it starts, if it starts one."""
        previous, self._previous = self._previous, anchor
        if anchor.stage != "receipt" and (
            anchor.stage != "call-model"
            or (
                previous is not None
                and previous.stage == "receipt"
                and previous.seq == anchor.seq - 1
                and previous.iteration == anchor.iteration
            )
        ):
            return None
        found = _located(anchor, len(self.located) + 1)
        self.located.append(found)
        return found


def locate_all(anchors: Sequence[Anchor]) -> list[Located]:
    """Every epoch-starting anchor, in commit order."""
    locator = Locator()
    for anchor in anchors:
        locator.feed(anchor)
    return locator.located


def readable_int(value: Any) -> int | None:
    """``value`` when it is an ``int`` and not a ``bool``, else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def number_of(iteration: Any, position: int) -> int:
    """An epoch's number: the folded ``iteration`` when readable, else its position."""
    found = readable_int(iteration)
    return position if found is None else found


def find(log: RunLog, k: int) -> tuple[Located, int] | None:
    """The earliest epoch numbered ``k`` and its number.

    One index lookup and one ``value_at`` for a healthy log; the anchor list otherwise.
    """
    if k < 1:
        return None
    anchor = log.anchor_at(k)
    if (
        anchor is not None
        and anchor.stage == "receipt"
        and readable_int(log.value_at("iteration", anchor.seq)) == k
    ):
        return _located(anchor, 0), k
    located = locate_all(log.anchors())
    candidates = [found for found in located if found.anchor.iteration == k]
    if k <= len(located) and located[k - 1] not in candidates:
        candidates.append(located[k - 1])
    candidates.sort(key=lambda found: found.anchor.seq)
    for found in candidates:
        if number_of(log.value_at("iteration", found.anchor.seq), found.position) == k:
            return found, k
    return None


def last_set(bundle: CommitBundle, kind: type[Write], default: Any = None) -> Any:
    """The value of the last ``set`` write of class ``kind`` in one bundle, or ``default``."""
    value = default
    for write in bundle.writes:
        if isinstance(write, kind) and write.verb == "set":
            value = write.value
    return value


def _attempts(record: Any) -> int:
    """Recorded sends; a record without them (the default omitted) stands for one send."""
    if isinstance(record, Mapping):
        found = readable_int(record.get("attempts"))
        if found is not None and found >= 0:
            return found
    return 1


def outcome_of(log: RunLog, found: Located) -> tuple[Outcome, int]:
    """How the epoch's call ended, and its recorded attempts."""
    bundle = log.bundle(found.call_seq)
    if bundle is None or bundle.stage != "call-model" or bundle.iteration != found.anchor.iteration:
        return ("in-flight" if log.live else "abandoned"), 0
    reply = last_set(bundle, ReplyWrite)
    if reply is not None:
        return "replied", _attempts(reply)
    return "failed", _attempts(last_set(bundle, CallFailureWrite))


def location(log: RunLog, found: Located, number: int) -> EpochLocation:
    """The public location of a located epoch (reads its call bundle for the outcome)."""
    outcome, attempts = outcome_of(log, found)
    return EpochLocation(
        epoch=number,
        anchor_seq=found.anchor.seq,
        call_runtime_stage_id=found.call_runtime_stage_id,
        outcome=outcome,
        attempts=attempts,
    )


def epochs(log: RunLog) -> tuple[EpochLocation, ...]:
    """Every epoch of the run, in commit order; ``()`` when the run made no model call."""
    return tuple(
        location(log, found, number_of(log.value_at("iteration", found.anchor.seq), found.position))
        for found in locate_all(log.anchors())
    )


def epoch_at(log: RunLog, k: int) -> EpochLocation | None:
    """The earliest epoch numbered ``k``, or None; cost independent of ``k``.

    Raises:
        TypeError: ``k`` is not an ``int`` (or is a ``bool``); the message names ``epoch``.
    """
    hit = find(log, check_epoch(k))
    if hit is None:
        return None
    return location(log, *hit)
