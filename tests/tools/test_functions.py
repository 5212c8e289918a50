"""Tools from plain functions: schema from type hints, descriptions from the docstring, typed
arguments, the context by annotation, and refusals at decoration time."""

from __future__ import annotations

import dataclasses
import enum
import threading
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

import msgspec
import pytest

from afp_runtime.errors import ToolDefinitionError
from afp_runtime.messages import ToolCall
from afp_runtime.tools import (
    PlannedCall,
    Tool,
    ToolContext,
    ToolOutcome,
    parse_docstring,
    plan_batch,
    plan_call,
    run_batch,
    tool,
)


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


@dataclasses.dataclass
class Place:
    city: str
    country: str = "NL"


class Window(msgspec.Struct):
    start: str
    end: str


class Limits(TypedDict):
    rows: int


def contexts(clock: Any) -> Any:
    def context_for(item: PlannedCall) -> ToolContext:
        return ToolContext(
            tool_call_id=item.call.id,
            tool_name=item.call.name,
            agent_id="ops",
            run_id="run-1",
            turn=1,
            iteration=1,
            clock=clock,
        )

    return context_for


async def run_one(clock: Any, declared: Tool, **args: Any) -> ToolOutcome:
    planned = plan_batch(
        [ToolCall(id="c1", name=declared.name, args=args)], {declared.name: declared}
    )
    outcomes = await run_batch(planned, context_for=contexts(clock), clock=clock)
    return outcomes[0]


class TestSchema:
    def test_hints_defaults_and_docstring_make_the_schema(self) -> None:
        """Types give each property, defaults make it optional, the docstring describes both."""

        @tool
        def forecast(city: str, days: int = 3) -> dict[str, Any]:
            """Forecast the weather of a city.

            Args:
                city: the city's name.
                days: how many days ahead,
                    at most a week.

            Returns:
                The forecast.
            """
            return {}

        assert isinstance(forecast, Tool)
        assert forecast.name == "forecast"
        assert forecast.description == "Forecast the weather of a city."
        assert forecast.input_schema == {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "the city's name."},
                "days": {
                    "type": "integer",
                    "default": 3,
                    "description": "how many days ahead, at most a week.",
                },
            },
            "required": ["city"],
            "additionalProperties": False,
        }
        shown = forecast.schema()
        assert (shown.name, shown.input_schema) == ("forecast", forecast.input_schema)

    def test_every_supported_kind_has_its_schema(self) -> None:
        """Literal, Enum, list, tuple, dict, unions, Struct, dataclass and TypedDict all map."""

        @tool
        def everything(
            mode: Literal["fast", "slow"],
            unit: Unit,
            tags: list[str],
            pair: tuple[int, str],
            counts: dict[str, int],
            maybe: float | None,
            place: Place,
            window: Window,
            limits: Limits,
            flag: bool = False,
            anything: Any = None,
        ) -> None:
            """Take one of each."""

        props = everything.input_schema["properties"]
        defs = everything.input_schema["$defs"]
        assert props["mode"] == {"enum": ["fast", "slow"]}
        assert defs["Unit"]["enum"] == ["celsius", "fahrenheit"]
        assert props["tags"] == {"type": "array", "items": {"type": "string"}}
        assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
        assert props["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
        assert props["maybe"] == {"anyOf": [{"type": "number"}, {"type": "null"}]}
        assert defs["Place"]["required"] == ["city"]
        assert defs["Window"]["required"] == ["start", "end"]
        assert defs["Limits"]["properties"] == {"rows": {"type": "integer"}}
        assert props["flag"] == {"type": "boolean", "default": False}
        assert sorted(everything.input_schema["required"]) == sorted(
            ["mode", "unit", "tags", "pair", "counts", "maybe", "place", "window", "limits"]
        )

    def test_annotated_meta_sets_constraints_and_wins_over_the_docstring(self) -> None:
        """``Annotated[..., msgspec.Meta(...)]`` gives bounds, patterns and the description."""

        @tool
        def page(
            n: Annotated[int, msgspec.Meta(ge=1, le=50, description="the page")],
            code: Annotated[str, msgspec.Meta(pattern="^[A-Z]{3}$")] = "EUR",
        ) -> str:
            """Fetch a page.

            Args:
                n: ignored, Meta says it.
                code: a currency code.
            """
            return ""

        props = page.input_schema["properties"]
        assert props["n"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 50,
            "description": "the page",
        }
        assert props["code"]["pattern"] == "^[A-Z]{3}$"
        assert props["code"]["description"] == "a currency code."

    def test_the_context_parameter_is_not_in_the_schema(self) -> None:
        """A parameter annotated ToolContext, wherever it sits, is left out of the schema."""

        @tool
        def first(ctx: ToolContext, query: str) -> str:
            """Search."""
            return query

        assert list(first.input_schema["properties"]) == ["query"]

    def test_options_are_decorator_arguments(self) -> None:
        """``@tool(...)`` sets name, description and every option of the declaration."""

        @tool(
            name="look_up",
            description="Look it up.",
            idempotent=True,
            parallel_safe=True,
            check_in=True,
            timeout_s=5,
            max_result_chars=100,
        )
        async def lookup(key: str) -> str:
            """Not this text."""
            return key

        assert (lookup.name, lookup.description) == ("look_up", "Look it up.")
        assert (lookup.idempotent, lookup.parallel_safe, lookup.check_in) == (True, True, True)
        assert (lookup.timeout_s, lookup.max_result_chars) == (5, 100)
        assert lookup.is_async

    def test_calling_the_tool_calls_the_function(self) -> None:
        """A tool built from a function can still be called directly, as the function."""

        @tool
        def double(n: int) -> int:
            """Double it."""
            return 2 * n

        assert double(21) == 42


class TestDocstring:
    def test_sections_end_the_description(self) -> None:
        """The description stops at the first section; Args entries are collected."""
        text, params = parse_docstring(
            """Summary line.

            More about it.

            Args:
                a (int): first.
                b: second,
                    continued.

            Raises:
                ValueError: never.
            """
        )
        assert text == "Summary line.\n\nMore about it."
        assert params == {"a": "first.", "b": "second, continued."}

    def test_no_docstring_gives_an_empty_description(self) -> None:
        """A function without a docstring gets an empty description and no parameter texts."""
        assert parse_docstring(None) == ("", {})


class TestRefusals:
    def test_a_parameter_without_annotation_is_refused(self) -> None:
        """No annotation: refused at decoration, naming the tool and the parameter."""
        with pytest.raises(ToolDefinitionError) as caught:

            @tool
            def convert(value: float, unit) -> float:  # type: ignore[no-untyped-def]
                return value

        assert "tool 'convert': parameter 'unit' has no type annotation" in str(caught.value)
        assert caught.value.context == {"tool": "convert", "parameter": "unit"}

    @pytest.mark.parametrize("star", ["*args", "**kwargs"])
    def test_variadic_parameters_are_refused(self, star: str) -> None:
        """``*args`` and ``**kwargs`` are refused, named with their stars."""
        namespace: dict[str, Any] = {}
        exec(f"def spread(a: int, {star}: int) -> None: ...", namespace)
        with pytest.raises(ToolDefinitionError, match=rf"parameter '\{star[0]}"):
            tool(namespace["spread"])

    @pytest.mark.parametrize(
        ("annotation", "why"),
        [
            ("threading.Lock", "which is no msgspec Struct, dataclass or TypedDict"),
            ("datetime.datetime", "is annotated with datetime"),
            ("set[int]", "is annotated with set"),
            ("bytes", "is annotated with bytes"),
            ("dict[int, str]", "keys are not str"),
            ("list[threading.Event]", "Event"),
            ("Literal[True]", "Literal of bool"),
        ],
    )
    def test_unsupported_annotations_are_refused(self, annotation: str, why: str) -> None:
        """Types whose JSON schema could not say what they accept are refused, naming them."""
        namespace: dict[str, Any] = {}
        exec(
            "import datetime, threading\nfrom typing import Literal\n"
            f"def odd(x: {annotation}) -> None: ...",
            namespace,
        )
        with pytest.raises(ToolDefinitionError, match="tool 'odd': parameter 'x'") as caught:
            tool(namespace["odd"])
        assert why in str(caught.value)

    def test_a_reserved_argument_name_is_refused(self) -> None:
        """A parameter named like a reserved argument (``_findings``) is refused."""
        with pytest.raises(ToolDefinitionError, match="_findings"):

            @tool
            def sneaky(_findings: str) -> None:
                """Try."""

    def test_two_context_parameters_are_refused(self) -> None:
        """The context may be asked for once."""
        with pytest.raises(ToolDefinitionError, match="second time"):

            @tool
            def greedy(a: ToolContext, b: ToolContext) -> None:
                """Twice."""

    def test_a_docstring_arg_that_is_no_parameter_is_refused(self) -> None:
        """An Args entry naming no parameter is a mistake worth saying at once."""
        with pytest.raises(ToolDefinitionError, match="parameter 'colour'"):

            @tool
            def paint(color: str) -> None:
                """Paint.

                Args:
                    colour: misspelled.
                """

    def test_unresolvable_forward_reference_is_refused(self) -> None:
        """An annotation naming nothing importable is refused, naming the tool."""
        namespace: dict[str, Any] = {}
        exec("def ghost(x: 'Nowhere') -> None: ...", namespace)
        with pytest.raises(ToolDefinitionError, match="tool 'ghost'"):
            tool(namespace["ghost"])


class TestCalls:
    async def test_the_function_receives_typed_values(self, clock: Any) -> None:
        """Arguments are decoded into the declared types before the call."""
        seen: dict[str, Any] = {}

        @tool
        async def plan(place: Place, window: Window, unit: Unit, days: int = 1) -> str:
            """Plan."""
            seen.update(place=place, window=window, unit=unit, days=days)
            return "ok"

        outcome = await run_one(
            clock,
            plan,
            place={"city": "Delft"},
            window={"start": "a", "end": "b"},
            unit="fahrenheit",
            days=4.0,
        )
        assert outcome.status == "ok", outcome.content
        assert seen == {
            "place": Place("Delft"),
            "window": Window("a", "b"),
            "unit": Unit.FAHRENHEIT,
            "days": 4,
        }
        assert type(seen["days"]) is int

    async def test_a_mismatch_is_invalid_args_and_the_function_does_not_run(
        self, clock: Any
    ) -> None:
        """A value the declared type refuses is an invalid-args observation; nothing runs."""
        ran: list[str] = []

        @tool
        def pick(unit: Unit, days: Annotated[int, msgspec.Meta(ge=1)] = 1) -> str:
            """Pick."""
            ran.append("ran")
            return "ok"

        outcome = await run_one(clock, pick, unit="kelvin", days=0, extra=True)
        assert outcome.status == "invalid-args"
        assert outcome.not_dispatched
        assert "unit: must be one of" in outcome.content
        assert "days: must be at least 1" in outcome.content
        assert "extra: unexpected property" in outcome.content
        assert ran == []

    async def test_the_context_is_passed_by_annotation(self, clock: Any) -> None:
        """Only a parameter annotated ToolContext gets the context, in any position."""

        @tool
        def where(query: str, context: ToolContext, limit: int = 2) -> str:
            """Where."""
            return f"{context.tool_call_id}:{query}:{limit}"

        outcome = await run_one(clock, where, query="q")
        assert outcome.content == "c1:q:2"

    async def test_a_sync_function_runs_in_a_worker_thread(self, clock: Any) -> None:
        """A plain ``def`` is not run on the event loop's thread."""
        loop_thread = threading.get_ident()

        @tool
        def which() -> bool:
            """Which thread."""
            return threading.get_ident() != loop_thread

        outcome = await run_one(clock, which)
        assert outcome.content == "true"

    async def test_the_args_ctx_form_keeps_working_with_a_schema(self, clock: Any) -> None:
        """With ``input_schema=`` the function takes ``(args, ctx)`` as before."""

        @tool(input_schema={"type": "object", "properties": {"q": {"type": "string"}}})
        async def raw(args: Mapping[str, Any], ctx: ToolContext) -> str:
            """Raw."""
            return f"{args['q']}@{ctx.run_id}"

        assert raw.input_schema["properties"] == {"q": {"type": "string"}}
        outcome = await run_one(clock, raw, q="x")
        assert outcome.content == "x@run-1"

    async def test_the_args_type_form_keeps_working(self, clock: Any) -> None:
        """With ``args_type=`` the function receives the decoded Struct and the context."""

        @tool(args_type=Window)
        async def span(args: Window, ctx: ToolContext) -> str:
            """Span."""
            return f"{args.start}-{args.end}"

        outcome = await run_one(clock, span, start="a", end="b")
        assert outcome.content == "a-b"


def test_a_union_msgspec_would_crash_on_is_refused_with_its_name() -> None:
    """A constrained value beside a fixed-length tuple in one union (which corrupts memory in
    msgspec's decoder) is a ToolDefinitionError naming the union, at any depth."""

    def pick(x: dict[str, list[Annotated[int, msgspec.Meta(ge=0)] | tuple[int, int]]]) -> str:
        return "ok"

    with pytest.raises(ToolDefinitionError, match=r"the union .*tuple\[int, int\]"):
        tool(pick)

    def fine(x: Annotated[int, msgspec.Meta(ge=0)] | tuple[int, ...]) -> str:
        return "ok"

    assert tool(fine).input_schema["properties"]["x"]["anyOf"]


def test_a_float_beside_a_narrow_integer_type_is_refused() -> None:
    """A union of a float and an int with limits (or int Literals) is refused: msgspec gives
    every integer to the int member, so -1 would be refused although the schema accepts it;
    a float beside a plain int stays allowed."""

    def limited(x: Annotated[int, msgspec.Meta(ge=0, le=10)] | float) -> str:
        return "ok"

    def fixed(x: Literal[1, 2] | float) -> str:
        return "ok"

    for fn in (limited, fixed):
        with pytest.raises(ToolDefinitionError, match="every integer as the integer type"):
            tool(fn)

    def plain(x: int | Annotated[float, msgspec.Meta(gt=-1.5)]) -> str:
        return "ok"

    planned = plan_call(ToolCall(id="c", name="plain", args={"x": -1}), {"plain": tool(plain)})
    assert planned.runnable, planned.outcome


def test_an_integral_float_refused_by_the_float_member_goes_to_the_int_member() -> None:
    """In a union of a constrained float and an int, 3.0 passes the schema as an integer, so it
    is decoded as the int 3 rather than refused by the float member."""
    seen: list[Any] = []

    @tool
    def pick(x: Annotated[float, msgspec.Meta(lt=2.5)] | int) -> str:
        seen.append(x)
        return "ok"

    planned = plan_call(ToolCall(id="c", name="pick", args={"x": 3.0}), {"pick": pick})
    assert planned.runnable, planned.outcome
    pick.fn(planned.args, None)
    assert seen == [3] and type(seen[0]) is int
    kept = plan_call(ToolCall(id="d", name="pick", args={"x": 2.0}), {"pick": pick})
    pick.fn(kept.args, None)
    assert seen[-1] == 2.0 and type(seen[-1]) is float


def test_a_struct_with_a_union_msgspec_would_crash_on_is_refused() -> None:
    """Tool.from_struct refuses an args Struct holding such a union instead of crashing."""
    shape = msgspec.defstruct(
        "Crashing", [("x", Annotated[str, msgspec.Meta(min_length=1)] | tuple[int, int])]
    )
    with pytest.raises(ToolDefinitionError, match="fixed-length tuple"):
        Tool.from_struct("crashing", "", shape, lambda args, ctx: "ok")


class Node(msgspec.Struct):
    name: str
    children: list[Node] = []


def test_a_recursive_struct_parameter_is_a_tree_the_tool_gets_decoded() -> None:
    """A parameter whose Struct names itself (a tree) declares a tool (it used to recurse
    until the stack ran out); nested arguments are checked through its ``$ref`` and the tool
    gets the tree as Structs, while a wrong leaf deep inside is refused by its path."""
    seen: list[Node] = []

    @tool
    def walk(root: Node) -> str:
        """Walk a tree."""
        seen.append(root)
        return root.name

    tree = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    planned = plan_call(ToolCall(id="c", name="walk", args={"root": tree}), {"walk": walk})
    assert planned.runnable, planned.outcome
    walk.fn(planned.args, None)
    assert seen == [Node("a", [Node("b", [Node("c")])])]
    bad = {"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]}
    refused = plan_call(ToolCall(id="d", name="walk", args={"root": bad}), {"walk": walk})
    assert not refused.runnable
    assert "root.children[0].children[0].name" in str(refused.outcome)


def test_a_default_its_own_type_refuses_is_refused_at_declaration() -> None:
    """The schema shows a default to the model as the value a call may leave out: one that
    the parameter's type refuses (text for an int, None for a list, a NaN) is a
    ToolDefinitionError naming the parameter; a fitting default is kept in the schema."""

    def text_for_int(x: int = "notint") -> str:  # type: ignore[assignment]
        return "x"

    def none_for_list(xs: list[int] = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        return "x"

    def nan(x: float = float("nan")) -> str:
        return "x"

    for fn in (text_for_int, none_for_list, nan):
        with pytest.raises(ToolDefinitionError, match="which its own type refuses"):
            tool(fn)

    def fitting(x: int = 3, xs: list[int] | None = None, unit: Unit = Unit.CELSIUS) -> str:
        return "x"

    properties = tool(fitting).input_schema["properties"]
    assert properties["x"]["default"] == 3 and properties["unit"]["default"] == "celsius"
