"""A support agent with two typed tools, on the built-in scripted model (no endpoint needed).

    python examples/support_agent.py [DATABASE]

Run it again and the conversation goes on: the agent is standing, its turns are on disk.
``openai_compatible.py`` runs the same agent against a real model.
"""

from __future__ import annotations

import re
import sys
import zlib
from typing import Annotated, Literal

import anyio
import msgspec

import afp_runtime as afp

SYSTEM_PROMPT = "You are the order desk. Look orders up with your tools before answering."


class Order(msgspec.Struct):
    """An order as the shop's database holds it."""

    order_id: str
    status: Literal["packed", "shipped", "delivered"]
    total_cents: int


@afp.tool(idempotent=True, parallel_safe=True)
def lookup_order(order_id: Annotated[str, msgspec.Meta(pattern=r"^\d+$")]) -> Order:
    """Look an order up by its id.

    Args:
        order_id: the order's number, digits only.
    """
    seed = zlib.crc32(order_id.encode())
    states: tuple[Literal["packed", "shipped", "delivered"], ...] = (
        "packed",
        "shipped",
        "delivered",
    )
    return Order(order_id=order_id, status=states[seed % 3], total_cents=1_000 + seed % 9_000)


@afp.tool(idempotent=True, parallel_safe=True)
async def refund_window(order_id: str, days: int = 30) -> str:
    """Say until when an order can still be refunded.

    Args:
        order_id: the order's number.
        days: the shop's refund window in days.
    """
    return f"Order {order_id} can be refunded within {days} days of delivery."


TOOLS = [lookup_order, refund_window]


def scripted_support(request: afp.ModelRequest, call_number: int) -> afp.ModelReply:
    """The scripted model: look the order up with both tools, then answer from the results."""
    person = next(m for m in reversed(request.messages) if m.role == "user")
    after = request.messages[request.messages.index(person) + 1 :]
    results = [m.content for m in after if m.role == "tool"]
    if not results:
        found = re.search(r"\d+", person.content)
        order_id = found.group(0) if found else "0"
        return afp.ModelReply(
            content="",
            tool_calls=(
                afp.ToolCall(
                    id=f"c{call_number}a", name="lookup_order", args={"order_id": order_id}
                ),
                afp.ToolCall(
                    id=f"c{call_number}b", name="refund_window", args={"order_id": order_id}
                ),
            ),
            stop_reason="tool-calls",
        )
    return afp.ModelReply(content="Here is what I found: " + " ".join(results), stop_reason="end")


def support_agent(model: afp.Model) -> afp.Agent:
    """The support agent on any model adapter."""
    return afp.Agent(
        "support",
        model,
        tools=TOOLS,
        system_prompt=SYSTEM_PROMPT,
        window=afp.sliding_window(keep_recent_turns=6),
    )


async def main(database: str) -> None:
    agent = support_agent(afp.ScriptedModel(scripted_support))
    async with afp.open(database) as store:
        for question in ("Where is order 1042?", "And order 2210?"):
            result = await store.run(agent, question)
            print(f"> {question}\n{result.status}: {result.answer}")
        runs = await store.runs(agent)
        print(f"{len(runs)} runs on {store.path}; the latest is {runs[-1].run_id}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "support.db")
