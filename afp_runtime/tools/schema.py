"""Tool argument validation: a documented subset of JSON Schema, implemented here.

docs/loop.md#planning-a-batch step 5 leaves the choice open; afp_runtime implements a subset itself
rather than adding the ``jsonschema`` dependency.

Supported keywords:

- ``type``: ``object``, ``array``, ``string``, ``integer``, ``number``, ``boolean``, ``null``, or
  a list of these (any one matches). A boolean is never an integer or a number; a number with no
  fractional part (``3.0``) counts as an integer, as JSON Schema says.
- ``enum`` and ``const``, compared as JSON values (``1`` equals ``1.0``; ``true`` never equals
  ``1``).
- ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum`` (numeric forms only) and
  ``multipleOf``, applied to numbers.
- ``minLength``, ``maxLength`` (counted in Unicode code points) and ``pattern`` (a Python regular
  expression, searched anywhere in the string as JSON Schema does), applied to strings.
- ``items``, ``prefixItems``, ``minItems``, ``maxItems``, applied to arrays; ``items`` covers the
  elements after those ``prefixItems`` describes (``items: false`` forbids any such element).
- ``properties``, ``required``, ``additionalProperties`` (a boolean or a schema),
  ``minProperties``, ``maxProperties``, applied to objects.
- ``anyOf`` (at least one matches), ``oneOf`` (exactly one), ``allOf`` (every one).
- ``$ref`` to a local JSON pointer (``#/$defs/Name``, ``#/definitions/Name``, ``#``), checked
  together with any keywords beside it.
- The boolean schemas ``true`` (anything) and ``false`` (nothing).

These are the keywords msgspec writes for the types a typed tool may take
(``afp_runtime/tools/functions.py``), so what such a schema accepts is what the declared types
decode. Every other keyword (``not``, ``format``, ``uniqueItems``, ``if``/``then``/``else``,
...) is ignored: it neither passes nor fails a value, and schemas nested inside it are not looked
at. A keyword that applies to one JSON type is skipped for values of other types, and a value of
the wrong ``type`` gets only that one problem.

Each problem starts with the path of the offending value, written like ``host``,
``items[2].name`` or ``labels["a b"]`` (``(arguments)`` for the arguments object itself), then
says what was wrong, e.g. ``host: expected string, got integer 3``.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

import msgspec

JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
"""The type names the ``type`` keyword accepts."""

ROOT = "(arguments)"
"""How a path names the arguments object itself."""

_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")
_SHOWN_STRING = 40
_SHOWN_CHOICES = 10

Path = tuple[str | int, ...]

# The numeric bounds: when a value fails each, and how the problem says it.
_BOUNDS: dict[str, tuple[Callable[[float, float], bool], str]] = {
    "minimum": (operator.lt, "at least"),
    "exclusiveMinimum": (operator.le, "greater than"),
    "maximum": (operator.gt, "at most"),
    "exclusiveMaximum": (operator.ge, "less than"),
}


def format_path(path: Sequence[str | int], root: str = ROOT) -> str:
    """Render a path as ``a.b[2]["odd key"]``; ``root`` when the path is empty."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json_text(part)}]"
    return out or root


# The JSON type of each exact type ``msgspec.json`` decodes to; subclasses take the long way.
_EXACT_TYPES: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    tuple: "array",
    dict: "object",
}
# No refs followed yet: one value shared by every property, item and call.
_NO_REFS: frozenset[int] = frozenset()


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value (a Python type name for anything else)."""
    exact = _EXACT_TYPES.get(type(value))
    if exact is not None:
        return exact
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def validate_args(schema: Mapping[str, Any] | bool, args: Any) -> tuple[str, ...]:
    """Check ``args`` against ``schema`` (the subset this module documents).

    Args:
        schema: a tool's input schema.
        args: the decoded arguments (normally a JSON object).

    Returns:
        One text per problem, each naming the offending path and why, in a deterministic order;
        empty when the arguments are valid.
    """
    problems: list[str] = []
    _Validator(schema, problems).check(schema, args, (), _NO_REFS)
    return tuple(problems)


def json_text(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        return repr(value)


def is_number(value: Any) -> TypeGuard[float]:
    kind = type(value)
    if kind is int or kind is float:
        return True
    return isinstance(value, int | float) and not isinstance(value, bool)


def describe(value: Any) -> str:
    """A short description of a value for a problem text: its JSON type and, if small, value."""
    kind = json_type(value)
    if kind in ("object", "array", "null") or kind not in JSON_TYPES:
        return kind
    if isinstance(value, str) and len(value) > _SHOWN_STRING:
        return f'{kind} {json_text(value[:_SHOWN_STRING])[:-1]}…" ({len(value)} characters)'
    return f"{kind} {json_text(value)}"


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: numbers by value, booleans never equal to numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    return bool(a == b)


def _type_matches(name: Any, value: Any) -> bool:
    match name:
        case "integer":
            if isinstance(value, float):
                return math.isfinite(value) and value.is_integer()
            return isinstance(value, int) and not isinstance(value, bool)
        case "number":
            return is_number(value)
        case _:
            return bool(json_type(value) == name)


def _choices(options: Sequence[Any]) -> str:
    shown = ", ".join(json_text(option) for option in options[:_SHOWN_CHOICES])
    more = len(options) - _SHOWN_CHOICES
    return f"{shown}, and {more} more" if more > 0 else shown


def _plural(count: float, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def resolve_ref(root: Any, ref: str) -> Any:
    """Follow a local JSON pointer (``#`` or ``#/a/b``) from the root schema; None if absent."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node = root
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


class SchemaPass:
    """One pass over a schema: the root schema (for ``$ref``) and the problems found so far,
    each led by its path (``root_name`` names the root)."""

    root_name = ROOT

    def __init__(self, root: Any, problems: list[str]) -> None:
        self.root = root
        self.problems = problems

    def add(self, path: Path, why: str) -> None:
        self.problems.append(f"{format_path(path, self.root_name)}: {why}")


class _Validator(SchemaPass):
    """One validation pass of a value."""

    def check(self, schema: Any, value: Any, path: Path, refs_here: frozenset[int]) -> None:
        """Validate ``value`` at ``path``; ``refs_here`` guards against ``$ref`` loops."""
        if schema is True:
            return
        if schema is False:
            self.add(path, "no value is allowed here")
            return
        if type(schema) is not dict and not isinstance(schema, Mapping):
            return  # a malformed schema; check_schema reports it when the tool is declared
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = resolve_ref(self.root, ref)
            if target is not None and id(target) not in refs_here:
                self.check(target, value, path, refs_here | {id(target)})
        if "type" in schema and not self._check_type(schema["type"], value, path):
            return
        # Each group of checks runs only where the node names one of its keywords (a node
        # usually names two or three of the twenty-odd): the checks themselves are unchanged.
        if not _VALUE_KEYS.isdisjoint(schema):
            self._check_values(schema, value, path)
        if not _COMBINATION_KEYS.isdisjoint(schema):
            self._check_combinations(schema, value, path, refs_here)
        if is_number(value):
            if not _NUMBER_KEYS.isdisjoint(schema):
                self._check_number(schema, value, path)
        elif isinstance(value, str):
            if not _STRING_KEYS.isdisjoint(schema):
                self._check_string(schema, value, path)
        elif isinstance(value, list | tuple):
            if not _ARRAY_KEYS.isdisjoint(schema):
                self._check_array(schema, value, path)
        elif isinstance(value, Mapping) and not _OBJECT_KEYS.isdisjoint(schema):
            self._check_object(schema, value, path)

    def _check_type(self, expected: Any, value: Any, path: Path) -> bool:
        if type(expected) is str and _type_matches(expected, value):
            return True
        names = [expected] if isinstance(expected, str) else expected
        if not isinstance(names, list) or any(_type_matches(name, value) for name in names):
            return True
        self.add(path, f"expected {' or '.join(map(str, names))}, got {describe(value)}")
        return False

    def _check_values(self, schema: Mapping[str, Any], value: Any, path: Path) -> None:
        options = schema.get("enum")
        if isinstance(options, list) and not any(_json_equal(value, o) for o in options):
            self.add(path, f"must be one of {_choices(options)}; got {describe(value)}")
        if "const" in schema and not _json_equal(value, schema["const"]):
            self.add(path, f"must be {json_text(schema['const'])}, got {describe(value)}")

    def _alternatives(
        self, schemas: list[Any], value: Any, path: Path, refs_here: frozenset[int]
    ) -> list[list[str]]:
        """Each schema's own problems for ``value`` (an empty list: it matches). The same value
        is checked, so the ``$ref`` guard carries on (a schema from an MCP server is not
        refused for a loop, ``_loops_on_one_value``)."""
        found: list[list[str]] = []
        for alternative in schemas:
            problems: list[str] = []
            _Validator(self.root, problems).check(alternative, value, path, refs_here)
            found.append(problems)
        return found

    def _check_combinations(
        self, schema: Mapping[str, Any], value: Any, path: Path, refs_here: frozenset[int]
    ) -> None:
        for keyword in ("anyOf", "oneOf"):
            alternatives = schema.get(keyword)
            if not isinstance(alternatives, list) or not alternatives:
                continue
            results = self._alternatives(alternatives, value, path, refs_here)
            matching = sum(1 for r in results if not r)
            if matching == 0:
                self.add(
                    path,
                    f"matches none of {_plural(len(results), 'alternative')}: "
                    + "; or ".join(_without_path(r[0], path) for r in results),
                )
            elif matching > 1 and keyword == "oneOf":
                self.add(path, f"matches {matching} alternatives; exactly one must match")
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            for part in all_of:
                self.check(part, value, path, refs_here)

    def _check_number(self, schema: Mapping[str, Any], value: float, path: Path) -> None:
        step = schema.get("multipleOf")
        if is_number(step) and step > 0 and not _is_multiple(value, step):
            self.add(path, f"must be a multiple of {json_text(step)}, got {json_text(value)}")
        for keyword, (fails, words) in _BOUNDS.items():
            limit = schema.get(keyword)
            if is_number(limit) and fails(value, limit):
                self.add(path, f"must be {words} {json_text(limit)}, got {json_text(value)}")

    def _check_count(
        self, schema: Mapping[str, Any], count: int, path: Path, what: str, noun: str
    ) -> None:
        """``min<what>`` and ``max<what>`` (``Length``, ``Items``, ``Properties``)."""
        least = schema.get(_MIN_KEYS[what])
        if is_number(least) and count < least:
            self.add(path, f"must have at least {_plural(least, noun)}, got {count}")
        most = schema.get(_MAX_KEYS[what])
        if is_number(most) and count > most:
            self.add(path, f"must have at most {_plural(most, noun)}, got {count}")

    def _check_string(self, schema: Mapping[str, Any], value: str, path: Path) -> None:
        self._check_count(schema, len(value), path, "Length", "character")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            compiled = _compiled(pattern)
            if compiled is not None and compiled.search(value) is None:
                self.add(
                    path, f"must match the pattern {json_text(pattern)}, got {describe(value)}"
                )

    def _check_array(self, schema: Mapping[str, Any], value: Sequence[Any], path: Path) -> None:
        count = len(value)
        self._check_count(schema, count, path, "Items", "item")
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        for index, (item_schema, item) in enumerate(zip(prefix, value, strict=False)):
            self.check(item_schema, item, (*path, index), _NO_REFS)
        rest = schema.get("items", True)
        if rest is False and count > len(prefix):
            self.add(path, f"must have at most {_plural(len(prefix), 'item')}, got {count}")
        elif isinstance(rest, Mapping):
            for index in range(len(prefix), count):
                self.check(rest, value[index], (*path, index), _NO_REFS)

    def _check_object(
        self, schema: Mapping[str, Any], value: Mapping[str, Any], path: Path
    ) -> None:
        self._check_count(schema, len(value), path, "Properties", "property")
        required = schema.get("required")
        if isinstance(required, list):
            for name in required:
                if isinstance(name, str) and name not in value:
                    self.add((*path, name), "required property missing")
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                self.check(properties[key], item, (*path, key), _NO_REFS)
            elif extra is False:
                allowed = ", ".join(map(str, properties)) or "none"
                self.add((*path, key), f"unexpected property (allowed: {allowed})")
            elif isinstance(extra, Mapping):
                self.check(extra, item, (*path, key), _NO_REFS)


# The keywords each group of checks reads (``_Validator.check`` skips a group naming none).
_VALUE_KEYS = frozenset({"enum", "const"})
_COMBINATION_KEYS = frozenset({"anyOf", "oneOf", "allOf"})
_NUMBER_KEYS = frozenset({"multipleOf", *_BOUNDS})
_STRING_KEYS = frozenset({"minLength", "maxLength", "pattern"})
_ARRAY_KEYS = frozenset({"minItems", "maxItems", "prefixItems", "items"})
_OBJECT_KEYS = frozenset(
    {"minProperties", "maxProperties", "required", "properties", "additionalProperties"}
)
_MIN_KEYS = {what: f"min{what}" for what in ("Length", "Items", "Properties")}
_MAX_KEYS = {what: f"max{what}" for what in ("Length", "Items", "Properties")}


def _without_path(problem: str, path: Path) -> str:
    """A problem text with the shared path prefix dropped (it is said once, before)."""
    prefix = f"{format_path(path)}: "
    return problem.removeprefix(prefix)


def _is_multiple(value: float, step: float) -> bool:
    if isinstance(value, int) and isinstance(step, int):
        return value % step == 0
    quotient = value / step
    return math.isfinite(quotient) and quotient.is_integer()


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None  # check_schema reports it when the tool is declared
