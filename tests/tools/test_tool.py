"""Tool declarations: validation at construction, schemas, the decorator and the context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import pytest

from afp_runtime.errors import ToolDefinitionError
from afp_runtime.messages import ToolSchema
from afp_runtime.tools import RESERVED_ARGUMENTS, Tool, ToolContext, schema_for, tool

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"host": {"type": "string"}},
    "required": ["host"],
}


async def ping(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return f"pong {args['host']}"


def make(**overrides: Any) -> Tool:
    fields: dict[str, Any] = {
        "name": "ping",
        "description": "Ping a host.",
        "input_schema": SCHEMA,
        "fn": ping,
    }
    fields.update(overrides)
    return Tool(
        fields.pop("name"),
        fields.pop("description"),
        fields.pop("input_schema"),
        fields.pop("fn"),
        **fields,
    )


class TestDeclaration:
    def test_valid_declaration_keeps_its_options(self) -> None:
        """A valid declaration keeps every option and knows its function is async."""
        tool = make(idempotent=True, parallel_safe=True, timeout_s=5, max_result_chars=10)
        assert (tool.idempotent, tool.parallel_safe, tool.timeout_s, tool.max_result_chars) == (
            True,
            True,
            5,
            10,
        )
        assert tool.is_async
        assert not tool.check_in

    def test_declaration_is_frozen(self) -> None:
        """A declaration cannot be changed after it is made."""
        tool = make()
        with pytest.raises(AttributeError):
            tool.timeout_s = 1.0  # type: ignore[misc]

    def test_schema_is_a_private_copy(self) -> None:
        """Editing the schema dict passed in does not change the declared tool."""
        schema = {"type": "object", "properties": {"a": {"type": "string"}}}
        tool = make(input_schema=schema)
        schema["properties"]["a"]["type"] = "integer"
        assert tool.input_schema["properties"]["a"]["type"] == "string"

    @pytest.mark.parametrize("name", ["", "has space", "dot.name", "x" * 65, "é", "ping\n"])
    def test_bad_name_is_refused(self, name: str) -> None:
        """A name outside ^[A-Za-z0-9_-]{1,64}$ is refused, naming the property `name`."""
        with pytest.raises(ToolDefinitionError) as caught:
            make(name=name)
        assert caught.value.context["property"] == "name"

    def test_longest_name_is_accepted(self) -> None:
        """A 64-character name of letters, digits, '_' and '-' is accepted."""
        assert make(name="a-_9" * 16).name == "a-_9" * 16

    @pytest.mark.parametrize("reserved", RESERVED_ARGUMENTS)
    def test_reserved_property_is_refused(self, reserved: str) -> None:
        """A reserved argument among the properties is refused, naming the tool and property."""
        schema = {"type": "object", "properties": {reserved: {"type": "string"}}}
        with pytest.raises(ToolDefinitionError) as caught:
            make(input_schema=schema)
        assert caught.value.context == {"tool": "ping", "property": reserved}
        assert reserved in str(caught.value)
        assert "ping" in str(caught.value)

    def test_reserved_names_are_findings_and_time_quote(self) -> None:
        """The reserved argument names are exactly _findings and _timeQuote."""
        assert set(RESERVED_ARGUMENTS) == {"_findings", "_timeQuote"}

    def test_reserved_property_in_required_is_refused(self) -> None:
        """A reserved argument listed only under `required` is refused too."""
        schema = {"type": "object", "properties": {}, "required": ["_timeQuote"]}
        with pytest.raises(ToolDefinitionError, match="_timeQuote"):
            make(input_schema=schema)

    @pytest.mark.parametrize(
        "schema",
        [
            {"type": "array", "items": {"type": "string"}},
            {"properties": {"a": {"type": "string"}}},
            {"type": ["object", "null"]},
            ["type", "object"],
        ],
    )
    def test_non_object_schema_is_refused(self, schema: Any) -> None:
        """A schema whose root is not `type: object` is refused, naming `input_schema`."""
        with pytest.raises(ToolDefinitionError) as caught:
            make(input_schema=schema)
        assert caught.value.context["property"] == "input_schema"

    def test_malformed_subset_keyword_is_refused(self) -> None:
        """A malformed keyword of the subset is refused with its path in the schema."""
        schema = {"type": "object", "properties": {"n": {"type": "int", "minimum": "0"}}}
        with pytest.raises(ToolDefinitionError) as caught:
            make(input_schema=schema)
        text = str(caught.value)
        assert "properties.n.type" in text
        assert "properties.n.minimum" in text

    def test_dangling_ref_is_refused(self) -> None:
        """A `$ref` that points at nothing in the schema is refused."""
        schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}
        with pytest.raises(ToolDefinitionError, match="points at nothing"):
            make(input_schema=schema)

    def test_non_json_schema_is_refused(self) -> None:
        """A schema holding a value JSON cannot carry is refused."""
        schema = {"type": "object", "properties": {"a": {"const": object()}}}
        with pytest.raises(ToolDefinitionError, match="not JSON"):
            make(input_schema=schema)

    @pytest.mark.parametrize("cap", [True, False, 0, -1, 1.5, "10"])
    def test_bad_max_result_chars_is_refused(self, cap: Any) -> None:
        """max_result_chars must be an int >= 1, and a bool is not an int here."""
        with pytest.raises(ToolDefinitionError) as caught:
            make(max_result_chars=cap)
        assert caught.value.context["property"] == "max_result_chars"

    @pytest.mark.parametrize("timeout", [0, -1.0, float("inf"), float("nan"), True, "5"])
    def test_bad_timeout_is_refused(self, timeout: Any) -> None:
        """timeout_s must be a finite number of seconds above zero."""
        with pytest.raises(ToolDefinitionError) as caught:
            make(timeout_s=timeout)
        assert caught.value.context["property"] == "timeout_s"

    def test_fn_must_accept_args_and_ctx(self) -> None:
        """A function that cannot take (args, ctx) is refused at declaration."""

        async def lonely(args: Mapping[str, Any]) -> str:
            return ""

        with pytest.raises(ToolDefinitionError) as caught:
            make(fn=lonely)
        assert caught.value.context["property"] == "fn"

    def test_fn_must_be_callable(self) -> None:
        """A function that is not callable is refused."""
        with pytest.raises(ToolDefinitionError):
            make(fn="not a function")

    def test_plain_def_is_not_async(self) -> None:
        """A plain def is recognised as sync (it will run in a worker thread)."""

        def local(args: Mapping[str, Any], ctx: ToolContext) -> str:
            return "x"

        assert not make(fn=local).is_async

    def test_async_callable_object_is_async(self) -> None:
        """An object whose __call__ is a coroutine function is recognised as async."""

        class Caller:
            async def __call__(self, args: Mapping[str, Any], ctx: ToolContext) -> str:
                return "x"

        assert make(fn=Caller()).is_async

    def test_flags_must_be_bools(self) -> None:
        """A flag given as a non-bool is refused, naming the flag."""
        with pytest.raises(ToolDefinitionError) as caught:
            make(parallel_safe=1)
        assert caught.value.context["property"] == "parallel_safe"

    def test_schema_gives_the_model_view(self) -> None:
        """schema() gives the name, description and input schema as a ToolSchema."""
        assert make().schema() == ToolSchema(
            name="ping", description="Ping a host.", input_schema=SCHEMA
        )


class Target(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """Where to connect."""

    host_name: str
    port: int = 22


class Job(msgspec.Struct):
    targets: list[Target]
    label: str | None = None


class TestStructSchemas:
    def test_schema_for_lifts_the_struct_to_the_root(self) -> None:
        """schema_for gives an object schema with the struct's (wire) properties at its root."""
        schema = schema_for(Target)
        assert schema["type"] == "object"
        assert set(schema["properties"]) == {"hostName", "port"}
        assert schema["required"] == ["hostName"]

    def test_schema_for_keeps_nested_definitions(self) -> None:
        """Nested structs stay reachable through $defs."""
        schema = schema_for(Job)
        assert schema["properties"]["targets"]["items"] == {"$ref": "#/$defs/Target"}
        assert "Target" in schema["$defs"]

    def test_schema_for_refuses_non_structs(self) -> None:
        """schema_for refuses a type that is not a msgspec Struct."""
        with pytest.raises(ToolDefinitionError):
            schema_for(dict)  # type: ignore[arg-type]

    def test_schema_for_refuses_array_like_structs(self) -> None:
        """A struct encoded as an array cannot describe tool arguments."""

        class Pair(msgspec.Struct, array_like=True):
            a: int
            b: int

        with pytest.raises(ToolDefinitionError, match="JSON object"):
            schema_for(Pair)

    def test_from_struct_derives_the_schema(self) -> None:
        """Tool.from_struct declares the struct's schema and remembers the struct type."""

        async def connect(args: Target, ctx: ToolContext) -> str:
            return args.host_name

        tool = Tool.from_struct("connect", "Connect.", Target, connect, parallel_safe=True)
        assert tool.input_schema == schema_for(Target)
        assert tool.args_type is Target
        assert tool.parallel_safe


class TestDecorator:
    def test_decorator_uses_name_and_docstring(self) -> None:
        """tool(input_schema=...) takes the name from the function and the description from its
        docstring."""

        @tool(input_schema=SCHEMA, timeout_s=3)
        async def lookup(args: Mapping[str, Any], ctx: ToolContext) -> str:
            """Look a host up."""
            return ""

        assert (lookup.name, lookup.description) == ("lookup", "Look a host up.")
        assert lookup.timeout_s == 3
        assert lookup.input_schema == SCHEMA

    def test_decorator_over_a_function_without_parameters(self) -> None:
        """A function with no parameters takes an object with no properties."""

        @tool(name="now")
        def current(ctx: ToolContext) -> int:
            return ctx.clock.now_ms()

        assert current.input_schema == {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        }
        assert current.name == "now"

    def test_decorator_with_args_type(self) -> None:
        """Given args_type, the decorator declares a struct-decoding tool."""

        @tool(args_type=Target)
        async def connect(args: Target, ctx: ToolContext) -> str:
            return args.host_name

        assert connect.args_type is Target
        assert connect.input_schema == schema_for(Target)


class TestContext:
    def test_progress_goes_to_the_sink(self, clock: Any) -> None:
        """progress() hands each payload to the context's sink, in order."""
        seen: list[Any] = []
        ctx = ToolContext(
            tool_call_id="c1",
            tool_name="ping",
            agent_id="ops",
            run_id="run-1",
            turn=1,
            iteration=2,
            clock=clock,
            on_progress=seen.append,
        )
        ctx.progress({"done": 1})
        ctx.progress({"done": 2})
        assert seen == [{"done": 1}, {"done": 2}]
