"""Conversation messages and tool calls: the values every layer passes around.

Wire names are camelCase (``toolCalls``, ``toolCallId``); Python attributes are snake_case.
Absent optional fields are omitted on the wire, never written as ``null``.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

import msgspec

from afp_runtime.errors import InvalidValue, shown

Role = Literal["system", "user", "assistant", "tool"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_surrogates(field: str, text: str) -> None:
    # ``isascii`` reads a flag of the string, so ASCII text skips the scan.
    if not text.isascii() and _SURROGATE.search(text):
        raise InvalidValue(
            f"{field} holds a surrogate code point, which cannot be encoded as UTF-8",
            field=field,
            value=shown(text),
        )


def _refuse_non_finite(path: str, value: Any) -> None:
    """Refuse NaN and infinities anywhere in a JSON-like value (JSON cannot carry them)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidValue(f"{path} is {value!r}, which JSON cannot carry", field=path)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                _refuse_surrogates(path, key)
            _refuse_non_finite(f"{path}.{key}", item)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _refuse_non_finite(f"{path}[{index}]", item)
    elif isinstance(value, str):
        _refuse_surrogates(path, value)


class ToolCall(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One tool call requested by the model.

    Attributes:
        id: the call id (wire ``id``), unique within a conversation.
        name: the tool name the model asked for.
        args: the arguments as a JSON object; ``{}`` when the model's text did not parse.
        args_text: the model's raw argument text, present only when it did not parse as a JSON
            object (wire ``argsText``), so the next request re-sends what the model produced.
    """

    id: str
    name: str
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    args_text: str | None = None

    def __post_init__(self) -> None:
        _refuse_non_finite("toolCalls.args", self.args)
        _refuse_surrogates("toolCalls.id", self.id)
        _refuse_surrogates("toolCalls.name", self.name)
        if self.args_text is not None:
            _refuse_surrogates("toolCalls.argsText", self.args_text)


class Message(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One conversation message.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: the text; chars are its Unicode code points.
        tool_calls: the calls of an assistant message (wire ``toolCalls``).
        tool_call_id: the call a ``tool`` message answers (wire ``toolCallId``).
        tool_name: the tool that produced a ``tool`` message (wire ``toolName``).
        not_dispatched: marker, the tool's function never ran (wire ``notDispatched``). Not part
            of the fingerprint (docs/architecture.md#decision-9-markers-live-in-the-list-reference).
        injected_by: marker, delivered by the runtime on someone's behalf (wire ``injectedBy``).
            Not part of the fingerprint.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    not_dispatched: bool = False
    injected_by: str | None = None

    def __post_init__(self) -> None:
        _refuse_surrogates("content", self.content)
        for field, text in (
            ("toolCallId", self.tool_call_id),
            ("toolName", self.tool_name),
            ("injectedBy", self.injected_by),
        ):
            if text is not None:
                _refuse_surrogates(field, text)
        if self.role == "tool" and not self.tool_call_id:
            raise InvalidValue("a tool message must carry toolCallId", field="toolCallId")
        if self.tool_calls and self.role != "assistant":
            raise InvalidValue(
                f"only assistant messages carry toolCalls, not {self.role!r}", field="toolCalls"
            )


def user(content: str) -> Message:
    """A person's message."""
    return Message(role="user", content=content)


def assistant(content: str = "", tool_calls: tuple[ToolCall, ...] = ()) -> Message:
    """An assistant message, optionally with tool calls."""
    return Message(role="assistant", content=content, tool_calls=tool_calls)


def tool_result(call_id: str, name: str, content: str, *, not_dispatched: bool = False) -> Message:
    """A tool message answering ``call_id``."""
    return Message(
        role="tool",
        content=content,
        tool_call_id=call_id,
        tool_name=name,
        not_dispatched=not_dispatched,
    )


def chars(messages: Any) -> int:
    """Sum of the Unicode code points of the messages' content (never tokens)."""
    return sum(len(m.content) for m in messages)
