"""``MemoryRunLog``: an in-memory ``RunLog`` that folds by replay (exports and tests).

It keeps, per key, the writes in commit order; ``value_at(key, seq)`` replays that key's writes
from its last ``set`` (or ``delete``) at or before ``seq``, so it answers exactly as a full
replay of the log would, at a cost bounded by the value's own writes.

Readings settled here:

* Values are kept as JSON bytes and decoded afresh on every read, the way a store hands them
  out: Structs become their wire (camelCase) form, so a caller can never change the log by
  changing what it was given.
* In message-list keys (``history``) a write may hold ``Message`` values (their canonical
  bodies go to the body store and the list keeps references with the markers),
  ``MessageRef`` values or reference mappings; they always read back as ``MessageRef`` tuples.
* ``append`` onto an unknown (or non-list) value starts from an empty list; an appended value
  that is not a list is one element; ``delete`` makes the value unknown again.
* ``has_base`` is the given flag, or, when none is given, whether the bundle at ``seq == 0`` is
  a ``seed`` bundle.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import msgspec

from afp_runtime.errors import InvalidValue, shown
from afp_runtime.messages import Message, message_body, sha256_hex
from afp_runtime.records import (
    MESSAGE_LIST_KEYS,
    UNKNOWN,
    Anchor,
    AnyWrite,
    CommitBundle,
    HistoryWrite,
    MessageRef,
    runtime_stage_id,
    write_of,
)
from afp_runtime.served.bodies import as_ref
from afp_runtime.served.payloads import served_enc_hook, thaw_message
from afp_runtime.served.view import apply_write

_encoder = msgspec.json.Encoder(enc_hook=served_enc_hook)
_refs_decoder = msgspec.json.Decoder(tuple[MessageRef, ...])
_any_decoder = msgspec.json.Decoder()
# Sorts after every write order within one bundle.
_AFTER = 1 << 62


class _Meta(NamedTuple):
    # The bundle without its writes, which are kept as (key, verb, stored JSON) alone.
    head: CommitBundle
    writes: tuple[tuple[str, str, bytes | None], ...]


class _Entry(NamedTuple):
    seq: int
    order: int
    verb: str
    data: bytes | None


class MemoryRunLog:
    """An in-memory run log.

    Args:
        run_id: the run.
        bundles: bundles to add, in any order (seqs must be distinct).
        bodies: stored message bodies by fingerprint.
        has_base: force the fold-base flag (a partial export passes False); by default it is
            whether seq 0 holds the run's ``seed`` bundle.
        live: whether the run is still running.
    """

    def __init__(
        self,
        run_id: str,
        bundles: Iterable[CommitBundle] = (),
        bodies: Mapping[str, bytes] | None = None,
        *,
        has_base: bool | None = None,
        live: bool = False,
    ) -> None:
        self.run_id = run_id
        self.live = live
        self._forced_base = has_base
        self.has_base = bool(has_base)
        self._meta: dict[int, _Meta] = {}
        self._seqs: list[int] = []
        self._index: dict[str, list[_Entry]] = {}
        self._receipts: dict[int, list[int]] = {}
        self._bodies: dict[str, bytes] = dict(bodies or {})
        for bundle in bundles:
            self.add(bundle)

    # --- writing ----------------------------------------------------------------------------

    def stored_bodies(self) -> dict[str, bytes]:
        """A copy of the body store."""
        return dict(self._bodies)

    def _refs(self, key: str, value: Any) -> bytes:
        items = value if isinstance(value, list | tuple) else (value,)
        refs: list[MessageRef] = []
        for index, item in enumerate(items):
            ref: MessageRef | None
            if isinstance(item, Message):
                body = message_body(thaw_message(item))
                ref = MessageRef(
                    fingerprint=sha256_hex(body),
                    not_dispatched=item.not_dispatched,
                    injected_by=item.injected_by,
                )
                self._bodies.setdefault(ref.fingerprint, body)
            elif (ref := as_ref(item)) is None:
                raise InvalidValue(
                    f"{key}[{index}] is neither a message nor a message reference",
                    field=f"{key}[{index}]",
                    value=shown(item),
                )
            refs.append(ref)
        return _encoder.encode(refs)

    def add(self, bundle: CommitBundle) -> None:
        """Add one bundle (values normalised to their stored JSON form)."""
        if bundle.seq in self._meta:
            raise InvalidValue(f"bundle {bundle.seq} is already in the log", field="seq")
        writes: list[tuple[str, str, bytes | None]] = []
        for order, write in enumerate(bundle.writes):
            data: bytes | None = None
            if write.verb != "delete":
                if isinstance(write, HistoryWrite):
                    data = self._refs(write.key, write.value)
                else:
                    data = _encoder.encode(write.value)
            writes.append((write.key, write.verb, data))
            entries = self._index.setdefault(write.key, [])
            bisect.insort(entries, _Entry(bundle.seq, order, write.verb, data))
        head = msgspec.structs.replace(bundle, run_id=self.run_id, writes=())
        self._meta[bundle.seq] = _Meta(head, tuple(writes))
        bisect.insort(self._seqs, bundle.seq)
        if bundle.stage == "receipt":
            bisect.insort(self._receipts.setdefault(bundle.iteration, []), bundle.seq)
        if self._forced_base is None:
            first = self._meta.get(0)
            self.has_base = first is not None and first.head.stage == "seed"

    def append(
        self,
        stage: str,
        writes: Iterable[AnyWrite],
        *,
        iteration: int,
        committed_at_ms: int = 0,
    ) -> CommitBundle:
        """Commit a bundle at the next seq and return it as given."""
        seq = self._seqs[-1] + 1 if self._seqs else 0
        bundle = CommitBundle(
            run_id=self.run_id,
            seq=seq,
            stage=stage,
            runtime_stage_id=runtime_stage_id(stage, seq),
            iteration=iteration,
            writes=tuple(writes),
            committed_at_ms=committed_at_ms,
        )
        self.add(bundle)
        return bundle

    # --- the RunLog interface ---------------------------------------------------------------

    @staticmethod
    def _decode(key: str, data: bytes | None) -> Any:
        if data is None:
            return None
        if key in MESSAGE_LIST_KEYS:
            return _refs_decoder.decode(data)
        return _any_decoder.decode(data)

    def anchors(self) -> tuple[Anchor, ...]:
        """Every ``receipt`` and ``call-model`` bundle, in commit order."""
        return tuple(
            Anchor(seq=seq, stage=head.stage, iteration=head.iteration)
            for seq in self._seqs
            if (head := self._meta[seq].head).stage in ("receipt", "call-model")
        )

    def anchor_at(self, epoch: int) -> Anchor | None:
        """The earliest ``receipt`` bundle stamped with iteration ``epoch``, or None."""
        seqs = self._receipts.get(epoch)
        if not seqs:
            return None
        return Anchor(seq=seqs[0], stage="receipt", iteration=epoch)

    def bundle(self, seq: int) -> CommitBundle | None:
        """The bundle at ``seq`` with freshly decoded values, or None."""
        meta = self._meta.get(seq)
        if meta is None:
            return None
        writes = tuple(
            write_of(key, verb, self._decode(key, data))  # type: ignore[arg-type]
            for key, verb, data in meta.writes
        )
        return msgspec.structs.replace(meta.head, writes=writes)

    def bundles(self, from_seq: int = 0) -> Iterator[CommitBundle]:
        """Bundles in commit order from ``from_seq``."""
        start = bisect.bisect_left(self._seqs, from_seq)
        for seq in self._seqs[start:]:
            bundle = self.bundle(seq)
            if bundle is not None:
                yield bundle

    def value_at(self, key: str, seq: int) -> Any:
        """The fold of ``key``'s writes in bundles ``..seq``, or ``UNKNOWN``."""
        entries = self._index.get(key)
        if not entries:
            return UNKNOWN
        end = bisect.bisect_right(entries, (seq, _AFTER))
        start = end - 1
        while start > 0 and entries[start].verb == "append":
            start -= 1
        fold: dict[str, Any] = {key: UNKNOWN}
        for entry in entries[max(start, 0) : end]:
            apply_write(fold, key, entry.verb, self._decode(key, entry.data))
        value = fold[key]
        if key in MESSAGE_LIST_KEYS and isinstance(value, list):
            return tuple(value)
        return value

    def body(self, fingerprint: str) -> bytes | None:
        """The stored body under ``fingerprint``, or None when it is missing."""
        return self._bodies.get(fingerprint)
