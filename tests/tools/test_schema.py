"""Argument validation: every keyword of the JSON Schema subset, with path-naming problems."""

from __future__ import annotations

from typing import Any

import pytest

from afp_runtime.tools import check_schema, format_path, validate_args


def obj(**properties: Any) -> dict[str, Any]:
    """An object schema with these properties."""
    return {"type": "object", "properties": properties}


class TestType:
    def test_wrong_type_names_the_path_and_value(self) -> None:
        """{"host": 3} against a required string `host` names `host`, the expected and got."""
        schema = {**obj(host={"type": "string"}), "required": ["host"]}
        assert validate_args(schema, {"host": 3}) == ("host: expected string, got integer 3",)

    @pytest.mark.parametrize(
        ("kind", "good", "bad"),
        [
            ("object", {}, []),
            ("array", [1], {}),
            ("string", "x", 1),
            ("integer", 3, 3.5),
            ("number", 3.5, "3.5"),
            ("boolean", False, 0),
            ("null", None, False),
        ],
    )
    def test_each_type_accepts_and_refuses(self, kind: str, good: Any, bad: Any) -> None:
        """Each type name accepts a value of its type and refuses another."""
        schema = obj(v={"type": kind})
        assert validate_args(schema, {"v": good}) == ()
        assert validate_args(schema, {"v": bad})[0].startswith(f"v: expected {kind}, got ")

    @pytest.mark.parametrize("kind", ["integer", "number"])
    def test_bool_is_not_a_number(self, kind: str) -> None:
        """A boolean is neither an integer nor a number."""
        problems = validate_args(obj(n={"type": kind}), {"n": True})
        assert problems == (f"n: expected {kind}, got boolean true",)

    def test_integral_float_is_an_integer(self) -> None:
        """A number with no fractional part counts as an integer, as JSON Schema says."""
        assert validate_args(obj(n={"type": "integer"}), {"n": 3.0}) == ()

    def test_list_of_types_accepts_any(self) -> None:
        """A list of types accepts a value of any of them and names them all when refusing."""
        schema = obj(v={"type": ["string", "null"]})
        assert validate_args(schema, {"v": None}) == ()
        assert validate_args(schema, {"v": 1.5}) == ("v: expected string or null, got number 1.5",)

    def test_root_must_be_an_object(self) -> None:
        """Arguments that are not an object are named by the root path."""
        problems = validate_args({"type": "object"}, [1])
        assert problems == ("(arguments): expected object, got array",)

    def test_wrong_type_reports_only_the_type(self) -> None:
        """A value of the wrong type gets one problem, not one per keyword."""
        schema = obj(v={"type": "string", "minLength": 3, "enum": ["abc"]})
        assert len(validate_args(schema, {"v": 1})) == 1

    def test_long_string_is_shortened_in_the_problem(self) -> None:
        """A long offending string is shown cut, with its length."""
        (problem,) = validate_args(obj(v={"type": "integer"}), {"v": "y" * 500})
        assert "(500 characters)" in problem
        assert len(problem) < 120


class TestValues:
    def test_enum(self) -> None:
        """enum accepts a listed value and refuses another, listing the allowed values."""
        schema = obj(mode={"enum": ["fast", "safe", 3]})
        assert validate_args(schema, {"mode": "safe"}) == ()
        assert validate_args(schema, {"mode": "slow"}) == (
            'mode: must be one of "fast", "safe", 3; got string "slow"',
        )

    def test_enum_compares_as_json(self) -> None:
        """enum treats 1 and 1.0 as equal but never true and 1."""
        schema = obj(v={"enum": [1, [1, {"a": 2}]]})
        assert validate_args(schema, {"v": 1.0}) == ()
        assert validate_args(schema, {"v": [1.0, {"a": 2}]}) == ()
        assert validate_args(schema, {"v": True}) != ()

    def test_const(self) -> None:
        """const accepts exactly its value and names it when refusing."""
        schema = obj(kind={"const": "probe"})
        assert validate_args(schema, {"kind": "probe"}) == ()
        assert validate_args(schema, {"kind": "other"}) == (
            'kind: must be "probe", got string "other"',
        )

    def test_const_false_is_not_zero(self) -> None:
        """const false refuses 0."""
        assert validate_args(obj(f={"const": False}), {"f": 0}) == (
            "f: must be false, got integer 0",
        )


class TestNumbers:
    @pytest.mark.parametrize(
        ("keyword", "limit", "ok", "bad", "why"),
        [
            ("minimum", 1, 1, 0, "must be at least 1, got 0"),
            ("maximum", 10, 10, 11, "must be at most 10, got 11"),
            ("exclusiveMinimum", 0, 0.5, 0, "must be greater than 0, got 0"),
            ("exclusiveMaximum", 1, 0.5, 1.0, "must be less than 1, got 1.0"),
        ],
    )
    def test_bounds(self, keyword: str, limit: float, ok: float, bad: float, why: str) -> None:
        """Each numeric bound accepts a value within it and refuses one outside."""
        schema = obj(n={"type": "number", keyword: limit})
        assert validate_args(schema, {"n": ok}) == ()
        assert validate_args(schema, {"n": bad}) == (f"n: {why}",)

    def test_bounds_ignore_other_types(self) -> None:
        """Numeric bounds do not apply to strings or booleans."""
        assert validate_args(obj(n={"minimum": 5}), {"n": "1"}) == ()
        assert validate_args(obj(n={"minimum": 5}), {"n": False}) == ()


class TestStrings:
    def test_min_length(self) -> None:
        """minLength refuses a string shorter than it."""
        schema = obj(s={"type": "string", "minLength": 3})
        assert validate_args(schema, {"s": "abc"}) == ()
        assert validate_args(schema, {"s": "ab"}) == ("s: must have at least 3 characters, got 2",)

    def test_max_length(self) -> None:
        """maxLength refuses a string longer than it."""
        schema = obj(s={"type": "string", "maxLength": 1})
        assert validate_args(schema, {"s": "ab"}) == ("s: must have at most 1 character, got 2",)

    def test_length_counts_code_points(self) -> None:
        """Lengths count code points: an emoji is one character."""
        schema = obj(s={"type": "string", "maxLength": 2})
        assert validate_args(schema, {"s": "🙂🙂"}) == ()
        assert validate_args(schema, {"s": "🙂🙂🙂"}) != ()


class TestArrays:
    def test_items_name_the_index(self) -> None:
        """items checks every element and names it by index, down into objects."""
        schema = obj(
            items={
                "type": "array",
                "items": {**obj(name={"type": "string"}), "required": ["name"]},
            }
        )
        args = {"items": [{"name": "a"}, {"name": "b"}, {"name": 7}, {}]}
        assert validate_args(schema, args) == (
            "items[2].name: expected string, got integer 7",
            "items[3].name: required property missing",
        )

    def test_min_and_max_items(self) -> None:
        """minItems and maxItems bound the number of elements."""
        schema = obj(a={"type": "array", "minItems": 1, "maxItems": 2})
        assert validate_args(schema, {"a": [1]}) == ()
        assert validate_args(schema, {"a": []}) == ("a: must have at least 1 item, got 0",)
        assert validate_args(schema, {"a": [1, 2, 3]}) == ("a: must have at most 2 items, got 3",)

    def test_prefix_items_and_closed_tail(self) -> None:
        """prefixItems checks leading elements; items false then forbids further ones."""
        schema = obj(
            pair={
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "items": False,
            }
        )
        assert validate_args(schema, {"pair": [1, "a"]}) == ()
        assert validate_args(schema, {"pair": ["a", "a"]}) == (
            'pair[0]: expected integer, got string "a"',
        )
        assert validate_args(schema, {"pair": [1, "a", 2]}) == (
            "pair: must have at most 2 items, got 3",
        )

    def test_items_after_prefix(self) -> None:
        """items covers only the elements after prefixItems."""
        schema = obj(
            row={"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "number"}}
        )
        assert validate_args(schema, {"row": ["label", 1, 2.5]}) == ()
        assert validate_args(schema, {"row": ["label", "x"]}) == (
            'row[1]: expected number, got string "x"',
        )


class TestObjects:
    def test_required_names_each_missing_property(self) -> None:
        """required reports each missing property by its own path."""
        schema = {**obj(a={}, b={}), "required": ["a", "b"]}
        assert validate_args(schema, {}) == (
            "a: required property missing",
            "b: required property missing",
        )

    def test_additional_properties_false(self) -> None:
        """additionalProperties false refuses an undeclared property and lists the allowed."""
        schema = {**obj(host={"type": "string"}), "additionalProperties": False}
        assert validate_args(schema, {"host": "h", "port": 1}) == (
            "port: unexpected property (allowed: host)",
        )

    def test_additional_properties_schema(self) -> None:
        """additionalProperties as a schema checks every undeclared property."""
        schema = {"type": "object", "additionalProperties": {"type": "integer"}}
        assert validate_args(schema, {"a": 1, "b c": "x"}) == (
            '["b c"]: expected integer, got string "x"',
        )

    def test_nested_paths(self) -> None:
        """Problems deep in objects and arrays carry the full dotted path."""
        schema = obj(cfg=obj(servers={"type": "array", "items": obj(port={"type": "integer"})}))
        assert validate_args(schema, {"cfg": {"servers": [{"port": 1}, {"port": "x"}]}}) == (
            'cfg.servers[1].port: expected integer, got string "x"',
        )

    def test_properties_ignore_non_objects(self) -> None:
        """Object keywords do not apply to a value that is not an object."""
        schema = {"properties": {"a": {"type": "string"}}, "required": ["a"]}
        assert validate_args(obj(v=schema), {"v": 5}) == ()


class TestRefs:
    def test_local_ref_to_defs(self) -> None:
        """A local $ref to #/$defs/... is followed."""
        schema = {
            **obj(target={"$ref": "#/$defs/Target"}),
            "$defs": {"Target": {**obj(port={"type": "integer"}), "required": ["port"]}},
        }
        assert validate_args(schema, {"target": {"port": 1}}) == ()
        assert validate_args(schema, {"target": {}}) == ("target.port: required property missing",)

    def test_recursive_ref(self) -> None:
        """A self-referencing schema validates a tree to any depth."""
        node = {**obj(value={"type": "integer"}), "additionalProperties": False}
        node["properties"]["children"] = {"type": "array", "items": {"$ref": "#/$defs/Node"}}
        schema = {"$ref": "#/$defs/Node", "type": "object", "$defs": {"Node": node}}
        args = {"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]}
        assert validate_args(schema, args) == (
            'children[0].children[0].value: expected integer, got string "x"',
        )

    def test_ref_loop_terminates(self) -> None:
        """A $ref cycle that never descends into the value does not loop forever."""
        schema = {"type": "object", "$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#"}}}
        assert validate_args(schema, {}) == ()


class TestIgnoredKeywords:
    def test_keywords_outside_the_subset_are_ignored(self) -> None:
        """format, not, uniqueItems and other keywords outside the subset never fail a value."""
        schema = obj(
            a={"not": {"type": "string"}},
            b={"type": "string", "format": "email"},
            c={"type": "array", "uniqueItems": True},
        )
        assert validate_args(schema, {"a": "text", "b": "y", "c": [1, 1]}) == ()

    def test_combinations_patterns_and_steps_are_checked(self) -> None:
        """anyOf, oneOf, allOf, pattern, multipleOf and property counts fail the values they
        exclude, each naming its path."""
        schema = obj(
            a={"anyOf": [{"type": "integer"}, {"type": "null"}]},
            b={"type": "string", "pattern": "^x"},
            c={"type": "number", "multipleOf": 5},
            d={"oneOf": [{"type": "integer"}, {"type": "number"}]},
            e={"allOf": [{"type": "integer"}, {"minimum": 2}]},
            f={"type": "object", "minProperties": 1, "maxProperties": 1},
        )
        good = {"a": None, "b": "xy", "c": 10, "d": 1.5, "e": 3, "f": {"k": 1}}
        assert validate_args(schema, good) == ()
        bad = {"a": "text", "b": "yx", "c": 3, "d": 2, "e": 1, "f": {}}
        assert validate_args(schema, bad) == (
            'a: matches none of 2 alternatives: expected integer, got string "text"; '
            'or expected null, got string "text"',
            'b: must match the pattern "^x", got string "yx"',
            "c: must be a multiple of 5, got 3",
            "d: matches 2 alternatives; exactly one must match",
            "e: must be at least 2, got 1",
            "f: must have at least 1 property, got 0",
        )

    def test_boolean_schemas(self) -> None:
        """The schema true accepts anything; false refuses any value."""
        schema = obj(anything=True, nothing=False)
        assert validate_args(schema, {"anything": [1, {"x": None}]}) == ()
        assert validate_args(schema, {"nothing": 1}) == ("nothing: no value is allowed here",)


class TestPathsAndSchemaChecks:
    def test_format_path(self) -> None:
        """Paths join keys with dots, indexes in brackets, and odd keys as quoted strings."""
        assert format_path(("items", 2, "name")) == "items[2].name"
        assert format_path(("a b", 0)) == '["a b"][0]'
        assert format_path(()) == "(arguments)"

    def test_check_schema_accepts_msgspec_style_schemas(self) -> None:
        """A well-formed schema using keywords inside and outside the subset has no problems."""
        schema = {
            "type": "object",
            "properties": {
                "t": {"anyOf": [{"type": "array", "prefixItems": [], "items": False}]},
                "p": {"type": "string", "pattern": "^[a-z]+$", "format": "email"},
                "n": {"type": "integer", "exclusiveMinimum": 0, "default": 1},
            },
            "required": ["n"],
            "$defs": {"X": {"type": "string", "minLength": 0}},
        }
        assert check_schema(schema) == ()

    @pytest.mark.parametrize(
        ("schema", "path"),
        [
            ({"type": "text"}, "type"),
            ({"type": []}, "type"),
            ({"enum": "a"}, "enum"),
            ({"required": "a"}, "required"),
            ({"minLength": -1}, "minLength"),
            ({"maxItems": True}, "maxItems"),
            ({"maximum": "9"}, "maximum"),
            ({"items": [{"type": "string"}]}, "items"),
            ({"properties": {"a": 3}}, "properties.a"),
            ({"additionalProperties": "no"}, "additionalProperties"),
            ({"$ref": "http://example.com/s.json"}, "$ref"),
            ({"pattern": "(unclosed"}, "pattern"),
            ({"pattern": 3}, "pattern"),
            ({"multipleOf": 0}, "multipleOf"),
            ({"anyOf": []}, "anyOf"),
            ({"oneOf": [{"type": "nope"}]}, "oneOf[0].type"),
            ({"minProperties": -2}, "minProperties"),
        ],
    )
    def test_check_schema_names_the_bad_keyword(self, schema: dict[str, Any], path: str) -> None:
        """A malformed keyword of the subset is reported at its path in the schema."""
        problems = check_schema(schema)
        assert problems
        assert problems[0].startswith(f"{path}:")


LOOPING = {
    "type": "object",
    "properties": {"q": {"$ref": "#/$defs/A"}},
    "$defs": {"A": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/A"}]}},
}


def test_a_ref_that_loops_on_one_value_is_refused_by_its_path() -> None:
    """A ``$ref`` that comes back to itself through ``anyOf`` (or ``$ref``, ``oneOf``,
    ``allOf``) without descending into the value is named when the schema is checked; a
    recursive schema that descends (a tree's ``items``) is fine."""
    [problem] = check_schema(LOOPING)
    assert problem.startswith("$defs.A.anyOf[1].$ref:") and "never end" in problem
    assert check_schema({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"})
    tree = {
        "$ref": "#/$defs/N",
        "$defs": {
            "N": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/N"}}}}
        },
    }
    assert check_schema(tree) == ()


def test_validating_against_a_looping_schema_ends() -> None:
    """Such a schema reached unchecked (an MCP server's) still validates in finite time (it
    used to recurse until the stack ran out): the loop is cut where it comes back, so that
    branch checks nothing further."""
    assert validate_args(LOOPING, {"q": "text"}) == ()
    assert validate_args(LOOPING, {"q": 1}) == ()


def test_a_schema_nested_beyond_reason_is_refused_not_a_recursion_error() -> None:
    """A schema nested thousands deep is a problem naming the depth, not a RecursionError."""
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "array", "items": deep}
    [problem] = check_schema(deep)
    assert "nests deeper than" in problem
