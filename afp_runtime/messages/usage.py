"""Token usage of model calls, and the request and reply values the Model port exchanges."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from afp_runtime.errors import InvalidValue
from afp_runtime.messages.message import Message, ToolCall

MAX_TOKEN_COUNT = 2**53 - 1
"""The largest token count a usage field holds: an exact number in every JSON reader (a browser's
included), far beyond any real call's; a larger count is a broken reply."""


class Usage(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Token counts of one or more model calls (ints from 0 to ``MAX_TOKEN_COUNT``).

    Attributes:
        input: prompt tokens.
        output: completion tokens.
        cache_read: prompt tokens served from a provider cache (wire ``cacheRead``).
        cache_write: prompt tokens written to a provider cache (wire ``cacheWrite``).
        reasoning: reasoning tokens, where the provider reports them.
    """

    input: int = 0
    output: int = 0
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write", "reasoning"):
            value = getattr(self, name)
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 0 <= value <= MAX_TOKEN_COUNT
            ):
                raise InvalidValue(
                    f"usage.{name} must be an int from 0 to 2**53 - 1, not {value!r}", field=name
                )

    def __add__(self, other: Usage) -> Usage:
        def opt(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=opt(self.cache_read, other.cache_read),
            cache_write=opt(self.cache_write, other.cache_write),
            reasoning=opt(self.reasoning, other.reasoning),
        )


class Cost(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What model calls cost (docs/cost.md#figures): the sum over the calls whose cost is known,
    and how many calls' cost is unknown (no usage reported, or no price for the model).

    Attributes:
        amount: the known calls' cost, in the pricing table's currency.
        priced: calls whose cost is known.
        unknown: calls whose cost is unknown; while above 0, ``total`` is None, never a sum
            that counts them as free.
    """

    amount: float = 0.0
    priced: int = 0
    unknown: int = 0

    @property
    def total(self) -> float | None:
        """The cost of every call, or None when one of them is unknown."""
        return None if self.unknown else self.amount

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            amount=self.amount + other.amount,
            priced=self.priced + other.priced,
            unknown=self.unknown + other.unknown,
        )


class ToolSchema(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A tool as the model is told about it: name, description, JSON object schema."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class ToolChoice(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """How the model may use tools: ``auto``, ``none``, ``required`` or one named ``tool``."""

    type: Literal["auto", "none", "required", "tool"]
    name: str | None = None


class ModelParams(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Sampling dials handed to the adapter; a key is present only when set."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    tool_choice: ToolChoice | None = None
    reasoning_budget: int | None = None


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Everything one model call sends, before any provider encoding.

    Attributes:
        model: the model id sent on the wire.
        system: the joined system text ('' for none).
        messages: the as-sent window plus request-only lines as user messages.
        tools: the served tool schemas ('()' when tools are withheld).
        forced: the name of a forced answer tool, if any.
        params: sampling dials.
    """

    model: str
    system: str = ""
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolSchema, ...] = ()
    forced: str | None = None
    params: ModelParams = msgspec.field(default_factory=ModelParams)


StopReason = Literal["end", "tool-calls", "max-tokens", "stop-sequence", "other"]


class ModelReply(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What the model answered: text, tool calls, usage and why it stopped.

    ``usage`` is None when the provider reported no token counts (token strategies then stand
    down rather than act on a stale reading, docs/window.md#measurement).
    """

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    stop_reason: StopReason = "end"

    def as_message(self) -> Message:
        """The assistant message this reply adds to history."""
        return Message(role="assistant", content=self.content, tool_calls=self.tool_calls)
