"""What both backends do the same for the recall index (docs/recall.md): which messages a
transaction takes out of the window, the entries they become, and a query's words.

A backend reads the rows these functions ask for and writes what they answer, in the
transaction that commits the window visit; the SQL stays the backend's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from afp_runtime.errors import InvalidValue
from afp_runtime.messages import Message
from afp_runtime.records import (
    CommitBundle,
    FoldedSpansWrite,
    HistoryWrite,
    ListRef,
    StoredFoldedSpan,
    Txn,
)
from afp_runtime.store.recall_values import RecallEntry, RecallHit, RecallSource
from afp_runtime.store.rows import resolved_range
from afp_runtime.store.values import RunRow, StoredBundle

MAX_QUERY_CHARS = 1000
"""The longest query the index takes, in characters (docs/recall.md#queries)."""

CANDIDATES = 1_000
"""A search ranks the newest this many matching messages of the agent (all of them when fewer
match): a bound on its cost whatever the index holds (docs/recall.md#ranking)."""

MAX_QUERY_WORDS = 32
"""The most words a query may have (docs/recall.md#queries)."""

# A word: letters and digits (any script), with the joiners of ids between them, so
# ``ord-4520``, ``a.b@c.d`` and ``v1.2`` are one word each (docs/recall.md#queries).
_WORD = re.compile(r"\w+(?:[-_.:/@#]\w+)*")

_json = msgspec.json.Encoder()
_calls = msgspec.json.Decoder(tuple[str, ...])


class Removed(msgspec.Struct, frozen=True, kw_only=True):
    """An item position a window visit of the transaction took out of the window."""

    pos: int
    source: RecallSource
    committed_at_ms: int


def touches(txn: Txn) -> bool:
    """Whether ``txn`` carries a window visit that set the window (the only writes that take
    messages out of it): a cheap look at its bundles, on every commit."""
    return any(
        bundle.stage == "window" and any(isinstance(w, HistoryWrite) for w in bundle.writes)
        for bundle in txn.bundles
    )


def removals(
    old: ListRef,
    bundles: Sequence[CommitBundle | StoredBundle],
    folded: Sequence[StoredFoldedSpan],
) -> tuple[list[Removed], set[int]]:
    """The positions each window visit of ``bundles`` (a transaction's, or a run's read back)
    took out of the window, in order, and the positions of the window they leave.

    The window is followed from ``old`` (the checkpoint before them) through each bundle's
    ``history`` write: an ``append`` adds positions, a ``set`` replaces them, and what a
    ``window`` stage's ``set`` leaves out is removed by that visit. A fold's bundle also writes
    ``foldedSpans``: its removals are the fold's, under the summary's fingerprint. Runtime-inserted
    messages (summaries, notices: negative positions) are not indexed: their originals are.
    """
    alive = {pos for pos in old.positions() if pos >= 0}
    spans = {(span.run_id, span.iteration): span for span in folded}
    out: list[Removed] = []
    for bundle in bundles:
        folds = any(isinstance(w, FoldedSpansWrite) for w in bundle.writes)
        for write in bundle.writes:
            if not isinstance(write, HistoryWrite) or not isinstance(write.value, ListRef):
                continue
            positions = {pos for pos in write.value.positions() if pos >= 0}
            if write.verb == "append":
                alive |= positions
                continue
            if bundle.stage == "window":
                span = spans.get((bundle.run_id, bundle.iteration)) if folds else None
                source = RecallSource(
                    kind="fold" if span is not None else "drop",
                    run_id=bundle.run_id,
                    stage_id=bundle.runtime_stage_id,
                    fingerprint=span.summary_fingerprint if span is not None else None,
                )
                out += [
                    Removed(pos=pos, source=source, committed_at_ms=bundle.committed_at_ms)
                    for pos in sorted(alive - positions)
                ]
            alive = positions
    return out, alive


def position_ranges(positions: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted positions as ``[start, end)`` ranges (for ``rows.ranges_read``)."""
    return list(ListRef.of_positions(sorted(positions)).ranges)


def entries(
    agent_id: str,
    removed: Sequence[Removed],
    rows: Iterable[Sequence[Any]],
    kept_fps: set[bytes],
    said: Mapping[int, tuple[int, int, int | None]],
) -> list[RecallEntry]:
    """The entries of ``removed``, from their ``(pos, fp, flags, injected_by, body)`` item rows.

    A message whose body is still in the window (``kept_fps``: the fingerprints of the window
    the transaction leaves) did not leave it: a compacted window re-appends its messages at new
    positions, and a copy of the same text is still seen. ``said`` maps a position to the run
    that appended it: ``(first_pos, started_at_ms, accepted_at_ms)``
    (docs/recall.md#when-it-was-said).

    Raises:
        StoreDamaged: an item or a body is missing.
    """
    by_pos = {int(row[0]): row for row in rows}
    out: list[RecallEntry] = []
    for item in removed:
        row = by_pos.get(item.pos)
        if row is None or bytes(row[1]) in kept_fps:
            continue
        (message,), _ = resolved_range(agent_id, item.pos, item.pos + 1, [row])
        out.append(entry(item, message, said.get(item.pos)))
    return out


def entry(item: Removed, message: Message, run: tuple[int, int, int | None] | None) -> RecallEntry:
    """One message's entry; ``run`` is the ``(first_pos, started_at_ms, accepted_at_ms)`` of the
    run that appended it, when the store knows it."""
    if run is None:
        said = item.committed_at_ms
    else:
        first_pos, started_at_ms, accepted_at_ms = run
        person = message.role == "user" and item.pos == first_pos and accepted_at_ms is not None
        said = accepted_at_ms if person and accepted_at_ms is not None else started_at_ms
    calls = tuple(
        f"{call.name} {call.args_text}"
        if call.args_text is not None
        else f"{call.name} {_json.encode(call.args).decode()}"
        for call in message.tool_calls
    )
    return RecallEntry(
        pos=item.pos,
        source=item.source,
        role=message.role,
        content=message.content,
        tool_calls=calls,
        tool_name=message.tool_name,
        said_at_ms=said,
    )


ENTRY_COLUMNS = (
    "pos, kind, fingerprint, run_id, stage_id, role, content, tool_calls, tool_name, said_at_ms"
)
"""The columns of ``recall_entries`` after ``agent``, in the order ``entry_values`` gives."""


def entry_values(agent: int, e: RecallEntry) -> tuple[Any, ...]:
    """A ``recall_entries`` row: ``(agent, *ENTRY_COLUMNS)``."""
    s = e.source
    calls = _json.encode(e.tool_calls).decode() if e.tool_calls else None
    return (
        agent,
        e.pos,
        s.kind,
        s.fingerprint,
        s.run_id,
        s.stage_id,
        e.role,
        e.content,
        calls,
        e.tool_name,
        e.said_at_ms,
    )


HIT_COLUMNS = (
    "kind, fingerprint, run_id, stage_id, role, content, tool_calls, tool_name, said_at_ms"
)
"""The columns a search selects, then its rank, for ``hit``."""


def hit(agent_id: str, row: Sequence[Any]) -> RecallHit:
    """A search's row (``HIT_COLUMNS``, then the rank, higher better) as a ``RecallHit``."""
    kind, fingerprint, run_id, stage_id, role, content, calls, tool_name, said, rank = row
    return RecallHit(
        agent_id=agent_id,
        source=RecallSource(kind=kind, run_id=run_id, stage_id=stage_id, fingerprint=fingerprint),
        role=role,
        content=content,
        said_at_ms=int(said),
        rank=float(rank),
        tool_calls=_calls.decode(calls) if calls else (),
        tool_name=tool_name,
    )


def query_words(query: str) -> tuple[str, ...]:
    """A query's words by the rule of docs/recall.md#queries: text, never syntax.

    Raises:
        InvalidValue: the query holds U+0000, is longer than ``MAX_QUERY_CHARS``, has no word,
            or more than ``MAX_QUERY_WORDS``.
    """
    if not isinstance(query, str):
        raise InvalidValue("query must be text", field="query")
    if "\x00" in query:
        raise InvalidValue("query holds a NUL character (U+0000)", field="query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidValue(
            f"query is {len(query)} characters long; at most {MAX_QUERY_CHARS} are searched",
            field="query",
        )
    words = tuple(dict.fromkeys(w.casefold() for w in _WORD.findall(query)))
    if not words:
        raise InvalidValue(
            "query has no word to search for (letters or digits) once punctuation is set aside",
            field="query",
        )
    if len(words) > MAX_QUERY_WORDS:
        raise InvalidValue(
            f"query has {len(words)} words; at most {MAX_QUERY_WORDS} are searched",
            field="query",
        )
    return words


def fts5_query(words: Sequence[str], *, any_word: bool) -> str:
    """An FTS5 match expression of ``words``: each one a quoted string (so it is a phrase of
    its tokens, never an operator), joined by AND, or by OR with ``any_word``."""
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    return (" OR " if any_word else " AND ").join(quoted)


def visits(
    bundles: Sequence[StoredBundle],
) -> list[list[StoredBundle]]:
    """A run's bundles cut after each window visit that set the window: each part ends as a
    transaction of ``sync`` durability would, so a rebuild sees the window each visit left."""
    parts: list[list[StoredBundle]] = [[]]
    for bundle in bundles:
        parts[-1].append(bundle)
        if bundle.stage == "window" and any(isinstance(w, HistoryWrite) for w in bundle.writes):
            parts.append([])
    return [part for part in parts if part]


class _Log(Protocol):
    async def folded_spans(self, agent_id: str) -> list[StoredFoldedSpan]: ...

    async def runs(self, agent_id: str) -> list[RunRow]: ...

    async def bundles(self, run_id: str) -> list[StoredBundle]: ...


async def rebuilt_parts(store: _Log, agent_id: str) -> list[tuple[list[Removed], set[int]]]:
    """What the commit log shows each window visit of ``agent_id`` removed, run by run, and the
    window each visit left: what ``reindex_recall`` writes (docs/recall.md#rebuilding)."""
    folded = await store.folded_spans(agent_id)
    parts: list[tuple[list[Removed], set[int]]] = []
    for run in await store.runs(agent_id):
        window = ListRef()  # a run's seed sets the window before any visit
        for visit in visits(await store.bundles(run.run_id)):
            removed, kept = removals(window, visit, folded)
            parts.append((removed, kept))
            window = ListRef.of_positions(sorted(kept))
    return parts


def cut(hit: RecallHit, max_chars: int | None) -> RecallHit:
    """``hit`` with its content cut to ``max_chars`` characters, and how many were cut."""
    if max_chars is None or len(hit.content) <= max_chars:
        return hit
    return msgspec.structs.replace(
        hit, content=hit.content[:max_chars], content_cut=len(hit.content) - max_chars
    )


def check_limits(limit: int, max_chars: int | None) -> None:
    """Raises InvalidValue unless ``limit`` and ``max_chars`` are positive counts."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InvalidValue(
            f"limit must be a whole number of at least 1, not {limit!r}", field="limit"
        )
    if max_chars is not None and (
        not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 0
    ):
        raise InvalidValue(
            f"max_chars must be a whole number of at least 0, not {max_chars!r}", field="max_chars"
        )
