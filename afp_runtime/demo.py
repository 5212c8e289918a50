"""The demo standing agent: an order-desk assistant with two tools and a scripted model.

Everything here is deterministic, so the demo needs no model endpoint: the scripted model looks
up the order a person asks about, then answers from what its tools returned. ``configs/demo.toml``
refers to these names.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from typing import Any

from afp_runtime.messages import ModelReply, ModelRequest, ToolCall, Usage
from afp_runtime.tools import Tool, ToolContext, ToolFn

QUESTIONS = (
    "Where is order 1042?",
    "Can you also check order 2210?",
    "And order 3315 - has it shipped yet?",
    "Please look at order 4520 for me.",
)

_CARRIERS = ("Parcelway", "Northpost", "Swift Freight")
_STATES = ("packed", "in transit", "out for delivery", "delivered")


def _seed(order_id: str) -> int:
    return zlib.crc32(order_id.encode("utf-8"))


_PRODUCTS = (
    ("SKU-1101", "trail running shoes", 8_900),
    ("SKU-2240", "merino base layer", 6_450),
    ("SKU-3017", "insulated bottle", 2_900),
    ("SKU-4482", "headlamp 400lm", 3_990),
    ("SKU-5120", "rain shell jacket", 14_900),
)


async def lookup_order(args: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """An order's record (deterministic from its id)."""
    order_id = str(args["orderId"])
    seed = _seed(order_id)
    lines: list[dict[str, Any]] = [
        {"sku": sku, "name": name, "quantity": 1 + (seed >> i) % 2, "unitCents": cents}
        for i, (sku, name, cents) in enumerate(_PRODUCTS)
        if (seed >> (i + 3)) % 2
    ] or [{"sku": "SKU-3017", "name": "insulated bottle", "quantity": 1, "unitCents": 2_900}]
    return {
        "orderId": order_id,
        "customer": f"CUST-{seed % 9000 + 1000}",
        "placedOn": f"2026-11-{1 + seed % 28:02d}",
        "lines": lines,
        "totalCents": sum(line["quantity"] * line["unitCents"] for line in lines),
    }


async def shipping_status(args: Mapping[str, Any], ctx: ToolContext) -> str:
    """Where an order's parcel is (deterministic from its id)."""
    order_id = str(args["orderId"])
    seed = _seed(order_id)
    carrier = _CARRIERS[seed % len(_CARRIERS)]
    state = _STATES[(seed // 7) % len(_STATES)]
    tracking = f"{carrier[:2].upper()}{seed % 10**8:08d}"
    return f"Order {order_id}: {state} with {carrier}, tracking {tracking}."


_ORDER_SCHEMA = {
    "type": "object",
    "properties": {"orderId": {"type": "string", "pattern": "^[0-9]+$"}},
    "required": ["orderId"],
    "additionalProperties": False,
}


def _order_tool(name: str, description: str, fn: ToolFn) -> Tool:
    return Tool(name, description, _ORDER_SCHEMA, fn, idempotent=True, parallel_safe=True)


LOOKUP_ORDER = _order_tool("lookup_order", "Look up an order's record by its id.", lookup_order)
SHIPPING_STATUS = _order_tool(
    "shipping_status", "Report where an order's parcel is.", shipping_status
)


def demo_script(request: ModelRequest, call_number: int) -> ModelReply:
    """The demo's scripted model: look the order up, then answer from the tool results."""
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    turn = sum(1 for m in messages if m.role == "user")
    results = [m for m in messages[last_user + 1 :] if m.role == "tool"]
    usage = Usage(input=sum(len(m.content) for m in messages) // 4 + 20, output=24)
    if not results:
        found = re.search(r"\d+", messages[last_user].content)
        order_id = found.group(0) if found else "0"
        return ModelReply(
            content="",
            tool_calls=(
                ToolCall(id=f"t{turn}-order", name="lookup_order", args={"orderId": order_id}),
                ToolCall(id=f"t{turn}-ship", name="shipping_status", args={"orderId": order_id}),
            ),
            usage=usage,
            stop_reason="tool-calls",
        )
    status = next((m.content for m in results if m.tool_name == "shipping_status"), "")
    return ModelReply(
        content=f"Here is what I found. {status}".strip(),
        usage=usage,
        stop_reason="end",
    )
