"""Property: for random signatures over the supported annotations, the schema a typed tool shows
accepts exactly the values its declared types decode, and the function receives typed values."""

from __future__ import annotations

import dataclasses
import enum
import itertools
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import msgspec
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from afp_runtime.errors import ToolDefinitionError
from afp_runtime.messages import ToolCall
from afp_runtime.tools import Tool, plan_call, tool, validate_args


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


_names = itertools.count()

LEAVES: list[Any] = [
    str,
    int,
    float,
    bool,
    type(None),
    Any,
    Literal["a", "b"],
    Literal[1, 2],
    Colour,
    Level,
    Annotated[int, msgspec.Meta(ge=0, le=10)],
    Annotated[int, msgspec.Meta(multiple_of=3)],
    Annotated[float, msgspec.Meta(gt=-1.5, lt=2.5)],
    Annotated[str, msgspec.Meta(min_length=1, max_length=3)],
    Annotated[str, msgspec.Meta(pattern="^[a-c]+$")],
]


def _struct(fields: list[tuple[str, Any]]) -> Any:
    return msgspec.defstruct(f"S{next(_names)}", fields)


def _dataclass(fields: list[tuple[str, Any]]) -> Any:
    return dataclasses.make_dataclass(f"D{next(_names)}", fields)


def _typeddict(fields: list[tuple[str, Any]]) -> Any:
    return TypedDict(f"T{next(_names)}", dict(fields))  # type: ignore[operator]


def _composite(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    field_lists = st.lists(
        st.tuples(st.sampled_from(["p", "q", "r"]), inner),
        min_size=1,
        max_size=3,
        unique_by=lambda f: f[0],
    )
    return st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: tuple[t, ...]),  # type: ignore[valid-type]
        st.tuples(inner, inner).map(lambda ts: tuple[ts[0], ts[1]]),  # type: ignore[valid-type]
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        inner.map(lambda t: Optional[t]),  # noqa: UP045
        st.tuples(inner, inner).map(lambda ts: Union[ts[0], ts[1]]),  # noqa: UP007
        inner.map(lambda t: Annotated[list[t], msgspec.Meta(max_length=2)]),  # type: ignore[valid-type]
        field_lists.map(_struct),
        field_lists.map(_dataclass),
        field_lists.map(_typeddict),
    )


types = st.recursive(st.sampled_from(LEAVES), _composite, max_leaves=4)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-4, max_value=12),
    st.floats(min_value=-3, max_value=12, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 1.0, 2.0, 3.0, 6.0]),
    st.sampled_from(["", "a", "b", "c", "ab", "abcd", "red", "green", "x"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["p", "q", "r", "s"]), inner, max_size=3),
    ),
    max_leaves=6,
)


@st.composite
def signatures(draw: st.DrawFn) -> tuple[Tool, list[str], list[Any]]:
    count = draw(st.integers(min_value=1, max_value=3))
    names = [f"x{i}" for i in range(count)]
    hints = [draw(types) for _ in names]
    namespace: dict[str, Any] = {"received": []}
    params = ", ".join(names)
    exec(f"def f({params}):\n    received.append(({params},))\n    return 'ok'", namespace)
    fn = namespace["f"]
    fn.__annotations__ = {**dict(zip(names, hints, strict=True)), "return": str}
    try:
        declared = tool(fn)
    except ToolDefinitionError:
        assume(False)  # a union msgspec refuses (two array types, say): not this property's case
        raise
    return declared, names, namespace["received"]


def _valid(info: msgspec.inspect.Type) -> st.SearchStrategy[Any]:
    """Values of the type's wire form (mostly valid; constraints are drawn around)."""
    mi = msgspec.inspect
    match info:
        case mi.NoneType():
            return st.none()
        case mi.BoolType():
            return st.booleans()
        case mi.IntType():
            low = info.ge if info.ge is not None else -4
            high = info.le if info.le is not None else 12
            whole = st.integers(min_value=low - 1, max_value=high + 1)
            if info.multiple_of:
                whole = whole.map(lambda n: n * info.multiple_of)
            return st.one_of(whole, whole.map(float))
        case mi.FloatType():
            return st.floats(min_value=-3, max_value=4, allow_nan=False)
        case mi.StrType():
            if info.pattern:
                return st.one_of(st.from_regex("[a-c]+", fullmatch=True), st.just("abx"))
            return st.text("abcx", max_size=(info.max_length or 3) + 1)
        case mi.LiteralType():
            return st.sampled_from(info.values)
        case mi.EnumType():
            return st.sampled_from([member.value for member in info.cls])
        case mi.ListType() | mi.VarTupleType():
            most = info.max_length if info.max_length is not None else 2
            return st.lists(_valid(info.item_type), max_size=most + 1)
        case mi.TupleType():
            return st.tuples(*(_valid(t) for t in info.item_types)).map(list)
        case mi.DictType():
            return st.dictionaries(st.sampled_from(["p", "q"]), _valid(info.value_type), max_size=2)
        case mi.UnionType():
            return st.one_of(*(_valid(t) for t in info.types))
        case mi.StructType() | mi.DataclassType() | mi.TypedDictType():
            return st.fixed_dictionaries(
                {f.encode_name: _valid(f.type) for f in info.fields if f.required},
                optional={f.encode_name: _valid(f.type) for f in info.fields if not f.required},
            )
    return json_values


@st.composite
def arguments(draw: st.DrawFn, declared: Tool, names: list[str]) -> dict[str, Any]:
    """Arguments built from the types, each sometimes swapped, dropped, or joined by an extra."""
    assert declared.function is not None
    hints = declared.function.__annotations__
    args: dict[str, Any] = {}
    for name in names:
        choice = draw(st.sampled_from(["valid"] * 6 + ["random", "missing"]))
        if choice == "valid":
            args[name] = draw(_valid(msgspec.inspect.type_info(hints[name])))
        elif choice == "random":
            args[name] = draw(json_values)
    if draw(st.integers(0, 9)) == 0:
        args["extra"] = draw(json_values)
    return args


def _conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` is a typed value of ``hint`` (what the function should receive)."""
    info = msgspec.inspect.type_info(hint)
    return _typed(value, info)


def _typed(value: Any, info: msgspec.inspect.Type) -> bool:
    mi = msgspec.inspect
    match info:
        case mi.AnyType():
            return True
        case mi.NoneType():
            return value is None
        case mi.BoolType():
            return isinstance(value, bool)
        case mi.IntType():
            return isinstance(value, int) and not isinstance(value, bool)
        case mi.FloatType():
            return isinstance(value, float)
        case mi.StrType():
            return isinstance(value, str)
        case mi.LiteralType():
            return value in info.values and type(value) in {type(v) for v in info.values}
        case mi.EnumType():
            return isinstance(value, info.cls)
        case mi.ListType():
            return isinstance(value, list) and all(_typed(v, info.item_type) for v in value)
        case mi.VarTupleType():
            return isinstance(value, tuple) and all(_typed(v, info.item_type) for v in value)
        case mi.TupleType():
            return isinstance(value, tuple) and all(
                _typed(v, t) for v, t in zip(value, info.item_types, strict=True)
            )
        case mi.DictType():
            return isinstance(value, dict) and all(
                _typed(v, info.value_type) for v in value.values()
            )
        case mi.UnionType():
            return any(_typed(value, t) for t in info.types)
        case mi.StructType() | mi.DataclassType():
            return isinstance(value, info.cls) and all(
                _typed(getattr(value, f.name), f.type) for f in info.fields
            )
        case mi.TypedDictType():
            return isinstance(value, dict) and all(
                _typed(value[f.name], f.type) for f in info.fields if f.name in value
            )
    raise AssertionError(f"unexpected type info {info!r}")


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_the_schema_accepts_exactly_what_the_types_decode(data: st.DataObject) -> None:
    """validate_args passes a value iff decoding into the declared types succeeds; then the
    function gets values of the declared types."""
    declared, names, received = data.draw(signatures())
    args = data.draw(arguments(declared, names))
    accepted = validate_args(declared.input_schema, args) == ()
    event("accepted" if accepted else "refused")
    planned = plan_call(ToolCall(id="c", name=declared.name, args=args), {declared.name: declared})
    assert planned.runnable == accepted, (declared.input_schema, args, planned.outcome)
    if not accepted:
        return
    assert declared.function is not None
    declared.fn(planned.args, None)
    hints = declared.function.__annotations__
    (values,) = received
    for name, value in zip(names, values, strict=True):
        assert _conforms(value, hints[name]), (name, value, hints[name])
