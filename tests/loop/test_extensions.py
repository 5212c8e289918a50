"""The loop's extension port: an extension's hooks are called at their named points and what
they return reaches the request, the tools and the delivered answer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

import afp_runtime as afp
from afp_runtime.extensions import At, Extension, Filed, Piece, RunExtension, RunStart
from afp_runtime.messages import Message, ToolCall, ToolSchema
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.tools import Tool, ToolOutcome

seen_args: list[dict[str, Any]] = []


@afp.tool(idempotent=True)
def lookup(order_id: str) -> str:
    """Look an order up."""
    seen_args.append({"order_id": order_id})
    return f"order {order_id} shipped"


class Marking(RunExtension):
    """Adds a system piece, a request line and a schema property; peels ``_mark`` off calls;
    notes each observation; signs the answer."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def serve(
        self, pieces: list[Piece], messages: tuple[Message, ...]
    ) -> tuple[list[Piece], tuple[Message, ...]]:
        self.log.append("serve")
        return [*pieces, {"slot": "mark", "source": "mark", "text": "MARK PIECE"}], messages

    def serve_tools(
        self, tools: Sequence[Tool], schemas: tuple[ToolSchema, ...], history: Sequence[Message]
    ) -> tuple[ToolSchema, ...]:
        return tuple(
            msgspec.structs.replace(
                s,
                input_schema={
                    **s.input_schema,
                    "properties": {**s.input_schema["properties"], "_mark": {"type": "string"}},
                },
            )
            for s in schemas
        )

    def request_lines(self) -> list[Piece]:
        return [{"role": "user", "reason": "mark", "text": "MARK LINE"}]

    def peel(
        self, calls: Sequence[ToolCall], at: At, history: Sequence[Message]
    ) -> tuple[tuple[ToolCall, ...], Filed]:
        self.log.append(f"peel turn={at.turn} iteration={at.iteration}")
        clean = tuple(
            msgspec.structs.replace(c, args={k: v for k, v in c.args.items() if k != "_mark"})
            for c in calls
        )
        return clean, Filed()

    def observed(self, outcome: ToolOutcome) -> ToolOutcome:
        return msgspec.structs.replace(outcome, content=f"{outcome.content} [marked]")

    def answer(self, content: str, at: At, history: Sequence[Message]) -> tuple[str, Filed]:
        self.log.append("answer")
        return f"{content} (signed)", Filed()


class MarkingExtension:
    """The extension an agent holds: one ``Marking`` per run."""

    name = "mark"

    def __init__(self) -> None:
        self.log: list[str] = []

    def shape(self) -> Any:
        return {"mark": 1}

    def start(self, run: RunStart) -> RunExtension:
        self.log.append(f"start {run.kind}")
        return Marking(self.log)


async def test_every_hook_reaches_the_turn(tmp_path: Path) -> None:
    """A custom extension's pieces, lines, schema, peeled argument, noted observation and signed
    answer show in what the model was sent, what the tool saw and what was delivered."""
    seen_args.clear()
    extension: Extension = MarkingExtension()
    model = afp.ScriptedModel(
        [tool_reply(call("c1", "lookup", order_id="7", _mark="x")), answer("Shipped.")]
    )
    agent = afp.Agent("marked", model, tools=[lookup], extensions=[extension])
    plain = afp.Agent("marked", afp.ScriptedModel([]), tools=[lookup])
    assert agent.fingerprint() != plain.fingerprint()
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "Where is order 7?")
    assert result.answer == "Shipped. (signed)"
    assert seen_args == [{"order_id": "7"}]
    first, second = model.requests
    assert "MARK PIECE" in first.system
    assert first.messages[-1].content == "MARK LINE"
    assert "_mark" in first.tools[0].input_schema["properties"]
    tool_message = next(m for m in second.messages if m.role == "tool")
    assert tool_message.content.endswith("[marked]")
    log = extension.log  # type: ignore[attr-defined]
    assert log == ["start initial", "serve", "peel turn=1 iteration=1", "serve", "answer"]


async def test_an_agent_without_extensions_serves_none_of_it(tmp_path: Path) -> None:
    """Without the extension the same turn sends no piece, no line and passes the argument on."""
    seen_args.clear()
    model = afp.ScriptedModel([tool_reply(call("c1", "lookup", order_id="7")), answer("Shipped.")])
    agent = afp.Agent("plain", model, tools=[lookup])
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "Where is order 7?")
    assert result.answer == "Shipped."
    first = model.requests[0]
    assert "MARK" not in first.system and all("MARK" not in m.content for m in first.messages)


class FailingSeed(RunExtension):
    async def seed(self, seed: Any) -> Any:
        raise RuntimeError("the clock source is gone")


class FailingSeedExtension:
    name = "flaky-clock"

    def shape(self) -> Any:
        return {"flaky-clock": 1}

    def start(self, run: RunStart) -> RunExtension:
        return FailingSeed()


async def test_an_extension_failing_to_seed_holds_the_turn_naming_it(tmp_path: Path) -> None:
    """An extension whose seed raises holds the turn at once under ``extension``, naming the
    extension and the error, and commits that; before anything of the turn was committed the
    message stayed queued and every pass failed the same way."""
    extension: Extension = FailingSeedExtension()
    agent = afp.Agent("clocked", afp.ScriptedModel([answer("never")]), extensions=[extension])
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "what time is it?")
        again = await store.work(agent)
    assert result.status == "held" and result.error_kind == "extension"
    assert again == []  # held for an operator: no pass retries it
    assert "flaky-clock" in (result.error or "") and "RuntimeError: the clock source is gone" in (
        result.error or ""
    )
