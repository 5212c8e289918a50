"""Tools from plain functions: the input schema from type hints, descriptions from the docstring.

``@tool`` over ``def forecast(city: str, days: int = 3) -> dict`` (or an ``async def``) builds an
argument Struct from the signature, its JSON schema with msgspec, and an ``(args, ctx)`` adapter
that calls the function with typed keyword arguments. What a parameter may be annotated with is
the set msgspec decodes from JSON exactly (docs/tools.md#what-a-parameter-may-be): ``str``,
``int``, ``float``, ``bool``, ``None``, ``Any``, ``Literal``, ``Enum``, ``list``, ``tuple``,
``dict[str, ...]``, unions and ``Optional``, msgspec Structs, dataclasses and ``TypedDict``, each
possibly ``Annotated[..., msgspec.Meta(...)]``. Other types (``datetime``, ``set``, ``bytes``, a
plain class) are refused when the tool is declared, because the schema the model is shown could
not say what they accept.

The tool context is handed over only to a parameter annotated ``ToolContext``, wherever it sits in
the signature.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

import msgspec
import msgspec.inspect as mi

from afp_runtime.errors import ToolDefinitionError
from afp_runtime.tools._unions import crashing_text, crashing_union
from afp_runtime.tools.context import ToolContext
from afp_runtime.tools.declaration import Period, Tool, ToolFn, is_async_callable, schema_for

SUPPORTED = (
    "str, int, float, bool, None, Any, Literal, Enum, list, tuple, dict[str, ...], unions, "
    "a msgspec Struct, a dataclass or a TypedDict"
)
"""The annotation kinds a tool parameter may have, as error messages list them."""

# Types msgspec decodes that a JSON schema cannot describe exactly (formats and sets).
_REFUSED: dict[type, str] = {
    mi.DateTimeType: "datetime",
    mi.DateType: "date",
    mi.TimeType: "time",
    mi.TimeDeltaType: "timedelta",
    mi.UUIDType: "UUID",
    mi.DecimalType: "Decimal",
    mi.BytesType: "bytes",
    mi.ByteArrayType: "bytearray",
    mi.MemoryViewType: "memoryview",
    mi.SetType: "set",
    mi.FrozenSetType: "frozenset",
    mi.RawType: "msgspec.Raw",
    mi.ExtType: "msgspec.msgpack.Ext",
    mi.NamedTupleType: "NamedTuple",
}

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Returns|Return|Yields|Raises|Examples?|"
    r"Notes?|Warnings?|See Also|Attributes|Todo):\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}[A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_ARGS_SECTIONS = frozenset({"Args", "Arguments", "Parameters", "Params", "Keyword Args"})


def _refuse(tool: str, parameter: str | None, why: str) -> ToolDefinitionError:
    context: dict[str, Any] = {"tool": tool}
    where = f"tool {tool!r}"
    if parameter is not None:
        context["parameter"] = parameter
        where += f": parameter {parameter!r}"
    return ToolDefinitionError(f"{where} {why}", **context)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into the tool's description and its Args texts.

    The description is everything before the first section heading (``Args:``, ``Returns:``,
    ``Raises:``...); each ``name: text`` entry of an ``Args:`` section (continuation lines
    indented below it) becomes that parameter's description.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    entry_indent = -1
    for line in lines:
        stripped = line.strip()
        heading = _SECTION.match(stripped)
        if heading and len(line) - len(line.lstrip()) == 0:
            section, current, entry_indent = heading.group(1), None, -1
            continue
        if section is None:
            description.append(line)
            continue
        if section not in _ARGS_SECTIONS or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        found = _ARG_LINE.match(stripped)
        if found and (entry_indent < 0 or indent <= entry_indent):
            current, entry_indent = found.group(1).lstrip("*"), indent
            params[current] = found.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(description).strip(), params


def _unsupported(tool: str, parameter: str, annotation: Any) -> ToolDefinitionError:
    name = str(getattr(annotation, "__qualname__", None) or repr(annotation))
    return _refuse(
        tool,
        parameter,
        f"is annotated with {name}, which is no msgspec Struct, dataclass or TypedDict; "
        f"a tool argument may be {SUPPORTED}",
    )


def _json_kind(info: mi.Type) -> str | None:
    """The JSON type a union member decodes from, for the members msgspec may confuse."""
    if isinstance(info, mi.StrType):
        return "string"
    if isinstance(info, mi.IntType):
        return "integer"
    if isinstance(info, mi.FloatType):
        return "number"
    values: tuple[Any, ...] = ()
    if isinstance(info, mi.LiteralType):
        values = info.values
    elif isinstance(info, mi.EnumType):
        values = tuple(member.value for member in info.cls)
    if values and all(isinstance(v, str) for v in values):
        return "string"
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    return None


def _check_union(tool: str, parameter: str, info: mi.UnionType) -> None:
    """Refuse a union with two members msgspec would decode the same JSON type into: it keeps
    one of them, so the schema (which offers both) would accept values it then refuses.
    Several Literals of one kind are one set of values and stay allowed."""
    by_kind: dict[str, list[mi.Type]] = {}
    for member in info.types:
        kind = _json_kind(member)
        if kind is not None:
            by_kind.setdefault(kind, []).append(member)
    for kind, members in by_kind.items():
        if len(members) > 1 and not all(isinstance(m, mi.LiteralType) for m in members):
            raise _refuse(
                tool,
                parameter,
                f"is a union with {len(members)} members that all take a JSON {kind}; "
                "msgspec would keep only one of them (use one type, or Literal values)",
            )
    narrow = [m for m in by_kind.get("integer", []) if not _every_integer(m)]
    if narrow and by_kind.get("number"):
        # msgspec hands every integer to the integer member, whose limits then refuse what the
        # float member (and so the schema) accepts: -1 for ``Annotated[int, Meta(ge=0)] | float``.
        raise _refuse(
            tool,
            parameter,
            "is a union of a float and an integer type with limits or fixed values; msgspec "
            "decodes every integer as the integer type, so the float would never see one "
            "(use float alone, or int without limits)",
        )


def _every_integer(info: mi.Type) -> bool:
    """Whether an integer member takes every integer (an ``int`` without limits)."""
    return isinstance(info, mi.IntType) and all(
        getattr(info, name) is None for name in ("gt", "ge", "lt", "le", "multiple_of")
    )


def _check_type(tool: str, parameter: str, info: mi.Type, seen: set[int]) -> None:
    """Refuse an annotation msgspec cannot turn into an exact JSON schema."""
    if id(info) in seen:
        return
    seen.add(id(info))
    refused = _REFUSED.get(type(info))
    if refused is not None:
        raise _refuse(
            tool, parameter, f"is annotated with {refused}; a tool argument may be {SUPPORTED}"
        )
    if isinstance(info, mi.CustomType):
        raise _unsupported(tool, parameter, info.cls)
    if isinstance(info, mi.DictType):
        if not isinstance(info.key_type, mi.StrType):
            raise _refuse(
                tool, parameter, "is a dict whose keys are not str (JSON object keys are strings)"
            )
        _check_type(tool, parameter, info.value_type, seen)
    elif isinstance(info, mi.ListType | mi.VarTupleType):
        _check_type(tool, parameter, info.item_type, seen)
    elif isinstance(info, mi.TupleType):
        for item in info.item_types:
            _check_type(tool, parameter, item, seen)
    elif isinstance(info, mi.UnionType):
        _check_union(tool, parameter, info)
        for member in info.types:
            _check_type(tool, parameter, member, seen)
    elif isinstance(info, mi.StructType | mi.DataclassType | mi.TypedDictType):
        if isinstance(info, mi.StructType) and info.array_like:
            raise _refuse(
                tool,
                parameter,
                f"is {info.cls.__qualname__}, an array_like Struct; "
                "a tool argument Struct must encode as a JSON object",
            )
        for field in info.fields:
            _check_type(tool, parameter, field.type, seen)
    elif isinstance(info, mi.LiteralType) and any(isinstance(v, bool) for v in info.values):
        raise _refuse(tool, parameter, "is a Literal of bool; use bool")


class _Signature:
    """What ``tool`` read from a function's signature."""

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise _refuse(name, None, f"has no signature to read ({exc})") from exc
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception as exc:  # a forward reference that does not resolve, for one
            raise _refuse(name, None, f"has annotations that do not resolve: {exc}") from exc
        self.context: str | None = None
        self.positional: list[str] = []
        self.fields: list[tuple[str, Any, Any] | tuple[str, Any]] = []
        for parameter in signature.parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                star = "*" if parameter.kind is parameter.VAR_POSITIONAL else "**"
                raise _refuse(
                    name,
                    f"{star}{parameter.name}",
                    "is variadic; a tool's arguments are named parameters",
                )
            hint = hints.get(parameter.name, inspect.Parameter.empty)
            if hint is inspect.Parameter.empty:
                raise _refuse(
                    name,
                    parameter.name,
                    "has no type annotation (the model is shown a schema built from it)",
                )
            if hint is ToolContext:
                if self.context is not None:
                    raise _refuse(
                        name,
                        parameter.name,
                        f"asks for the ToolContext a second time ({self.context!r} already does)",
                    )
                if parameter.default is not inspect.Parameter.empty:
                    raise _refuse(
                        name, parameter.name, "is the ToolContext and may not have a default"
                    )
                self.context = parameter.name
                continue
            crashing = crashing_union(hint)
            if crashing is not None:
                raise _refuse(
                    name,
                    parameter.name,
                    f"has a union msgspec cannot decode, {crashing_text(crashing)}",
                )
            try:
                info = mi.type_info(hint)
            except (TypeError, ValueError):
                raise _unsupported(name, parameter.name, hint) from None
            _check_type(name, parameter.name, info, set())
            if parameter.kind is parameter.POSITIONAL_ONLY:
                self.positional.append(parameter.name)
            if parameter.default is inspect.Parameter.empty:
                self.fields.append((parameter.name, hint))
            else:
                _check_default(name, parameter.name, hint, parameter.default)
                self.fields.append((parameter.name, hint, parameter.default))
        self.names = [field[0] for field in self.fields]

    def args_type(self, name: str) -> type[msgspec.Struct]:
        """The Struct the model's arguments decode into (unknown keys refused)."""
        try:
            return msgspec.defstruct(
                f"{name}_args", self.fields, kw_only=True, forbid_unknown_fields=True
            )
        except (TypeError, ValueError) as exc:
            raise _refuse(name, None, f"cannot take its parameters as arguments: {exc}") from exc

    def adapter(self, fn: Callable[..., Any], is_async: bool) -> ToolFn:
        """An ``(args, ctx)`` function that calls ``fn`` with the decoded arguments."""
        positional, names, context = self.positional, self.names, self.context

        def arguments(args: msgspec.Struct, ctx: ToolContext) -> tuple[list[Any], dict[str, Any]]:
            values = {field: getattr(args, field) for field in names}
            if context is not None:
                values[context] = ctx
            return [values.pop(field) for field in positional], values

        if is_async:

            async def call_async(args: msgspec.Struct, ctx: ToolContext) -> Any:
                ordered, named = arguments(args, ctx)
                return await fn(*ordered, **named)

            return call_async

        def call(args: msgspec.Struct, ctx: ToolContext) -> Any:
            ordered, named = arguments(args, ctx)
            return fn(*ordered, **named)

        return call


def _check_default(tool_name: str, parameter: str, hint: Any, default: Any) -> None:
    """Refuse a default the parameter's own type refuses: the schema shows it to the model as
    the value a call may leave out, so it must be one the schema allows (``x: int = "a"``,
    ``xs: list = None``, a NaN, which JSON writes as ``null``)."""
    try:
        msgspec.json.decode(msgspec.json.encode(default), type=hint, strict=True)
    except (TypeError, ValueError, msgspec.MsgspecError) as exc:
        raise _refuse(
            tool_name,
            parameter,
            f"has the default {default!r}, which its own type refuses ({exc}); give a default "
            "of the type, or widen the type (for None: `| None`)",
        ) from None


def _schema(
    tool_name: str, args_type: type[msgspec.Struct], params: Mapping[str, str]
) -> dict[str, Any]:
    try:
        schema = schema_for(args_type)
    except (TypeError, ValueError) as exc:
        # A default msgspec cannot encode, for one.
        raise _refuse(
            tool_name, None, f"has parameters no JSON schema can describe: {exc}"
        ) from exc
    schema.pop("title", None)
    defs = schema.get("$defs")
    if isinstance(defs, dict):
        defs.pop(args_type.__name__, None)
        if not defs:
            del schema["$defs"]
    properties = schema.get("properties", {})
    for parameter, text in params.items():
        prop = properties.get(parameter)
        if isinstance(prop, dict) and text and "description" not in prop:
            prop["description"] = text
    return schema


def build_tool(
    fn: Callable[..., Any], *, name: str | None, description: str | None, **options: Any
) -> Tool:
    """The ``Tool`` for a typed function (what ``@tool`` does; see ``tool``); ``options`` are
    the declaration options ``tool`` takes.

    Raises:
        ToolDefinitionError: the signature cannot be a tool's (names the tool and parameter).
    """
    if not callable(fn):
        raise ToolDefinitionError(f"tool needs a function, not {fn!r}", property="fn")
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    summary, params = parse_docstring(inspect.getdoc(fn))
    signature = _Signature(tool_name, fn)
    unknown = sorted(set(params) - set(signature.names) - {signature.context or ""})
    if unknown:
        raise _refuse(
            tool_name,
            unknown[0],
            "is described in the docstring's Args but is not a parameter of the function",
        )
    args_type = signature.args_type(tool_name)
    return Tool(
        tool_name,
        summary if description is None else description,
        _schema(tool_name, args_type, params),
        signature.adapter(fn, is_async_callable(fn)),
        args_type=args_type,
        function=fn,
        **options,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    parallel_safe: bool = False,
    check_in: bool = False,
    timeout_s: float = 60.0,
    max_result_chars: int = 20_000,
    period: Period | None = None,
    input_schema: Mapping[str, Any] | None = None,
    args_type: type[msgspec.Struct] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    parallel_safe: bool = False,
    check_in: bool = False,
    timeout_s: float = 60.0,
    max_result_chars: int = 20_000,
    period: Period | None = None,
    input_schema: Mapping[str, Any] | None = None,
    args_type: type[msgspec.Struct] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declare a function as a tool: ``@tool`` or ``@tool(idempotent=True, ...)``.

    The function's parameters are the tool's arguments: their type hints give the input schema
    the model is shown (``Tool.schema()``), a default makes one optional, and the docstring
    gives the tool's description (the text before ``Args:``) and each parameter's (its ``Args:``
    entry; an ``Annotated[..., msgspec.Meta(description=...)]`` wins). Before each call the
    model's arguments are checked against the schema and decoded into the declared types; a
    mismatch is an invalid-arguments observation and the function does not run. A parameter
    annotated ``ToolContext`` receives the call's context instead. ``async def`` functions run
    on the event loop, plain ones in a worker thread.

    With ``input_schema=`` or ``args_type=`` the function keeps the ``(args, ctx)`` form: it
    receives the argument mapping (or the ``args_type`` Struct) and the context.

    Args:
        fn: the function (when used without parentheses).
        name: the tool's name (default: the function's name).
        description: what the model is told the tool does (default: from the docstring).
        idempotent: running the same call twice has the effect of running it once, so a call
            cut off by a crash is run again rather than reported interrupted.
        parallel_safe: may run concurrently with other parallel-safe calls of the same reply.
        check_in: every call asks the person for approval first.
        timeout_s: seconds a call may take, on the agent's clock.
        max_result_chars: code points of a result kept before it is cut.
        period: the period forms the tool's arguments take (docs/time.md).
        input_schema: a hand-written JSON schema; the function takes ``(args, ctx)``.
        args_type: a msgspec Struct the arguments decode into; the function takes
            ``(args, ctx)``.

    Returns:
        The ``Tool`` (or, with options only, a decorator that makes one).

    Raises:
        ToolDefinitionError: at decoration time, naming the tool and the parameter: a parameter
            without annotation, ``*args``/``**kwargs``, an annotation outside the supported set,
            a reserved argument name, or an option out of range.
    """
    options: dict[str, Any] = {
        "idempotent": idempotent,
        "parallel_safe": parallel_safe,
        "check_in": check_in,
        "timeout_s": timeout_s,
        "max_result_chars": max_result_chars,
        "period": period,
    }

    def declare(function: Callable[..., Any]) -> Tool:
        if input_schema is None and args_type is None:
            return build_tool(function, name=name, description=description, **options)
        tool_name = name if name is not None else getattr(function, "__name__", "")
        text = description if description is not None else inspect.getdoc(function) or ""
        if input_schema is None:
            assert args_type is not None
            return Tool.from_struct(tool_name, text, args_type, function, **options)
        return Tool(tool_name, text, dict(input_schema), function, args_type=args_type, **options)

    if fn is not None:
        return declare(fn)
    return declare
