"""Assembling a streamed chat completion (docs/loop.md#streaming-replies).

Chunks carry ``choices[0].delta`` pieces: ``content`` and ``refusal`` text, and
``tool_calls[i]`` fragments keyed by ``index`` (the call's ``id`` and ``function.name`` on its
first fragment, ``function.arguments`` in pieces); ``finish_reason`` comes on a late chunk and the
usage on a last chunk with no choices (asked for by ``stream_options.include_usage``). The
stream ends with ``data: [DONE]``. A chunk holding ``error`` is the provider's error event.
"""

from __future__ import annotations

import uuid
from typing import Any

from httpx_sse import ServerSentEvent

from afp_runtime.errors import shown
from afp_runtime.models._http_reading import vendor_error
from afp_runtime.models._sse import ErrorEvent, EventShapeError, event_json, field
from afp_runtime.models.base import DeltaSink, ReplyDelta


def fresh_call_id() -> str:
    """The id given to a reply tool call that came without one."""
    return f"call_{uuid.uuid4().hex[:24]}"


class _Call:
    """One tool call being assembled."""

    def __init__(self, call_id: str, name: str | None) -> None:
        self.id = call_id
        self.name = name
        self.arguments: list[str] | dict[str, Any] | None = None

    def add(self, piece: Any, where: str) -> None:
        if piece is None:
            return
        if isinstance(piece, dict) and self.arguments is None:
            self.arguments = piece  # an object, as some local servers give it
        elif isinstance(piece, str) and not isinstance(self.arguments, dict):
            self.arguments = [*(self.arguments or ()), piece]
        else:
            raise EventShapeError(f"{where}.function.arguments is {shown(piece)}")

    def wire(self) -> dict[str, Any]:
        args = self.arguments
        return {
            "id": self.id,
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": "".join(args) if isinstance(args, list) else args,
            },
        }


class OpenAIStream:
    """The assembler of one streamed chat completion (``_sse.Assembler``)."""

    terminal = "data: [DONE]"

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self._sink = on_delta
        self._chunks = 0
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: list[_Call] = []
        self._positions: dict[int, int] = {}
        self._finish: Any = None
        self._usage: Any = None

    def feed(self, event: ServerSentEvent) -> bool:
        data_text = event.data.strip()
        if data_text == "[DONE]":
            if self._refusal and not self._text:
                self._emit(ReplyDelta(text="".join(self._refusal)))
            return True
        if not data_text:
            return False
        self._chunks += 1
        what = f"chunk {self._chunks}"
        chunk = event_json(event, what)
        if chunk.get("error") is not None:
            raise ErrorEvent(vendor_error(chunk))
        usage = chunk.get("usage")
        if usage is not None:
            self._usage = usage
        choices = field(chunk, "choices", list, what) or []
        for i, choice in enumerate(choices):
            if not isinstance(choice, dict):
                raise EventShapeError(f"{what}.choices[{i}] is not an object")
            if choice.get("index", 0) == 0:
                self._choice(choice, f"{what}.choices[{i}]")
        return False

    def body(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._text) or None}
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if self._calls:
            message["tool_calls"] = [call.wire() for call in self._calls]
        body: dict[str, Any] = {
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}]
        }
        if self._usage is not None:
            body["usage"] = self._usage
        return body

    def _choice(self, choice: dict[str, Any], where: str) -> None:
        finish = choice.get("finish_reason")
        if finish is not None:
            self._finish = finish
        delta = field(choice, "delta", dict, where)
        if delta is None:
            return
        where = f"{where}.delta"
        text = field(delta, "content", str, where)
        if text:
            self._text.append(text)
            self._emit(ReplyDelta(text=text))
        refusal = field(delta, "refusal", str, where)
        if refusal:
            self._refusal.append(refusal)
        for i, fragment in enumerate(field(delta, "tool_calls", list, where) or ()):
            self._call_fragment(fragment, f"{where}.tool_calls[{i}]")

    def _call_fragment(self, fragment: Any, where: str) -> None:
        if not isinstance(fragment, dict):
            raise EventShapeError(f"{where} is not an object")
        function = field(fragment, "function", dict, where) or {}
        call_id = field(fragment, "id", str, where)
        name = field(function, "name", str, f"{where}.function")
        index = field(fragment, "index", int, where)
        if index is None:
            # A server that numbers no fragment: a new id starts a new call.
            fresh = not self._calls or (call_id and call_id != self._calls[-1].id)
            index = len(self._calls) if fresh else next(reversed(self._positions))
        position = self._positions.get(index)
        first = position is None
        if position is None:
            position = self._positions[index] = len(self._calls)
            self._calls.append(_Call(call_id or fresh_call_id(), name or None))
        call = self._calls[position]
        if call.name is None and name:
            call.name = name
        piece = function.get("arguments")
        call.add(piece, where)
        if first:
            self._emit(
                ReplyDelta(
                    tool_call_index=position,
                    tool_call_id=call.id,
                    tool_name=call.name,
                    arguments=piece if isinstance(piece, str) else "",
                )
            )
        elif isinstance(piece, str) and piece:
            self._emit(ReplyDelta(tool_call_index=position, arguments=piece))

    def _emit(self, delta: ReplyDelta) -> None:
        if self._sink is not None:
            self._sink(delta)
