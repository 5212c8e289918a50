"""Locating epochs (model calls) in one run's commit log (served.md §1.2).

Every ``receipt`` bundle anchors an epoch; so does a ``call-model`` bundle that no receipt
covers (a legacy or damaged log). Both come from the log's anchor index (``RunLog.anchors``),
never from walking the log.

Readings settled here:

* A ``call-model`` anchor is *covered* when the anchor just before it in the index is a
  ``receipt`` of the same iteration (the iteration stamp of the bundles). Otherwise it anchors
  an epoch of its own ("no receipt since the previous iteration boundary").
* A receipt's call is the ``call-model`` anchor that covers it; ``callRuntimeStageId`` is always
  ``call-model#(n+1)`` for ``receipt#n`` and the bundle's own id for a legacy anchor.
* The number of an epoch is the folded ``iteration`` at its anchor when that is an ``int``;
  otherwise (unknown, or not an int) its 1-based position among the located epochs.
* ``epoch_at`` finds candidates by the anchors' iteration stamps and by position, then confirms
  each with one ``value_at("iteration", seq)``: a handful of reads whatever ``k`` is. A damaged
  log whose folded counter disagrees with the bundles' stamps may list an epoch under a number
  that ``epoch_at`` does not find.
* ``outcome`` and ``attempts`` come from the covering ``call-model`` bundle: ``replied`` when it
  writes ``reply``, ``failed`` otherwise; ``attempts`` is the ``attempts`` it records (0 when it
  records none). Without a covering bundle the epoch is ``in-flight`` while the run is live and
  ``abandoned`` once it has ended, with 0 attempts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

import msgspec

from afp_runtime.records import Anchor, CommitBundle, RunLog, runtime_stage_id

Outcome = Literal["replied", "failed", "in-flight", "abandoned"]


class EpochLocation(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Where one epoch sits in its run's log and how its call ended.

    Attributes:
        epoch: the epoch's number (served.md §1.1).
        anchor_seq: the seq of the anchoring bundle (wire ``anchorSeq``).
        call_runtime_stage_id: the id of the epoch's ``call-model`` execution.
        outcome: ``replied``, ``failed``, ``in-flight`` or ``abandoned``.
        attempts: the number of sends recorded for the call (0 when none).
    """

    epoch: int
    anchor_seq: int
    call_runtime_stage_id: str
    outcome: Outcome
    attempts: int


class Located(NamedTuple):
    """An anchor that starts an epoch, before its number is looked up."""

    anchor: Anchor
    position: int
    call_seq: int | None
    call_runtime_stage_id: str


def check_epoch(k: object) -> int:
    """Refuse an epoch number that is not an ``int`` (a ``bool`` included)."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"epoch must be an int, not {type(k).__name__} {k!r}")
    return k


class Locator:
    """Incremental epoch location over anchors in commit order (shared by index and one pass)."""

    def __init__(self) -> None:
        self.located: list[Located] = []
        self._pending: int | None = None

    def feed(self, anchor: Anchor) -> Located | None:
        """Take the next anchor; return the epoch it starts, if it starts one."""
        if anchor.stage == "receipt":
            found = Located(
                anchor=anchor,
                position=len(self.located) + 1,
                call_seq=None,
                call_runtime_stage_id=runtime_stage_id("call-model", anchor.seq + 1),
            )
            self.located.append(found)
            self._pending = len(self.located) - 1
            return found
        if anchor.stage != "call-model":
            return None
        pending, self._pending = self._pending, None
        if pending is not None and self.located[pending].anchor.iteration == anchor.iteration:
            self.located[pending] = self.located[pending]._replace(call_seq=anchor.seq)
            return None
        found = Located(
            anchor=anchor,
            position=len(self.located) + 1,
            call_seq=anchor.seq,
            call_runtime_stage_id=runtime_stage_id("call-model", anchor.seq),
        )
        self.located.append(found)
        return found


def locate_all(anchors: Sequence[Anchor]) -> list[Located]:
    """Every epoch-starting anchor, in commit order, each with its covering call (if any)."""
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
    """The earliest epoch numbered ``k`` and its number, from the anchor index."""
    located = locate_all(log.anchors())
    candidates = [found for found in located if found.anchor.iteration == k]
    if 1 <= k <= len(located) and located[k - 1] not in candidates:
        candidates.append(located[k - 1])
    candidates.sort(key=lambda found: found.anchor.seq)
    for found in candidates:
        if number_of(log.value_at("iteration", found.anchor.seq), found.position) == k:
            return found, k
    return None


def _write(bundle: CommitBundle, key: str) -> Any:
    """The value of the last ``set`` of ``key`` in one bundle, or None."""
    value = None
    for write in bundle.writes:
        if write.key == key and write.verb == "set":
            value = write.value
    return value


def _attempts(record: Any) -> int:
    if isinstance(record, Mapping):
        found = readable_int(record.get("attempts"))
        if found is not None and found >= 0:
            return found
    return 0


def outcome_of(log: RunLog, found: Located) -> tuple[Outcome, int]:
    """How the epoch's call ended, and its recorded attempts."""
    bundle = log.bundle(found.call_seq) if found.call_seq is not None else None
    if bundle is None:
        return ("in-flight" if log.live else "abandoned"), 0
    reply = _write(bundle, "reply")
    if reply is not None:
        return "replied", _attempts(reply)
    return "failed", _attempts(_write(bundle, "callFailure"))


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
