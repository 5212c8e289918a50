"""Reading folded spans back from the store as ``FoldedSpan`` values, originals included.

Spans keep their originals by reference to the agent's item log; these functions resolve them
only when asked (a person recovering in July what was folded in April), never on resume.
"""

from __future__ import annotations

import msgspec

from afp_runtime.records import ListRef, StoredFoldedSpan
from afp_runtime.store import CheckpointStore
from afp_runtime.window import FoldedSpan


class FoldedConversation(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """An agent's conversation as the fold joins see it: its folded spans, oldest first."""

    agent_id: str
    folded: tuple[FoldedSpan, ...]


async def resolve_span(store: CheckpointStore, agent_id: str, span: StoredFoldedSpan) -> FoldedSpan:
    """One stored span with its retained originals resolved from the item log."""
    messages: tuple | msgspec.UnsetType = msgspec.UNSET
    if span.messages is not None:
        messages, _ = await store.resolve(agent_id, span.messages)
    # The two shapes share their field names; only ``messages`` differs (values, not a reference).
    retained = "conversation" if span.retained == "conversation" else "discard"
    return FoldedSpan(
        **{**msgspec.structs.asdict(span), "retained": retained, "messages": messages}
    )


def stored_span(span: FoldedSpan, messages: ListRef | None) -> StoredFoldedSpan:
    """A span as the store keeps it: its originals, when kept, by reference (``messages``)."""
    return StoredFoldedSpan(**{**msgspec.structs.asdict(span), "messages": messages})


async def load_folded_spans(
    store: CheckpointStore, agent_id: str, *, summary_fingerprint: str | None = None
) -> tuple[FoldedSpan, ...]:
    """The agent's folded spans (or those of one summary), originals resolved."""
    stored = await store.folded_spans(agent_id, summary_fingerprint=summary_fingerprint)
    return tuple([await resolve_span(store, agent_id, span) for span in stored])


async def load_folded_conversation(store: CheckpointStore, agent_id: str) -> FoldedConversation:
    """The agent's conversation for ``folded_span_for`` / ``folded_messages``."""
    return FoldedConversation(agent_id=agent_id, folded=await load_folded_spans(store, agent_id))
