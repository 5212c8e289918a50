"""Tool names of window messages, and the names of what left (docs/window.md#naming-a-tool-result,
docs/window.md#names-of-what-left).

A tool message names its own tool when it carries a non-empty ``tool_name``; otherwise its
name is recovered from the assistant call it answers. A settled message (``not_dispatched``)
names nothing: its tool never ran. Nothing here invents a placeholder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from afp_runtime.messages import Message

CallNames = Mapping[str, str]
"""Call id → tool name of the **first** call with that id in a window (see ``call_names``)."""


def call_names(context: Iterable[Message]) -> dict[str, str]:
    """Index the tool calls of ``context``: each call id mapped to the name of its first call.

    Built once per window so that naming many messages stays linear in window length.
    """
    names: dict[str, str] = {}
    for message in context:
        for call in message.tool_calls:
            names.setdefault(call.id, call.name)
    return names


def names_index(context: Iterable[Message] | CallNames) -> CallNames:
    """``context`` as a ``call_names`` index (an index is taken as it is)."""
    return context if isinstance(context, Mapping) else call_names(context)


def tool_name_of(message: Message, context: Sequence[Message] | CallNames) -> str | None:
    """The tool a ``tool`` message answers for, or None when it cannot be named
    (docs/window.md#naming-a-tool-result).

    ``context`` is usually the whole window, or its ``call_names`` index when many messages are
    named. The first call with the message's id decides: when that call's name is empty the
    message is unnameable, even if a later call with the same id has a name.
    """
    if message.role != "tool" or message.not_dispatched:
        return None
    if message.tool_name:
        return message.tool_name
    if not message.tool_call_id:
        return None
    return names_index(context).get(message.tool_call_id) or None


def dropped_tool_names(
    span: Sequence[Message], context: Sequence[Message] | CallNames | None = None
) -> tuple[str, ...]:
    """Names of the span's tool messages, in first-appearance order, each once
    (docs/window.md#names-of-what-left).

    ``context`` defaults to the span itself. Unnameable results contribute nothing.
    """
    index = names_index(span if context is None else context)
    names = (tool_name_of(message, index) for message in span)
    return tuple(dict.fromkeys(name for name in names if name is not None))
