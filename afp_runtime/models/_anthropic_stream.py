"""Assembling a streamed Messages reply (docs/loop.md#streaming-replies).

``message_start`` opens the message (its usage holds the input counts); each content block comes
as ``content_block_start`` (a text block, or a ``tool_use`` block with its id and name),
``content_block_delta`` pieces (``text_delta`` text, ``input_json_delta`` partial JSON of the
call's input) and ``content_block_stop``; ``message_delta`` brings the stop reason and the
output count; ``message_stop`` ends the stream. ``ping`` and event types this build does not
know are skipped, as Anthropic asks; ``error`` is the provider's error event.
"""

from __future__ import annotations

from typing import Any

from httpx_sse import ServerSentEvent

from afp_runtime.models._http_reading import load_json, vendor_error
from afp_runtime.models._sse import ErrorEvent, EventShapeError, event_json, field
from afp_runtime.models.base import DeltaSink, ReplyDelta


class AnthropicStream:
    """The assembler of one streamed Messages reply (``_sse.Assembler``)."""

    terminal = "message_stop"

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self._sink = on_delta
        self._started = False
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._call_positions: dict[int, int] = {}
        self._stop: Any = None
        self._usage: dict[str, Any] = {}

    def feed(self, event: ServerSentEvent) -> bool:
        if not event.data.strip():
            return False
        name = event.event or "message"
        data = event_json(event, f"event {name}")
        kind = data.get("type", event.event)
        what = f"event {kind}"
        if kind == "error":
            raise ErrorEvent(vendor_error(data))
        if kind == "message_stop":
            if not self._started:
                raise EventShapeError("event message_stop came before message_start")
            return True
        if kind == "message_start":
            message = field(data, "message", dict, what)
            if message is None:
                raise EventShapeError(f"{what} has no message")
            self._started = True
            self._merge_usage(field(message, "usage", dict, f"{what}.message"))
        elif kind == "content_block_start":
            self._block_start(data, what)
        elif kind == "content_block_delta":
            self._block_delta(data, what)
        elif kind == "content_block_stop":
            self._block_stop(self._index(data, what))
        elif kind == "message_delta":
            delta = field(data, "delta", dict, what) or {}
            stop = delta.get("stop_reason")
            if stop is not None:
                self._stop = stop
            self._merge_usage(field(data, "usage", dict, what))
        return False

    def body(self) -> dict[str, Any]:
        for index in list(self._json):
            self._block_stop(index)
        body: dict[str, Any] = {
            "type": "message",
            "content": [self._blocks[i] for i in sorted(self._blocks)],
            "stop_reason": self._stop,
        }
        if self._usage:
            body["usage"] = self._usage
        return body

    def _merge_usage(self, usage: dict[str, Any] | None) -> None:
        # message_delta's counts are cumulative: a later count replaces an earlier one.
        for key, value in (usage or {}).items():
            if value is not None:
                self._usage[key] = value

    def _index(self, data: dict[str, Any], what: str) -> int:
        index = field(data, "index", int, what)
        if index is None:
            raise EventShapeError(f"{what} has no index")
        return int(index)

    def _block_start(self, data: dict[str, Any], what: str) -> None:
        index = self._index(data, what)
        block = field(data, "content_block", dict, what)
        if block is None:
            raise EventShapeError(f"{what} has no content_block")
        if index in self._blocks:
            raise EventShapeError(f"{what} starts block {index} a second time")
        self._blocks[index] = block = dict(block)
        if block.get("type") == "text":
            text = field(block, "text", str, f"{what}.content_block") or ""
            block["text"] = text
            if text:
                self._emit(ReplyDelta(text=text))
        elif block.get("type") == "tool_use":
            position = self._call_positions[index] = len(self._call_positions)
            self._json[index] = []
            call_id = field(block, "id", str, f"{what}.content_block")
            name = field(block, "name", str, f"{what}.content_block")
            self._emit(ReplyDelta(tool_call_index=position, tool_call_id=call_id, tool_name=name))

    def _block_delta(self, data: dict[str, Any], what: str) -> None:
        index = self._index(data, what)
        block = self._blocks.get(index)
        if block is None:
            raise EventShapeError(f"{what} is for block {index}, which never started")
        delta = field(data, "delta", dict, what)
        if delta is None:
            raise EventShapeError(f"{what} has no delta")
        kind = delta.get("type")
        if kind == "text_delta":
            text = field(delta, "text", str, f"{what}.delta") or ""
            if block.get("type") != "text":
                raise EventShapeError(f"{what} sends text to a {block.get('type')} block")
            block["text"] += text
            if text:
                self._emit(ReplyDelta(text=text))
        elif kind == "input_json_delta":
            piece = field(delta, "partial_json", str, f"{what}.delta") or ""
            pieces = self._json.get(index)
            if pieces is None:
                raise EventShapeError(f"{what} sends input JSON to a {block.get('type')} block")
            pieces.append(piece)
            if piece:
                self._emit(ReplyDelta(tool_call_index=self._call_positions[index], arguments=piece))

    def _block_stop(self, index: int) -> None:
        """Set a tool_use block's input from its partial JSON (left as the start gave it when
        no piece came); text that does not parse is kept for ``argsText``."""
        pieces = self._json.pop(index, None)
        if not pieces or index not in self._blocks:
            return
        text = "".join(pieces)
        if not text:
            return
        block = self._blocks[index]
        try:
            block["input"] = load_json(text)
        except ValueError:
            block.pop("input", None)
            block["partial_json"] = text

    def _emit(self, delta: ReplyDelta) -> None:
        if self._sink is not None:
            self._sink(delta)
