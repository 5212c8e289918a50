"""What changed in what the model was sent between two calls (pure).

Messages are matched by fingerprint, so a message that stayed is recognised wherever it sits. A
message that left and one that came at the same position are one message that *changed* when
they answer the same tool call, or have the same role and the same neighbours on both sides (an
edited message between two that stayed). The rest left (folded, dropped) or came (new turns, a
summary: a fold shows as its originals leaving and the summary coming). System pieces are
compared by slot, tools by name and schema.
"""

from __future__ import annotations

import msgspec

from afp_runtime.messages import Message, canonical_json, fingerprint
from afp_runtime.served.payloads import thaw_message
from afp_runtime.served.view import ServedPiece, ServedView


class MessageChange(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One message sent at the same place in both calls, with other content.

    Attributes:
        index: its position in the later call's messages.
        before: the message as the earlier call sent it.
        after: the message as the later call sent it.
    """

    index: int
    before: Message
    after: Message


class PieceChange(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A system piece of one slot whose text differs between the calls."""

    slot: str
    before: str
    after: str


class ViewDiff(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The change from one served view to a later one.

    Attributes:
        before: the earlier view's epoch.
        after: the later view's epoch.
        removed: the earlier view's messages the later one no longer sends, in order.
        added: the later view's messages the earlier one did not send, in order.
        changed: messages at the same place with the same role whose content differs.
        kept: how many messages both sent unchanged.
        system_changed: whether the joined system text differs (wire ``systemChanged``).
        pieces_added: system pieces (by slot) only the later call had (wire ``piecesAdded``).
        pieces_removed: system pieces only the earlier call had (wire ``piecesRemoved``).
        pieces_changed: slots whose text differs (wire ``piecesChanged``).
        tools_added: tool names served only by the later call (wire ``toolsAdded``).
        tools_removed: tool names served only by the earlier call (wire ``toolsRemoved``).
        tools_changed: tool names served by both with another description or schema (wire
            ``toolsChanged``).
    """

    before: int
    after: int
    removed: tuple[Message, ...]
    added: tuple[Message, ...]
    changed: tuple[MessageChange, ...]
    kept: int
    system_changed: bool
    pieces_added: tuple[ServedPiece, ...]
    pieces_removed: tuple[ServedPiece, ...]
    pieces_changed: tuple[PieceChange, ...]
    tools_added: tuple[str, ...]
    tools_removed: tuple[str, ...]
    tools_changed: tuple[str, ...]


def _same_place(index: int, old: list[str], new: list[str], a: Message, b: Message) -> bool:
    """Whether ``a`` (earlier, at ``index``) and ``b`` (later, at ``index``) are one message."""
    if a.role != b.role:
        return False
    if a.role == "tool":
        return a.tool_call_id is not None and a.tool_call_id == b.tool_call_id
    before_same = index == 0 or old[index - 1] == new[index - 1]
    last_old, last_new = index == len(old) - 1, index == len(new) - 1
    after_same = (last_old and last_new) or (
        not last_old and not last_new and old[index + 1] == new[index + 1]
    )
    return before_same and after_same


def diff_views(before: ServedView, after: ServedView) -> ViewDiff:
    """What changed from ``before`` to ``after`` (normally two epochs of one run)."""
    old = [fingerprint(thaw_message(m)) for m in before.messages.as_sent]
    new = [fingerprint(thaw_message(m)) for m in after.messages.as_sent]
    old_keys, new_keys = set(old), set(new)
    gone = {i for i, key in enumerate(old) if key not in new_keys}
    came = {i for i, key in enumerate(new) if key not in old_keys}
    changed: list[MessageChange] = []
    for index in sorted(came):
        earlier = before.messages.as_sent[index] if index in gone else None
        later = after.messages.as_sent[index]
        if earlier is not None and _same_place(index, old, new, earlier, later):
            changed.append(MessageChange(index=index, before=earlier, after=later))
            gone.discard(index)
    came -= {change.index for change in changed}
    old_pieces = {piece.slot: piece for piece in before.system.pieces}
    new_pieces = {piece.slot: piece for piece in after.system.pieces}
    old_tools = {tool.name: canonical_json(tool.as_schema()) for tool in before.tools.schemas}
    new_tools = {tool.name: canonical_json(tool.as_schema()) for tool in after.tools.schemas}
    return ViewDiff(
        before=before.epoch,
        after=after.epoch,
        removed=tuple(before.messages.as_sent[i] for i in sorted(gone)),
        added=tuple(after.messages.as_sent[i] for i in sorted(came)),
        changed=tuple(changed),
        kept=sum(1 for key in new if key in old_keys),
        system_changed=before.system.text != after.system.text,
        pieces_added=tuple(p for slot, p in new_pieces.items() if slot not in old_pieces),
        pieces_removed=tuple(p for slot, p in old_pieces.items() if slot not in new_pieces),
        pieces_changed=tuple(
            PieceChange(slot=slot, before=old_pieces[slot].text, after=piece.text)
            for slot, piece in new_pieces.items()
            if slot in old_pieces and old_pieces[slot].text != piece.text
        ),
        tools_added=tuple(n for n in after.tools.names if n not in before.tools.names),
        tools_removed=tuple(n for n in before.tools.names if n not in after.tools.names),
        tools_changed=tuple(
            name
            for name, body in new_tools.items()
            if name in old_tools and old_tools[name] != body
        ),
    )
