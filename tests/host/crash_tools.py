"""Tools for the host's subprocess tests, importable by an ``afp serve`` child process.

``RECORDED_STATUS`` stands in for the demo's ``shipping_status`` but is NOT idempotent: each
invocation appends ``agent_id tool_call_id`` to the file named by ``AFP_TEST_INVOCATIONS``
before it answers, so a test can see whether any call ran twice. ``SLEEPY_STATUS`` is the
demo's idempotent tool after a short sleep (``AFP_TEST_TOOL_SLEEP_S``). ``SLOW_STATUS`` is the same
answer after ``AFP_TEST_TOOL_SLEEP_S`` seconds on the call's clock, noting ``start`` and
``end`` lines in ``AFP_TEST_INVOCATIONS``. ``streaming_script`` is the demo's script streamed
three characters a fragment, each fragment noted in ``AFP_TEST_FRAGMENTS``; a stream of the kind
named by ``AFP_TEST_STREAM_HOLD`` (``tools`` or ``answer``) stops for good after four fragments,
so a test kills the process in the middle of it.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

import anyio

from afp_runtime.demo import demo_script, shipping_status
from afp_runtime.messages import ModelRequest
from afp_runtime.models import StreamedReply
from afp_runtime.tools import Tool, ToolContext

_SCHEMA = {
    "type": "object",
    "properties": {"orderId": {"type": "string", "pattern": "^[0-9]+$"}},
    "required": ["orderId"],
    "additionalProperties": False,
}


def _append(line: str, variable: str = "AFP_TEST_INVOCATIONS") -> None:
    fd = os.open(os.environ[variable], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


async def _recorded(args: Mapping[str, Any], ctx: ToolContext) -> str:
    await anyio.to_thread.run_sync(_append, f"{ctx.agent_id} {ctx.tool_call_id}")
    await ctx.clock.sleep(float(os.environ.get("AFP_TEST_TOOL_SLEEP_S", "0.02")))
    return await shipping_status(args, ctx)


async def _sleepy(args: Mapping[str, Any], ctx: ToolContext) -> str:
    await ctx.clock.sleep(float(os.environ.get("AFP_TEST_TOOL_SLEEP_S", "0.02")))
    return await shipping_status(args, ctx)


async def _slow(args: Mapping[str, Any], ctx: ToolContext) -> str:
    await anyio.to_thread.run_sync(_append, f"start {ctx.agent_id} {ctx.tool_call_id}")
    await ctx.clock.sleep(float(os.environ.get("AFP_TEST_TOOL_SLEEP_S", "1.0")))
    await anyio.to_thread.run_sync(_append, f"end {ctx.agent_id} {ctx.tool_call_id}")
    return await shipping_status(args, ctx)


def streaming_script(request: ModelRequest, call_number: int) -> StreamedReply:
    """``demo_script``'s reply in fragments of three characters; each fragment is noted as
    ``PID KIND INDEX`` (kind ``tools`` or ``answer``) before it goes out."""
    reply = demo_script(request, call_number)
    kind = "tools" if reply.tool_calls else "answer"
    hold = os.environ.get("AFP_TEST_STREAM_HOLD") == kind

    async def note(index: int) -> None:
        if hold and index == 4:
            await anyio.sleep_forever()  # four fragments out; the test kills the process here
        await anyio.to_thread.run_sync(
            _append, f"{os.getpid()} {kind} {index}", "AFP_TEST_FRAGMENTS"
        )

    return StreamedReply(reply=reply, sizes=(3,), pause=note)


RECORDED_STATUS = Tool(
    "shipping_status",
    "Report where an order's parcel is (records every invocation).",
    _SCHEMA,
    _recorded,
    idempotent=False,
)

SLEEPY_STATUS = Tool(
    "shipping_status",
    "Report where an order's parcel is (after a short sleep).",
    _SCHEMA,
    _sleepy,
    idempotent=True,
)

SLOW_STATUS = Tool(
    "shipping_status",
    "Report where an order's parcel is, slowly.",
    _SCHEMA,
    _slow,
    idempotent=False,
)


def agents_toml(
    agent_ids: list[str],
    *,
    special: str | Collection[str],
    special_tool: str,
    other_tool: str = "afp_runtime.demo:SHIPPING_STATUS",
) -> str:
    """An agents file: copies of the demo agent; ``special`` (one id or several) uses
    ``special_tool`` (a ref) for ``shipping_status``, the others ``other_tool``."""
    specials = {special} if isinstance(special, str) else set(special)
    parts = []
    for agent_id in agent_ids:
        status = special_tool if agent_id in specials else other_tool
        parts.append(
            f"""
[[agents]]
id = "{agent_id}"
systemPrompt = "You are the order desk. Look orders up with your tools before answering."
maxIterations = 6
durability = "sync"
keepLastToolResults = 2
maxRecoveries = 1000

[agents.model]
provider = "scripted"
model = "demo-scripted"
script = "afp_runtime.demo:demo_script"

[[agents.tools]]
ref = "afp_runtime.demo:LOOKUP_ORDER"

[[agents.tools]]
ref = "{status}"
"""
        )
    return "".join(parts)
