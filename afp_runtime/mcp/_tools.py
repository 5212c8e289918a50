"""A listed MCP tool as one of the agent's tools, and a call's result as its observation
(docs/mcp.md#tools-and-names, docs/mcp.md#annotations-and-durability, docs/mcp.md#results).

Works on the SDK's values by their attributes; the SDK itself is imported only where a
connection is opened.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.errors import McpToolError, ToolDefinitionError
from afp_runtime.mcp._servers import McpServer
from afp_runtime.tools import Tool, ToolContext

__all__ = ["CallFn", "as_tool", "observation"]

log = get_logger()

CallFn = Callable[[str, dict[str, Any], ToolContext], Awaitable[Any]]
"""Calls the server's tool by its listed name with the arguments; the SDK's result."""

_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]")
_NAME_LIMIT = 64


def tool_name(server: McpServer, listed: str) -> str | None:
    """The agent's name for the server's tool ``listed``: the prefix, then the listed name with
    every character a tool name may not hold as ``_``; None when that is longer than 64."""
    name = server.tool_prefix + _NOT_A_NAME.sub("_", listed)
    return name if 0 < len(name) <= _NAME_LIMIT else None


def as_tool(server: McpServer, listed: Any, call: CallFn) -> Tool | None:
    """The agent's tool for one tool the server listed, or None (logged, naming the server and
    the tool) when it cannot be one: its name too long, its schema not a usable object schema."""
    listed_name = str(listed.name)
    name = tool_name(server, listed_name)
    if name is None:
        log.warning(
            "mcp tool left out: its name is too long with the prefix",
            server=server.name,
            tool=listed_name,
        )
        return None
    hints = listed.annotations
    read_only = _hint(hints, "read_only_hint") is True
    # MCP's defaults: a tool not read-only is destructive unless it says it is not, and not
    # idempotent unless it says it is.
    destructive = not read_only and _hint(hints, "destructive_hint") is not False
    idempotent = read_only or _hint(hints, "idempotent_hint") is True
    own = server.tools.get(listed_name)

    def chosen(option: str, suggested: Any) -> Any:
        value = getattr(own, option) if own is not None else None
        return suggested if value is None else value

    async def run(args: Mapping[str, Any], ctx: ToolContext) -> Any:
        result = await call(listed_name, dict(args), ctx)
        return observation(server, listed_name, result)

    description = listed.description or getattr(listed, "title", None) or ""
    # The result cap is the Tool's own default unless the tool's option sets one.
    cap: dict[str, Any] = (
        {"max_result_chars": own.max_result_chars} if own and own.max_result_chars else {}
    )
    try:
        return Tool(
            name,
            str(description),
            dict(listed.input_schema or {"type": "object"}),
            run,
            idempotent=chosen("idempotent", idempotent),
            parallel_safe=chosen("parallel_safe", read_only),
            check_in=chosen("check_in", server.check_in_destructive and destructive),
            timeout_s=chosen("timeout_s", server.timeout_s),
            **cap,
        )
    except ToolDefinitionError as exc:
        log.warning(
            "mcp tool left out: it is not a usable tool",
            server=server.name,
            tool=listed_name,
            error=str(exc),
        )
        return None


def _hint(hints: Any, name: str) -> Any:
    return None if hints is None else getattr(hints, name, None)


def observation(server: McpServer, tool: str, result: Any) -> str | None:
    """What the model reads of a call's result: the structured content as JSON when there is
    one, else the text blocks one after the other, then a note for each block that is not text
    (its kind and size, never its bytes).

    Raises:
        McpToolError: the result is an error (``isError``); its text is the message.
    """
    parts: list[str] = []
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        parts.append(msgspec.json.encode(structured).decode())
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            if structured is None:
                parts.append(str(block.text))
        else:
            parts.append(_note(kind, block))
    text = "\n".join(parts)
    if getattr(result, "is_error", False):
        raise McpToolError(
            f"{tool} on MCP server {server.name!r} answered with an error: "
            + (text or "(no message)"),
            server=server.name,
            tool=tool,
        )
    return text or None


def _note(kind: str, block: Any) -> str:
    if kind in ("image", "audio"):
        size = _decoded_size(getattr(block, "data", ""))
        return f"[{kind} {block.mime_type}, {size:,} bytes, not shown]"
    if kind == "resource":
        resource = block.resource
        mime = getattr(resource, "mime_type", None) or "no type"
        text = getattr(resource, "text", None)
        amount = (
            f"{len(text):,} characters"
            if text is not None
            else f"{_decoded_size(getattr(resource, 'blob', '')):,} bytes"
        )
        return f"[resource {resource.uri} ({mime}), {amount}, not shown]"
    if kind == "resource_link":
        return f"[resource link {block.uri} ({block.name})]"
    return f"[{kind or 'unknown'} content, not shown]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError, TypeError):
        return len(data)
