"""The ``RunLog`` read interface over the store's tables (docs/served.md#the-runlog-interface),
written once for every SQL backend.

Synchronous by design: served code never awaits, so a store's ``read_run`` calls ``read`` in a
worker thread. ``IndexedRunLog`` answers "value of key K as of bundle S" from the per-key index
(the last ``set`` at or before S plus the appends after it) and never replays the log
(docs/architecture.md#decision-3-served-views-read-an-index-not-a-replay); a backend supplies
``_rows``, running one statement of this module (``?`` placeholders) synchronously.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import StoreDamaged
from afp_runtime.records import (
    MESSAGE_LIST_KEYS,
    UNKNOWN,
    Anchor,
    CommitBundle,
    HistoryWrite,
    ListRef,
    MessageRef,
    runtime_stage_id,
)
from afp_runtime.store.rows import NOT_DISPATCHED, decode_writes

_LARGEST_INTEGER = 2**63 - 1  # both backends' 64-bit INTEGER / BIGINT
_BUNDLE_COLUMNS = "SELECT seq, stage, iteration, committed_at_ms, writes FROM bundles"


class IndexedRunLog(abc.ABC):
    """One run's commit log, read-only, through a backend's ``_rows``.

    Raises:
        KeyError: the run does not exist.
    """

    def __init__(self, run_id: str) -> None:
        found = self._rows("SELECT run, agent, status FROM runs WHERE run_id=?", (run_id,))
        if not found:
            raise KeyError(run_id)
        self.run_id = run_id
        self._run, self._agent, status = found[0]
        self.live = status == "running"
        first = self._rows("SELECT stage FROM bundles WHERE run=? AND seq=0", (self._run,))
        self.has_base = bool(first) and first[0][0] == "seed"
        self.reads = 0

    @abc.abstractmethod
    def _rows(self, sql: str, params: tuple[Any, ...]) -> Sequence[Sequence[Any]]:
        """Every row of one statement (``?`` placeholders), synchronously; each backend
        answers it."""

    # -- anchors ----------------------------------------------------------------------------

    def anchors(self) -> tuple[Anchor, ...]:
        """Every receipt and call-model bundle, in commit order."""
        self.reads += 1
        found = self._rows(
            "SELECT seq, stage, iteration FROM bundles"
            " WHERE run=? AND stage IN ('receipt', 'call-model') ORDER BY seq",
            (self._run,),
        )
        return tuple(Anchor(seq=seq, stage=stage, iteration=it) for seq, stage, it in found)

    def anchor_at(self, epoch: int) -> Anchor | None:
        """The earliest receipt anchor of iteration ``epoch``: one index lookup."""
        if not 0 <= epoch <= _LARGEST_INTEGER:
            return None  # no stored iteration has this number, and the database cannot bind it
        self.reads += 1
        found = self._rows(
            # The ``IN`` term names the partial index's condition, so the planner may use it.
            "SELECT seq, iteration FROM bundles WHERE run=? AND stage='receipt' AND iteration=?"
            " AND stage IN ('receipt', 'call-model') ORDER BY seq LIMIT 1",
            (self._run, epoch),
        )
        if not found:
            return None
        return Anchor(seq=found[0][0], stage="receipt", iteration=found[0][1])

    # -- bundles ----------------------------------------------------------------------------

    def _decode(self, seq: int, stage: str, iteration: int, at: int, blob: bytes) -> CommitBundle:
        writes = tuple(
            msgspec.structs.replace(w, value=self._refs(w.value))
            if isinstance(w, HistoryWrite) and isinstance(w.value, ListRef)
            else w
            for w in decode_writes(blob, seq, self.run_id)
        )
        return CommitBundle(
            run_id=self.run_id,
            seq=seq,
            stage=stage,
            runtime_stage_id=runtime_stage_id(stage, seq),
            iteration=iteration,
            writes=writes,
            committed_at_ms=at,
        )

    def bundle(self, seq: int) -> CommitBundle | None:
        """The bundle at ``seq``, message lists as references."""
        self.reads += 1
        found = self._rows(f"{_BUNDLE_COLUMNS} WHERE run=? AND seq=?", (self._run, seq))
        return self._decode(*found[0]) if found else None

    def bundles(self, from_seq: int = 0) -> Iterator[CommitBundle]:
        """Bundles in commit order from ``from_seq``."""
        found = self._rows(
            f"{_BUNDLE_COLUMNS} WHERE run=? AND seq>=? ORDER BY seq", (self._run, from_seq)
        )
        for row in found:
            self.reads += 1
            yield self._decode(*row)

    # -- values -----------------------------------------------------------------------------

    def _refs(self, ref: ListRef) -> tuple[MessageRef, ...]:
        """The item references a stored list value names."""
        refs: list[MessageRef] = []
        for start, end in ref.ranges:
            found = self._rows(
                "SELECT fp, flags, injected_by FROM items WHERE agent=? AND pos>=? AND pos<?"
                " ORDER BY pos",
                (self._agent, start, end),
            )
            refs.extend(
                MessageRef(
                    fingerprint=bytes(fp).hex(),
                    not_dispatched=bool(flags & NOT_DISPATCHED),
                    injected_by=injected_by,
                )
                for fp, flags, injected_by in found
            )
        return tuple(refs)

    def _write_of(self, key: str, seq: int) -> Any:
        bundle = self.bundle(seq)
        if bundle is None:
            raise StoreDamaged(f"the index names bundle {seq} of {self.run_id!r}, which is missing")
        for write in bundle.writes:
            if write.key == key:
                return write
        raise StoreDamaged(f"bundle {seq} of {self.run_id!r} has no write of {key!r}")

    def value_at(self, key: str, seq: int) -> Any:
        """The value of ``key`` as of bundle ``seq``, from the per-key index; ``UNKNOWN`` when
        it was never written by then."""
        self.reads += 1
        pending: list[int] = []
        value: Any = UNKNOWN
        # Only the last set or delete at or before ``seq`` and the appends after it: a key set
        # at every iteration would otherwise bring back one row per earlier iteration, a cost
        # that grows with the run (a round trip's worth of rows on a server backend).
        for found_seq, verb in self._rows(
            "SELECT seq, verb FROM key_index WHERE run=? AND key=? AND seq<=? AND seq>=COALESCE("
            "(SELECT MAX(seq) FROM key_index WHERE run=? AND key=? AND seq<=? AND verb<>'append'),"
            " -1) ORDER BY seq DESC",
            (self._run, key, seq, self._run, key, seq),
        ):
            if verb == "append":
                pending.append(found_seq)
                continue
            # A delete means nothing before it counts.
            value = self._write_of(key, found_seq).value if verb == "set" else UNKNOWN
            break
        if not pending:
            return value
        items: list[Any] = list(value) if value is not UNKNOWN and value is not None else []
        for found_seq in reversed(pending):
            items.extend(self._write_of(key, found_seq).value)
        return tuple(items) if key in MESSAGE_LIST_KEYS else items

    def body(self, fingerprint: str) -> bytes | None:
        """The stored canonical body under ``fingerprint``, or None."""
        self.reads += 1
        try:
            key = bytes.fromhex(fingerprint)
        except ValueError:
            return None
        found = self._rows("SELECT body FROM bodies WHERE fp=?", (key,))
        if not found:
            return None
        raw = found[0][0]
        if not isinstance(raw, bytes | bytearray | memoryview):
            raise StoreDamaged(
                f"body {fingerprint} is stored as {type(raw).__name__}, not bytes",
                run_id=self.run_id,
            )
        return bytes(raw)
