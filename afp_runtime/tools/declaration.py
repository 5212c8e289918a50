"""Tool declarations (docs/loop.md#tool-declarations): a name, a description, an input schema and a
function.

A declaration is checked once, when it is made; every problem raises ``ToolDefinitionError``
naming the tool and the property at fault.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, runtime_checkable

import msgspec

from afp_runtime.errors import ToolDefinitionError, error_context, shown
from afp_runtime.messages import ToolSchema
from afp_runtime.tools._schema_check import check_schema
from afp_runtime.tools._unions import crashing_text, crashing_union
from afp_runtime.tools.context import ToolContext

RESERVED_ARGUMENTS = ("_findings", "_timeQuote")
"""Argument names the runtime peels off every call; no tool may declare them
(docs/architecture.md#decision-14-reserved-tool-arguments-are-refused-at-definition)."""


@runtime_checkable
class Period(Protocol):
    """A period declaration (``afp.Period``, docs/time.md#period-forms-a-tool-declares), as a tool
    holds it: it checks itself against the tool's input schema."""

    def check_against(self, input_schema: Mapping[str, Any]) -> None:
        """Raise ``PeriodDeclarationError`` when the declaration does not fit the schema."""
        ...


ToolFn = Callable[[Any, ToolContext], Any]
"""``async def fn(args, ctx)`` or ``def fn(args, ctx)``, returning str, None or a JSON-able."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SHOWN_PROBLEMS = 5


def _refuse(tool: str, prop: str, why: str, value: Any = None) -> ToolDefinitionError:
    context: dict[str, Any] = {"tool": tool, "property": prop}
    if value is not None:
        context["value"] = shown(value)
    return ToolDefinitionError(f"tool {tool!r}: {prop} {why}", **context)


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine (a coroutine function, a partial of one, or an
    object with ``async def __call__``)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    # An instance whose class defines ``async def __call__`` (fn is known to be callable).
    return inspect.iscoroutinefunction(type(fn).__call__)


def schema_for(struct_type: type[msgspec.Struct]) -> dict[str, Any]:
    """A JSON object schema for the arguments ``struct_type`` decodes.

    msgspec's schema names the struct through ``$ref``; the struct's own definition is lifted
    to the root so the result has ``type: object``, and ``$defs`` is kept whole so nested (and
    self-referencing) structs still resolve.

    Raises:
        ToolDefinitionError: ``struct_type`` is not a Struct type encoded as a JSON object.
    """
    if not (isinstance(struct_type, type) and issubclass(struct_type, msgspec.Struct)):
        raise ToolDefinitionError(
            "schema_for needs a msgspec.Struct type", property="args_type", value=shown(struct_type)
        )
    crashing = crashing_union(struct_type)
    if crashing is not None:
        raise ToolDefinitionError(
            f"{struct_type.__name__} has a union msgspec cannot decode, {crashing_text(crashing)}",
            property="args_type",
        )
    generated = msgspec.json.schema(struct_type)
    defs = generated.get("$defs", {})
    ref = generated.get("$ref", "")
    root = defs.get(ref.removeprefix("#/$defs/")) if ref.startswith("#/$defs/") else generated
    if not isinstance(root, dict) or root.get("type") != "object":
        raise ToolDefinitionError(
            f"{struct_type.__name__} is not encoded as a JSON object (array_like?)",
            property="args_type",
        )
    schema = dict(root)
    if defs:
        schema["$defs"] = defs
    return schema


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """A tool the model may call.

    A frozen dataclass rather than a ``msgspec.Struct``: it holds a function and is never encoded;
    two declarations are equal only if they are the same object.

    Args:
        name: matches ``^[A-Za-z0-9_-]{1,64}$``; unique within an agent.
        description: what the model is told the tool does.
        input_schema: a JSON object schema (``type: object``) for the arguments; the keywords of
            the subset in ``afp_runtime.tools.schema`` are checked. ``_findings`` and
            ``_timeQuote`` may not appear among its properties.
        fn: ``async def fn(args, ctx)``, or a plain ``def`` run in a worker thread; returns a
            ``str`` (kept as is), ``None`` (a no-output note) or any JSON-able value.
        idempotent: running the same call twice has the effect of running it once.
        parallel_safe: may run concurrently with other parallel-safe calls.
        timeout_s: seconds (on the injected clock) a call may take, > 0.
        max_result_chars: code points of a result kept before it is cut, an int >= 1.
        check_in: every call asks the person for approval first.
        args_type: when set (see ``from_struct``), arguments are also decoded into this Struct
            and ``fn`` receives the Struct instead of a mapping.
        period: the period forms and facts the tool declares
        (docs/time.md#period-forms-a-tool-declares); its arguments
            are checked against ``input_schema`` here.
        function: the plain function a tool built by ``tool`` wraps (``fn`` is then the
            ``(args, ctx)`` adapter around it); calling the tool calls it.

    Raises:
        ToolDefinitionError: naming the tool and the property at fault.
        PeriodDeclarationError: ``period`` does not fit ``input_schema`` (names the tool and
            the period field, docs/time.md#validation-at-definition-time).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    fn: ToolFn
    _: KW_ONLY
    idempotent: bool = False
    parallel_safe: bool = False
    timeout_s: float = 60.0
    max_result_chars: int = 20_000
    check_in: bool = False
    args_type: type[msgspec.Struct] | None = None
    period: Period | None = None
    function: Callable[..., Any] | None = None
    is_async: bool = field(init=False, default=False)
    """True when ``fn`` is a coroutine function (derived, not an argument)."""

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ToolDefinitionError(
                "a tool name must match ^[A-Za-z0-9_-]{1,64}$",
                tool=shown(name),
                property="name",
            )
        if not isinstance(self.description, str):
            raise _refuse(name, "description", "must be a string", self.description)
        object.__setattr__(self, "input_schema", self._checked_schema())
        if not callable(self.fn):
            raise _refuse(name, "fn", "must be callable", self.fn)
        if self.function is not None and not callable(self.function):
            raise _refuse(name, "function", "must be callable", self.function)
        self._check_signature()
        object.__setattr__(self, "is_async", is_async_callable(self.fn))
        for flag in ("idempotent", "parallel_safe", "check_in"):
            if not isinstance(getattr(self, flag), bool):
                raise _refuse(name, flag, "must be a bool", getattr(self, flag))
        timeout = self.timeout_s
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise _refuse(name, "timeout_s", "must be a finite number of seconds > 0", timeout)
        cap = self.max_result_chars
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise _refuse(name, "max_result_chars", "must be an int >= 1", cap)
        if self.args_type is not None and not (
            isinstance(self.args_type, type) and issubclass(self.args_type, msgspec.Struct)
        ):
            raise _refuse(name, "args_type", "must be a msgspec.Struct type", self.args_type)
        if self.period is not None:
            if not isinstance(self.period, Period):
                raise _refuse(name, "period", "must be a Period", self.period)
            with error_context(tool=name):
                self.period.check_against(self.input_schema)

    def _checked_schema(self) -> dict[str, Any]:
        """A private JSON copy of the input schema, after checking it."""
        name, schema = self.name, self.input_schema
        if not isinstance(schema, Mapping):
            raise _refuse(name, "input_schema", "must be a JSON object schema", schema)
        try:
            copy = msgspec.json.decode(msgspec.json.encode(schema), type=dict[str, Any])
        except (TypeError, ValueError, OverflowError, msgspec.DecodeError) as exc:
            raise _refuse(name, "input_schema", f"is not JSON ({exc})") from exc
        if copy.get("type") != "object":
            raise _refuse(
                name, "input_schema", "must have type 'object' at its root", copy.get("type")
            )
        properties = copy.get("properties", {})
        required = copy.get("required", [])
        for reserved in RESERVED_ARGUMENTS:
            declared = isinstance(properties, Mapping) and reserved in properties
            if declared or (isinstance(required, list) and reserved in required):
                raise _refuse(
                    name,
                    reserved,
                    "is a reserved argument name and may not appear in input_schema",
                )
        problems = check_schema(copy)
        if problems:
            listed = "; ".join(problems[:_SHOWN_PROBLEMS])
            more = len(problems) - _SHOWN_PROBLEMS
            suffix = f"; and {more} more" if more > 0 else ""
            raise _refuse(name, "input_schema", f"is not usable: {listed}{suffix}")
        return copy

    def _check_signature(self) -> None:
        try:
            signature = inspect.signature(self.fn)
        except (TypeError, ValueError):
            return  # some builtins have no signature; the call itself will tell
        try:
            signature.bind(None, None)
        except TypeError as exc:
            raise _refuse(self.name, "fn", f"must accept (args, ctx): {exc}") from exc

    @classmethod
    def from_struct(
        cls,
        name: str,
        description: str,
        args_type: type[msgspec.Struct],
        fn: ToolFn,
        **options: Any,
    ) -> Tool:
        """A tool whose schema comes from ``args_type`` and whose ``fn`` receives an instance.

        Arguments are checked against the derived schema, then decoded into ``args_type``
        (strictly: no string-to-number coercion); a decoding failure is an invalid-args
        observation, and the tool is not run.
        """
        try:
            schema = schema_for(args_type)
        except ToolDefinitionError as exc:
            exc.context.setdefault("tool", name)
            raise
        return cls(name, description, schema, fn, args_type=args_type, **options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the tool's own function directly (no validation, no context unless given):
        ``lookup_order("1042")`` for a tool built by ``tool``, ``fn(args, ctx)`` otherwise."""
        target = self.function if self.function is not None else self.fn
        return target(*args, **kwargs)

    def schema(self) -> ToolSchema:
        """The tool as the model is told about it."""
        return ToolSchema(
            name=self.name,
            description=self.description,
            input_schema=msgspec.json.decode(msgspec.json.encode(self.input_schema)),
        )
