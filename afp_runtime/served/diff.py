"""What changed in what the model was sent between two calls (pure).

Messages are matched by fingerprint, so a message that stayed is recognised wherever it sits;
a summary that replaced folded messages shows up as added, the folded ones as removed.
"""

from __future__ import annotations

import msgspec

from afp_runtime.messages import Message, fingerprint
from afp_runtime.served.view import ServedView, thaw_message


class ViewDiff(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The change from one served view to a later one.

    Attributes:
        before: the earlier view's epoch.
        after: the later view's epoch.
        removed: the earlier view's messages the later one no longer sends, in order.
        added: the later view's messages the earlier one did not send, in order.
        kept: how many messages both sent.
        system_changed: whether the system text differs (wire ``systemChanged``).
        tools_added: tool names served only by the later call (wire ``toolsAdded``).
        tools_removed: tool names served only by the earlier call (wire ``toolsRemoved``).
    """

    before: int
    after: int
    removed: tuple[Message, ...]
    added: tuple[Message, ...]
    kept: int
    system_changed: bool
    tools_added: tuple[str, ...]
    tools_removed: tuple[str, ...]


def diff_views(before: ServedView, after: ServedView) -> ViewDiff:
    """What changed from ``before`` to ``after`` (normally two epochs of one run)."""
    old = [(fingerprint(thaw_message(m)), m) for m in before.messages.as_sent]
    new = [(fingerprint(thaw_message(m)), m) for m in after.messages.as_sent]
    old_keys = {key for key, _ in old}
    new_keys = {key for key, _ in new}
    return ViewDiff(
        before=before.epoch,
        after=after.epoch,
        removed=tuple(m for key, m in old if key not in new_keys),
        added=tuple(m for key, m in new if key not in old_keys),
        kept=sum(1 for key, _ in new if key in old_keys),
        system_changed=before.system.text != after.system.text,
        tools_added=tuple(n for n in after.tools.names if n not in before.tools.names),
        tools_removed=tuple(n for n in before.tools.names if n not in after.tools.names),
    )
