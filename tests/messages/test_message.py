"""Messages, tool calls and usage: chars, validation at the boundary, and camelCase wire names."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.messages import Message, ToolCall, Usage, assistant, chars, tool_result, user

SURROGATE = "\ud800"


def _call(**fields: Any) -> ToolCall:
    """A valid tool call with ``fields`` overridden."""
    return ToolCall(**{"id": "c1", "name": "lookup", **fields})


class TestChars:
    """chars() counts Unicode code points of content, never bytes, UTF-16 units or tokens."""

    @pytest.mark.parametrize(
        ("content", "expected"),
        [
            pytest.param("", 0, id="empty"),
            pytest.param("e\u0301", 2, id="combining-mark"),
            pytest.param("é", 1, id="precomposed"),
            pytest.param("🐛", 1, id="emoji"),
            pytest.param("👩\u200d🔬", 3, id="zwj-sequence"),
            pytest.param("π ≈ 3.14159 — multibyte, and an emoji 🐛", 39, id="served-vector-6"),
        ],
    )
    def test_chars_counts_code_points(self, content: str, expected: int) -> None:
        """A message's chars are the code points of its content."""
        assert chars([Message(role="user", content=content)]) == expected

    def test_chars_sums_over_messages(self) -> None:
        """chars() of several messages is the sum of their contents' code points."""
        history = [user("hi"), assistant("🐛"), tool_result("c1", "lookup", "e\u0301")]
        assert chars(history) == 2 + 1 + 2

    def test_chars_of_no_messages_is_zero(self) -> None:
        """chars() of an empty history is 0."""
        assert chars([]) == 0

    def test_chars_ignore_tool_call_arguments(self) -> None:
        """Only content counts: tool-call arguments add no chars."""
        message = assistant("ab", (_call(args={"q": "a long argument"}),))
        assert chars([message]) == 2


class TestSurrogates:
    """A lone surrogate cannot be encoded as UTF-8, so every text field refuses one."""

    @pytest.mark.parametrize(
        ("build", "field"),
        [
            pytest.param(lambda: Message(role="user", content=SURROGATE), "content", id="content"),
            pytest.param(
                lambda: Message(role="tool", content="ok", tool_call_id=SURROGATE),
                "toolCallId",
                id="toolCallId",
            ),
            pytest.param(
                lambda: Message(role="tool", tool_call_id="c1", tool_name=SURROGATE),
                "toolName",
                id="toolName",
            ),
            pytest.param(
                lambda: Message(role="user", content="hi", injected_by=SURROGATE),
                "injectedBy",
                id="injectedBy",
            ),
            pytest.param(lambda: _call(id=SURROGATE), "toolCalls.id", id="call-id"),
            pytest.param(lambda: _call(name=SURROGATE), "toolCalls.name", id="call-name"),
            pytest.param(
                lambda: _call(args_text=SURROGATE), "toolCalls.argsText", id="call-argsText"
            ),
            pytest.param(
                lambda: _call(args={"q": "a" + SURROGATE}), "toolCalls.args.q", id="args-value"
            ),
            pytest.param(lambda: _call(args={SURROGATE: 1}), "toolCalls.args", id="args-key"),
        ],
    )
    def test_surrogate_is_refused_naming_the_field(
        self, build: Callable[[], object], field: str
    ) -> None:
        """A surrogate code point raises InvalidValue whose context names the field."""
        with pytest.raises(InvalidValue) as caught:
            build()
        assert caught.value.context["field"] == field
        assert field in str(caught.value)

    def test_surrogate_refusal_shows_the_value(self) -> None:
        """The content refusal carries the offending value for the error message."""
        with pytest.raises(InvalidValue) as caught:
            Message(role="user", content="x" + SURROGATE)
        assert "value" in caught.value.context


class TestNonFiniteArgs:
    """JSON cannot carry NaN or infinities, so tool-call args holding one are refused."""

    @pytest.mark.parametrize(
        "number", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "minus-inf"]
    )
    def test_non_finite_number_is_refused_naming_the_path(self, number: float) -> None:
        """A NaN or infinity in args raises InvalidValue naming the dotted path to it."""
        with pytest.raises(InvalidValue) as caught:
            _call(args={"limit": number})
        assert caught.value.context["field"] == "toolCalls.args.limit"
        assert "toolCalls.args.limit" in str(caught.value)

    def test_nested_non_finite_number_is_refused_naming_the_path(self) -> None:
        """A NaN deep inside lists and objects is named by its full path."""
        with pytest.raises(InvalidValue) as caught:
            _call(args={"a": [1, {"b": math.nan}]})
        assert caught.value.context["field"] == "toolCalls.args.a[1].b"

    def test_finite_floats_are_accepted(self) -> None:
        """Finite floats, however large or small, are ordinary JSON numbers."""
        call = _call(args={"big": 1.7976931348623157e308, "tiny": 5e-324, "neg": -0.0})
        assert call.args["big"] == 1.7976931348623157e308


class TestShapeRules:
    """Rules between fields of a message."""

    def test_tool_message_without_call_id_is_refused(self) -> None:
        """A tool message with no toolCallId raises InvalidValue naming toolCallId."""
        with pytest.raises(InvalidValue) as caught:
            Message(role="tool", content="ok", tool_name="lookup")
        assert caught.value.context["field"] == "toolCallId"

    def test_tool_message_with_empty_call_id_is_refused(self) -> None:
        """An empty toolCallId counts as missing on a tool message."""
        with pytest.raises(InvalidValue) as caught:
            Message(role="tool", content="ok", tool_call_id="")
        assert caught.value.context["field"] == "toolCallId"

    @pytest.mark.parametrize("role", ["system", "user", "tool"])
    def test_tool_calls_on_non_assistant_are_refused(self, role: str) -> None:
        """Only assistant messages may carry toolCalls; any other role raises InvalidValue."""
        with pytest.raises(InvalidValue) as caught:
            Message(
                role=role,  # type: ignore[arg-type]
                tool_call_id="c0",
                tool_calls=(_call(),),
            )
        assert caught.value.context["field"] == "toolCalls"

    def test_decoding_a_tool_message_without_call_id_is_refused(self) -> None:
        """Decoding wire JSON of a tool message that lacks toolCallId fails naming the field."""
        with pytest.raises(msgspec.ValidationError, match="toolCallId"):
            msgspec.json.decode(b'{"role":"tool","content":"ok"}', type=Message)


class TestUsage:
    """Usage holds non-negative int token counts and adds up."""

    @pytest.mark.parametrize("field", ["input", "output", "cache_read", "cache_write", "reasoning"])
    def test_negative_count_is_refused(self, field: str) -> None:
        """A negative count raises InvalidValue naming the field."""
        with pytest.raises(InvalidValue) as caught:
            Usage(**{field: -1})
        assert caught.value.context["field"] == field

    @pytest.mark.parametrize("field", ["input", "output", "cache_read", "cache_write", "reasoning"])
    def test_bool_count_is_refused(self, field: str) -> None:
        """True is an int to Python but not a token count: it raises InvalidValue."""
        with pytest.raises(InvalidValue) as caught:
            Usage(**{field: True})
        assert caught.value.context["field"] == field

    @pytest.mark.parametrize("field", ["input", "output", "cache_read", "cache_write", "reasoning"])
    def test_a_count_beyond_2_to_the_53_is_refused(self, field: str) -> None:
        """The largest count is 2**53 - 1 (exact in every JSON reader); one more raises
        InvalidValue naming the field, where it used to fail the commit of the reply."""
        Usage(**{field: 2**53 - 1})
        with pytest.raises(InvalidValue) as caught:
            Usage(**{field: 2**53})
        assert caught.value.context["field"] == field

    def test_float_count_is_refused(self) -> None:
        """A float count, even an integral one, raises InvalidValue."""
        with pytest.raises(InvalidValue):
            Usage(input=3.0)  # type: ignore[arg-type]

    def test_usages_add_field_by_field(self) -> None:
        """Adding usages sums every count; an optional count absent on one side counts as 0."""
        total = Usage(input=10, output=2, cache_read=4) + Usage(input=5, output=1, reasoning=7)
        assert total == Usage(input=15, output=3, cache_read=4, reasoning=7)

    def test_optional_counts_absent_on_both_sides_stay_absent(self) -> None:
        """An optional count that neither side reports stays None, not 0."""
        total = Usage(input=1) + Usage(output=1)
        assert total.cache_read is None
        assert total.cache_write is None
        assert total.reasoning is None

    def test_zero_usage_is_the_identity(self) -> None:
        """Adding an empty Usage changes nothing."""
        usage = Usage(input=3, output=4, cache_write=1)
        assert usage + Usage() == usage

    def test_usage_wire_names_are_camel_case(self) -> None:
        """Usage encodes cacheRead / cacheWrite and omits absent counts."""
        wire = msgspec.json.decode(msgspec.json.encode(Usage(input=1, cache_read=2)))
        assert wire == {"input": 1, "cacheRead": 2}


class TestWire:
    """Wire names are camelCase; absent optional fields are omitted, never null."""

    def test_every_field_has_its_camel_case_wire_name(self) -> None:
        """A message with every field set encodes toolCalls, toolCallId, toolName and markers."""
        message = Message(
            role="assistant",
            content="x",
            tool_calls=(_call(args={"q": 1}, args_text="q=1"),),
            tool_call_id="c0",
            tool_name="t",
            not_dispatched=True,
            injected_by="host",
        )
        wire = msgspec.json.decode(msgspec.json.encode(message))
        assert set(wire) == {
            "role",
            "content",
            "toolCalls",
            "toolCallId",
            "toolName",
            "notDispatched",
            "injectedBy",
        }
        assert set(wire["toolCalls"][0]) == {"id", "name", "args", "argsText"}

    def test_tool_message_wire_shape(self) -> None:
        """A tool result encodes toolCallId, toolName and notDispatched in camelCase."""
        message = tool_result("c1", "lookup", "ok", not_dispatched=True)
        assert msgspec.json.decode(msgspec.json.encode(message)) == {
            "role": "tool",
            "content": "ok",
            "toolCallId": "c1",
            "toolName": "lookup",
            "notDispatched": True,
        }

    def test_absent_optional_fields_are_omitted(self) -> None:
        """A plain user message encodes only role and content: no nulls, no empty lists."""
        assert msgspec.json.encode(user("hi")) == b'{"role":"user","content":"hi"}'

    def test_parsed_call_has_no_args_text(self) -> None:
        """A tool call whose args parsed carries no argsText key at all."""
        wire = msgspec.json.decode(msgspec.json.encode(_call(args={"q": None})))
        assert wire == {"id": "c1", "name": "lookup", "args": {"q": None}}

    def test_msgpack_omits_absent_fields_too(self) -> None:
        """MessagePack encoding omits absent optional fields just like JSON."""
        wire = msgspec.msgpack.decode(msgspec.msgpack.encode(user("hi")))
        assert wire == {"role": "user", "content": "hi"}

    def test_wire_json_decodes_back_to_the_message(self) -> None:
        """camelCase wire JSON decodes to the same message, markers included."""
        message = Message(
            role="tool", content="ok", tool_call_id="c1", tool_name="t", injected_by="host"
        )
        assert msgspec.json.decode(msgspec.json.encode(message), type=Message) == message
