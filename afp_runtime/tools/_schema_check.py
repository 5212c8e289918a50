"""Checking a tool's input schema when the tool is declared: the keywords of the subset
``afp_runtime.tools.schema`` documents must be well formed, a ``$ref`` must point inside the
schema and must not lead back to itself without descending into the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from afp_runtime.tools.schema import (
    JSON_TYPES,
    Path,
    SchemaPass,
    describe,
    is_number,
    json_text,
    json_type,
    resolve_ref,
)


def check_schema(schema: Any) -> tuple[str, ...]:
    """Check that the keywords of the subset are well-formed in ``schema``.

    Keywords outside the subset, and schemas nested inside them, are not looked at.

    Returns:
        One text per problem, naming the keyword's path in the schema (``(schema)`` for the root);
        empty when the schema is usable.
    """
    problems: list[str] = []
    _SchemaChecker(schema, problems).walk(schema, ())
    return tuple(problems)


_SCHEMA_ROOT = "(schema)"
_COUNT_KEYWORDS = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
)


# Far beyond any real tool's schema, well within Python's recursion limit.
_DEEPEST_SCHEMA_PATH = 200


def _loops_on_one_value(root: Any, start: Mapping[str, Any]) -> bool:
    """Whether ``start`` reaches itself again through ``$ref``, ``anyOf``, ``oneOf`` and
    ``allOf`` alone: the edges along which a validator checks the same value again."""
    seen: set[int] = set()
    stack: list[Any] = [resolve_ref(root, start["$ref"])]
    while stack:
        node = stack.pop()
        if node is start:
            return True
        if not isinstance(node, Mapping) or id(node) in seen:
            continue
        seen.add(id(node))
        ref = node.get("$ref")
        if isinstance(ref, str):
            stack.append(resolve_ref(root, ref))
        for keyword in ("anyOf", "oneOf", "allOf"):
            parts = node.get(keyword)
            if isinstance(parts, list):
                stack.extend(parts)
    return False


class _SchemaChecker(SchemaPass):
    """Walks the subset's keywords of a schema and reports malformed ones."""

    root_name = _SCHEMA_ROOT

    def walk(self, node: Any, path: Path) -> None:
        if isinstance(node, bool):
            return
        if len(path) > _DEEPEST_SCHEMA_PATH:
            self.add(path, f"a schema nests deeper than {_DEEPEST_SCHEMA_PATH} keys")
            return
        if not isinstance(node, Mapping):
            self.add(path, f"a schema must be an object or a boolean, not {json_type(node)}")
            return
        self._check_type(node, path)
        if "enum" in node and not isinstance(node["enum"], list):
            self.add((*path, "enum"), "must be an array of allowed values")
        for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if keyword in node and not (is_number(node[keyword]) and math.isfinite(node[keyword])):
                self.add((*path, keyword), f"must be a number, not {describe(node[keyword])}")
        for keyword in _COUNT_KEYWORDS:
            count = node.get(keyword, 0)
            if not (isinstance(count, int) and not isinstance(count, bool) and count >= 0):
                self.add((*path, keyword), f"must be an integer >= 0, not {describe(count)}")
        step = node.get("multipleOf", 1)
        if not (is_number(step) and math.isfinite(step) and step > 0):
            self.add((*path, "multipleOf"), f"must be a number > 0, not {describe(step)}")
        if "pattern" in node:
            pattern = node["pattern"]
            if not isinstance(pattern, str):
                self.add((*path, "pattern"), f"must be a string, not {describe(pattern)}")
            else:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    self.add((*path, "pattern"), f"is not a regular expression: {exc}")
        for keyword in ("anyOf", "oneOf", "allOf"):
            if keyword not in node:
                continue
            parts = node[keyword]
            if not isinstance(parts, list) or not parts:
                self.add((*path, keyword), "must be a non-empty array of schemas")
                continue
            for index, sub in enumerate(parts):
                self.walk(sub, (*path, keyword, index))
        self._check_object_keywords(node, path)
        self._check_array_keywords(node, path)
        self._check_refs(node, path)

    def _check_type(self, node: Mapping[str, Any], path: Path) -> None:
        if "type" not in node:
            return
        names = node["type"]
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, list) or not names:
            self.add((*path, "type"), "must be a type name or a non-empty array of them")
            return
        for name in names:
            if name not in JSON_TYPES:
                known = ", ".join(JSON_TYPES)
                self.add((*path, "type"), f"unknown type {json_text(name)} (known: {known})")

    def _check_object_keywords(self, node: Mapping[str, Any], path: Path) -> None:
        properties = node.get("properties", {})
        if isinstance(properties, Mapping):
            for key, sub in properties.items():
                self.walk(sub, (*path, "properties", key))
        else:
            self.add((*path, "properties"), "must be an object mapping names to schemas")
        required = node.get("required", [])
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            self.add((*path, "required"), "must be an array of property names")
        if "additionalProperties" in node:
            self.walk(node["additionalProperties"], (*path, "additionalProperties"))

    def _check_array_keywords(self, node: Mapping[str, Any], path: Path) -> None:
        if "items" in node:
            if isinstance(node["items"], list):
                self.add((*path, "items"), "the array form is not supported; use prefixItems")
            else:
                self.walk(node["items"], (*path, "items"))
        prefix = node.get("prefixItems", [])
        if isinstance(prefix, list):
            for index, sub in enumerate(prefix):
                self.walk(sub, (*path, "prefixItems", index))
        else:
            self.add((*path, "prefixItems"), "must be an array of schemas")

    def _check_refs(self, node: Mapping[str, Any], path: Path) -> None:
        if "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
                self.add(
                    (*path, "$ref"), f"only local references (#/...) work, not {json_text(ref)}"
                )
            elif resolve_ref(self.root, ref) is None:
                self.add((*path, "$ref"), f"{json_text(ref)} points at nothing in this schema")
            elif _loops_on_one_value(self.root, node):
                self.add(
                    (*path, "$ref"),
                    f"{json_text(ref)} leads back here through $ref, anyOf, oneOf or allOf alone, "
                    "without descending into the value: checking any value would never end",
                )
        for keyword in ("$defs", "definitions"):
            if keyword not in node:
                continue
            defs = node[keyword]
            if not isinstance(defs, Mapping):
                self.add((*path, keyword), "must be an object mapping names to schemas")
                continue
            for key, sub in defs.items():
                self.walk(sub, (*path, keyword, key))
