"""Message bodies of a served view (docs/served.md#the-served-view): the as-sent list of
references and substituted messages, and the references resolved through the log's body store,
each body decoded at most once. A body present but unreadable is damage, not absence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from afp_runtime.messages import Message, message_from_body
from afp_runtime.records import MessageRef, RunLog
from afp_runtime.served.locate import readable_int
from afp_runtime.served.payloads import freeze_message


class _Damaged:
    """A stored body that is present but cannot be read as a message."""


_DAMAGED: Final = _Damaged()


class Bodies:
    """Resolves message references through one log, each body read and decoded at most once."""

    def __init__(self, log: RunLog) -> None:
        self._log = log
        self._plain: dict[str, Message | _Damaged | None] = {}
        self._marked: dict[tuple[str, bool, str | None], Message | _Damaged | None] = {}

    def _base(self, fp: str) -> Message | _Damaged | None:
        if fp not in self._plain:
            body = self._log.body(fp)
            found: Message | _Damaged | None = None
            if body is not None:
                try:
                    found = message_from_body(body)
                except (msgspec.MsgspecError, ValueError):
                    found = _DAMAGED
            self._plain[fp] = found
        return self._plain[fp]

    def resolve(self, ref: MessageRef) -> Message | _Damaged | None:
        """The referenced message with the reference's markers (None: body missing)."""
        key = (ref.fingerprint, ref.not_dispatched, ref.injected_by)
        if key not in self._marked:
            base = self._base(ref.fingerprint)
            if isinstance(base, Message):
                if ref.not_dispatched or ref.injected_by is not None:
                    base = msgspec.structs.replace(
                        base, not_dispatched=ref.not_dispatched, injected_by=ref.injected_by
                    )
                base = freeze_message(base)
            self._marked[key] = base
        return self._marked[key]


def as_ref(item: Any) -> MessageRef | None:
    """A message reference from a stored list element, or None when it is not one."""
    if isinstance(item, MessageRef):
        return item
    if isinstance(item, Mapping) and isinstance(item.get("fingerprint"), str):
        try:
            return msgspec.convert(item, MessageRef)
        except msgspec.ValidationError:
            return None
    return None


def _substitute(message: Any) -> MessageRef | Message | None:
    if not isinstance(message, Mapping):
        return None
    if "role" not in message:
        return as_ref(message)
    try:
        return msgspec.convert(message, Message)
    except (msgspec.ValidationError, ValueError):
        return None


def as_sent_slots(history: Sequence[Any], substitutions: Any) -> list[MessageRef | Message | None]:
    """The as-sent list before resolving: references, substituted messages, damaged (None)."""
    slots: list[MessageRef | Message | None] = [as_ref(item) for item in history]
    if not isinstance(substitutions, list | tuple):
        return slots
    for sub in substitutions:
        if not isinstance(sub, Mapping):
            continue
        index = readable_int(sub.get("index"))
        if index is None or not 0 <= index < len(slots):
            continue
        slots[index] = _substitute(sub.get("message"))
    return slots
