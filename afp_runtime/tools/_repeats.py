"""Repeated identical calls within a turn: the tally and the note (docs/loop.md#repeated-calls).

Pure: the tally is a value the caller commits with the results it counted, so a recovery counts
the same repeats.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import msgspec

from afp_runtime.messages import Message, ToolCall
from afp_runtime.tools.dispatch import ToolOutcome
from afp_runtime.tools.texts import repeated_call_note

# Outcomes whose content the tool itself produced: the function ran and returned or raised.
_COUNTED = frozenset({"ok", "error"})
_sorted_json = msgspec.json.Encoder(order="sorted")


def repeat_key(call: ToolCall, outcome: ToolOutcome) -> str:
    """A digest of the tool name, the call's arguments (canonical JSON) and the result."""
    args = call.args_text.encode() if call.args_text is not None else _sorted_json.encode(call.args)
    digest = hashlib.sha256()
    for part in (call.name.encode(), args):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    digest.update(outcome.content.encode())
    return digest.hexdigest()[:32]


def observe_batch(
    calls: Sequence[ToolCall],
    outcomes: Sequence[ToolOutcome],
    tally: Mapping[str, int],
    *,
    note: bool,
) -> tuple[list[Message], dict[str, int]]:
    """The tool messages of a batch's outcomes, in call order, each result seen before in the
    turn (same call, same result) carrying the repeated-call note when ``note``; and the tally
    after the batch. The outcomes themselves are left as the tools returned them."""
    counts = dict(tally)
    messages = []
    for call, outcome in zip(calls, outcomes, strict=True):
        message = outcome.message()
        if outcome.status in _COUNTED:
            key = repeat_key(call, outcome)
            seen = counts.get(key, 0) + 1
            counts[key] = seen
            if note and seen >= 2:
                message = msgspec.structs.replace(
                    message, content=message.content + repeated_call_note(seen)
                )
        messages.append(message)
    return messages, counts
