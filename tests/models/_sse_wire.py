"""The providers' streaming wire formats, written from the reply body the same reply has
unstreamed, for the local server of the streaming tests.

``openai_events`` and ``anthropic_events`` give the events a provider sends for a body (text
and arguments split by ``split``); ``sse`` writes events as server-sent-event bytes; ``cut``
splits bytes at chosen offsets.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

Split = Callable[[str], list[str]]


def in_threes(text: str) -> list[str]:
    """A plain split: pieces of three characters."""
    return [text[i : i + 3] for i in range(0, len(text), 3)] or [""]


def dump(value: Any) -> str:
    """JSON on one line; a lone surrogate stays a ``\\udXXX`` escape once encoded (``sse``)."""
    return json.dumps(value, ensure_ascii=False)


def sse(events: Iterable[tuple[str | None, str]], *, eol: str | Sequence[str] = "\n") -> bytes:
    """Server-sent-event bytes: ``event:`` (when named) and ``data:`` lines, a blank line after
    each; ``eol`` is the line ending, or one per event in turn."""
    out: list[str] = []
    for i, (name, data) in enumerate(events):
        end = eol if isinstance(eol, str) else eol[i % len(eol)]
        if name is not None:
            out.append(f"event: {name}{end}")
        out.append(f"data: {data}{end}{end}")
    # backslashreplace writes a lone surrogate as the JSON escape it came from.
    return "".join(out).encode("utf-8", "backslashreplace")


def cut(data: bytes, offsets: Iterable[int]) -> list[bytes]:
    """``data`` split at each offset (duplicates and out-of-range ones ignored)."""
    points = sorted({o for o in offsets if 0 < o < len(data)})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def openai_events(body: dict[str, Any], split: Split = in_threes) -> list[tuple[str | None, str]]:
    """The chunks OpenAI streams for a chat-completions ``body``, then ``[DONE]``."""
    choice = body["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return None, dump(
            {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": choices}
        )

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in split(message.get("content") or "") if piece]
    if message.get("refusal"):
        events += [chunk({"refusal": piece}) for piece in split(message["refusal"])]
    for index, call in enumerate(message.get("tool_calls") or ()):
        head = {"index": index, "type": "function", "function": {"name": call["function"]["name"]}}
        if "id" in call:
            head["id"] = call["id"]
        arguments = call["function"].get("arguments")
        pieces = split(arguments) if isinstance(arguments, str) else [arguments]
        head["function"]["arguments"] = pieces[0]
        events.append(chunk({"tool_calls": [head]}))
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces[1:]
        ]
    events.append(chunk({}, choice.get("finish_reason")))
    if body.get("usage") is not None:
        events.append((None, dump({"id": "chatcmpl-1", "choices": [], "usage": body["usage"]})))
    events.append((None, "[DONE]"))
    return events


def anthropic_events(
    body: dict[str, Any], split: Split = in_threes
) -> list[tuple[str | None, str]]:
    """The events Anthropic streams for a Messages ``body``, ``message_start`` to
    ``message_stop`` (a ``ping`` after the start, as the API sends)."""

    def event(name: str, **data: Any) -> tuple[str, str]:
        return name, dump({"type": name, **data})

    usage = dict(body.get("usage") or {})
    output = usage.pop("output_tokens", None)
    start = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    start["stop_reason"] = None
    if body.get("usage") is not None:
        # The start counts one output token; message_delta gives the final count.
        start["usage"] = {**usage, **({"output_tokens": 1} if output is not None else {})}
    events = [event("message_start", message=start), event("ping")]
    for index, block in enumerate(body["content"]):
        if block["type"] == "text":
            events.append(
                event(
                    "content_block_start", index=index, content_block={"type": "text", "text": ""}
                )
            )
            events += [
                event("content_block_delta", index=index, delta={"type": "text_delta", "text": p})
                for p in split(block["text"])
            ]
        elif block["type"] == "tool_use":
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            events.append(event("content_block_start", index=index, content_block=head))
            pieces = split(dump(block["input"])) if block.get("input") is not None else []
            events += [
                event(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": p},
                )
                for p in pieces
            ]
        else:
            events.append(event("content_block_start", index=index, content_block=block))
        events.append(event("content_block_stop", index=index))
    final_usage = {"output_tokens": output} if output is not None else None
    events.append(
        event("message_delta", delta={"stop_reason": body.get("stop_reason")}, usage=final_usage)
    )
    events.append(event("message_stop"))
    return events
