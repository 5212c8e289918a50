"""An agent's folded spans and the original messages a fold replaced
(docs/window.md, docs/architecture.md#the-application-layer).

Readings settled here:

* Several folds may write the same summary; a fingerprint names the newest of them.
* A span's originals are the messages kept with the conversation (``source="span"``), or, for
  a span folded with ``retain="discard"`` and when the caller asks (``from_log``), those the
  commit log of the run that folded them still holds (``source="log"``).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from afp_runtime.messages import Message, fingerprint
from afp_runtime.records import RunLog, StoredFoldedSpan
from afp_runtime.served import folded_from_log, served_at
from afp_runtime.store import Store
from afp_runtime.window import FoldedSpan


class Originals(msgspec.Struct, frozen=True, kw_only=True):
    """The messages one fold replaced, byte-identical, and where they were read."""

    messages: tuple[Message, ...]
    source: Literal["span", "log"]


async def folded(
    store: Store, agent_id: str, *, summary_fingerprint: str | None = None
) -> tuple[FoldedSpan, ...]:
    """The agent's folded spans (or those of one summary), oldest first, each with its kept
    originals resolved (unset for a span folded with ``retain="discard"``)."""
    # The loop loads with its first use: read commands of ``afp`` import no loop.
    from afp_runtime import loop

    return await loop.load_folded_spans(store, agent_id, summary_fingerprint=summary_fingerprint)


async def stored_folds(
    store: Store, agent_id: str, *, summary_fingerprint: str | None = None
) -> list[StoredFoldedSpan]:
    """The agent's folded spans as stored (originals by reference), oldest first."""
    return await store.folded_spans(agent_id, summary_fingerprint=summary_fingerprint)


async def fold(store: Store, agent_id: str, summary_fingerprint: str) -> StoredFoldedSpan | None:
    """The newest fold that wrote this summary, or None."""
    spans = await stored_folds(store, agent_id, summary_fingerprint=summary_fingerprint)
    return spans[-1] if spans else None


async def originals(
    store: Store, agent_id: str, span: StoredFoldedSpan, *, from_log: bool = True
) -> Originals | None:
    """The messages ``span`` replaced: kept with the conversation, or (``from_log``) read back
    from the folding run's commit log; None when they can be found nowhere."""
    if span.messages is not None:
        messages, _ = await store.resolve(agent_id, span.messages)
        return Originals(messages=tuple(messages), source="span")
    if not from_log or not await store.runs(run_id=span.run_id):
        return None
    found = await store.read_run(span.run_id, lambda log: folded_from_log(log, span))
    return None if found is None else Originals(messages=tuple(found), source="log")


async def fold_summary(store: Store, span: StoredFoldedSpan) -> Message | None:
    """The summary message as the call after the fold sent it, or None when that call's view
    (or its run) is gone."""
    if not await store.runs(run_id=span.run_id):
        return None
    return await store.read_run(span.run_id, lambda log: _summary(log, span))


def _summary(log: RunLog, span: StoredFoldedSpan) -> Message | None:
    view = served_at(log, span.iteration)
    if view is None:
        return None
    for message in view.messages.as_sent:
        # A summary is text; only such messages are fingerprinted (a view's tool arguments
        # are read-only mappings).
        if not message.tool_calls and fingerprint(message) == span.summary_fingerprint:
            return message
    return None
