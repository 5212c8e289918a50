"""A tool's period declaration: ``Period``, shorthand expansion, decoding and the checks made
when the tool is defined (docs/time.md#period-forms-a-tool-declares).

A period is declared with **shorthand** (``argument`` plus ``spelling`` or ``accepts``, and
``zoneArgument`` for ``wall-range``) or with explicit **forms**, never both, plus the facts
about the tool's data and the missing-period rule. Keys are camelCase in TOML and JSON and
snake_case as Python keywords (docs/architecture.md#decision-10-config-keys-are-camelcase). Every
problem raises ``PeriodDeclarationError`` naming the field by its wire path (``zoneArgument``,
``forms[1].to.edge``).

Readings settled here:

* ``period_from_wire`` is the decoder for TOML/JSON values: it names an unknown key itself
  (at any depth, before anything else), turns the decoder's type errors into
  ``PeriodDeclarationError`` with their path, and prefixes a form's own errors with
  ``forms[i]``. Decoding with ``msgspec`` directly also refuses unknown keys, but as a
  ``msgspec.ValidationError``.
* Shorthand without ``argument`` (a ``spelling``, ``accepts`` or ``zoneArgument`` alone), both
  ``spelling`` and ``accepts``, an empty ``accepts`` and a ``zoneArgument`` equal to
  ``argument`` are refused as well; an ``argument`` alone is allowed and yields no forms
  (docs/time.md#declaring-a-period).
* ``assume`` takes a duration with any of ``smhdw``, like the facts.
* For the input-schema check, a property's ``type`` (a string or a list of strings) has to
  include ``string`` (or ``number``/``integer`` for epoch bounds, ``object`` for an object
  form); a property without ``type`` is refused. Inside an object form's property, a key that
  is declared with a ``type`` must fit its ``as``, and an undeclared key is refused only under
  ``additionalProperties: false``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal, get_args

import msgspec

from afp_runtime.errors import PeriodDeclarationError
from afp_runtime.time._check import check_choice, check_name, prefixed, refuse
from afp_runtime.time._durations import FACT_UNITS, is_duration
from afp_runtime.time._facts import Direction, Facts
from afp_runtime.time._forms import (
    EPOCH_AS,
    FORM_KINDS,
    Bound,
    BoundsForm,
    Form,
    JoinedForm,
    LookbackForm,
    ObjectForm,
    ObjectKeys,
    ZoneArgument,
    needs_zone,
    zone_argument_of,
)
from afp_runtime.time._wire import Wire

Spelling = Literal["lookback", "signed-lookback", "iso-range", "wall-range"]
"""A shorthand spelling (docs/time.md#declaring-a-period)."""

SPELLINGS: Final[tuple[str, ...]] = get_args(Spelling)

AS_SENT: Final = "as-sent"
"""The default missing-period rule: the call runs as the model sent it."""


class Assume(Wire, frozen=True, kw_only=True):
    """The missing-period rule ``assume(L)``: a span of length L ending now
    (docs/time.md#facts-about-the-data).

    Attributes:
        length: a duration (wire ``assume``: ``{"assume": "1h"}``).
    """

    length: str = msgspec.field(name="assume")


MissingRule = Literal["as-sent"] | Assume
"""``"as-sent"`` or ``Assume``; consulted only for ``no-window`` and ``several-mentions``."""


class Period(Wire, frozen=True, kw_only=True):
    """How a tool takes a period, and what it declares about its data
    (docs/time.md#period-forms-a-tool-declares).

    Attributes:
        argument: the shorthand's argument.
        spelling: the shorthand's spelling: ``lookback``, ``signed-lookback``, ``iso-range``
            or ``wall-range``.
        accepts: several spellings, expanded in the listed order (instead of ``spelling``).
        zone_argument: the zone argument of ``wall-range`` (wire ``zoneArgument``).
        forms: explicit forms (instead of the shorthand).
        direction: ``past``, ``future`` or ``any``.
        retention: how far back the data goes (a duration).
        max_range: the longest window one call can read (wire ``maxRange``).
        granularity: the data's time step (a duration).
        filters_to_asked: the tool discards anything outside ``ctx.time.asked`` (wire
            ``filtersToAsked``).
        wall_zone: ``"agent"``: local forms without a zone argument use the agent's zone (wire
            ``wallZone``).
        missing: ``"as-sent"`` (default) or ``Assume`` (``{"assume": "1h"}``).

    Raises:
        PeriodDeclarationError: the declaration breaks a rule of
        docs/time.md#validation-at-definition-time (names the wire field).
    """

    argument: str | None = None
    spelling: Spelling | None = None
    accepts: tuple[Spelling, ...] | None = None
    zone_argument: str | None = None
    forms: tuple[Form, ...] | None = None
    direction: Direction | None = None
    retention: str | None = None
    max_range: str | None = None
    granularity: str | None = None
    filters_to_asked: bool = False
    wall_zone: Literal["agent"] | None = None
    missing: MissingRule = "as-sent"

    def check_against(self, input_schema: Mapping[str, Any]) -> None:
        """Check the period's arguments against a tool's input schema (``check_against_schema``)."""
        check_against_schema(self, input_schema)

    def __post_init__(self) -> None:
        # Lists given in Python become tuples, so a period stays immutable and hashable.
        for name in ("accepts", "forms"):
            value = getattr(self, name)
            if isinstance(value, list):
                msgspec.structs.force_setattr(self, name, tuple(value))
        _check_shorthand(self)
        _check_forms(self.forms)
        facts_of(self)  # the facts check their own values
        _check_missing(self.missing)
        if self.wall_zone is None:
            for index, form in enumerate(forms_of(self)):
                if needs_zone(form) and zone_argument_of(form) is None:
                    raise refuse(
                        f"forms[{index}].zone",
                        "is needed by a wall, date or day form unless the period declares "
                        'wallZone: "agent"',
                    )


def _spellings(period: Period) -> tuple[str, ...]:
    if period.spelling is not None:
        return (period.spelling,)
    return tuple(period.accepts or ())


def _check_shorthand(period: Period) -> None:
    shorthand = {
        "argument": period.argument,
        "spelling": period.spelling,
        "accepts": period.accepts,
        "zoneArgument": period.zone_argument,
    }
    given = [key for key, value in shorthand.items() if value is not None]
    if period.forms is not None and given:
        raise refuse("forms", f"cannot be declared together with shorthand ({', '.join(given)})")
    if period.spelling is not None and period.accepts is not None:
        raise refuse("accepts", "cannot be declared together with spelling")
    if period.spelling is not None:
        check_choice(period.spelling, SPELLINGS, "spelling")
    if period.accepts is not None:
        if not isinstance(period.accepts, tuple) or not period.accepts:
            raise refuse("accepts", "must list at least one spelling", period.accepts)
        for index, item in enumerate(period.accepts):
            check_choice(item, SPELLINGS, f"accepts[{index}]")
    if period.argument is None:
        if given:
            raise refuse("argument", f"is required with {', '.join(given)}")
        return
    check_name(period.argument, "argument")
    spellings = _spellings(period)
    if period.zone_argument is None:
        if "wall-range" in spellings:
            raise refuse("zoneArgument", "is required by the wall-range spelling")
        return
    if "wall-range" not in spellings:
        raise refuse(
            "zoneArgument", "is only used by the wall-range spelling", period.zone_argument
        )
    check_name(period.zone_argument, "zoneArgument")
    if period.zone_argument == period.argument:
        raise refuse("zoneArgument", "must differ from argument", period.zone_argument)


def _check_forms(forms: object) -> None:
    if forms is None:
        return
    if not isinstance(forms, tuple):
        raise refuse("forms", "must be a list of forms", forms)
    for index, form in enumerate(forms):
        if not isinstance(form, Form):
            raise refuse(f"forms[{index}]", "must be a period form", form)


def _check_missing(missing: object) -> None:
    if missing == AS_SENT:
        return
    if not isinstance(missing, Assume):
        raise refuse("missing", 'must be "as-sent" or {"assume": "<duration>"}', missing)
    if not is_duration(missing.length, FACT_UNITS):
        raise refuse("missing.assume", "must be a duration such as 1h", missing.length)


def _expand(argument: str, spelling: str, zone_argument: str | None) -> Form:
    if spelling in ("lookback", "signed-lookback"):
        return LookbackForm(argument=argument, signed=spelling == "signed-lookback")
    if spelling == "iso-range":
        return JoinedForm(argument=argument, as_="iso", joiner="..", edge="inclusive")
    assert zone_argument is not None  # checked when the period was made
    zone = ZoneArgument(argument=zone_argument)
    return JoinedForm(argument=argument, as_="wall", joiner="..", edge="inclusive", zone=zone)


def forms_of(period: Period) -> tuple[Form, ...]:
    """The forms a period produces: its explicit ``forms``, or its shorthand expanded
    (docs/time.md#declaring-a-period).

    ``lookback`` → ``{lookback, signed: false}``; ``signed-lookback`` → ``{lookback, signed:
    true}``; ``iso-range`` → ``{joined, as: iso, joiner: "..", edge: inclusive}``;
    ``wall-range`` → the same with ``as: wall`` and the zone argument. ``accepts`` expands in
    its listed order. An ``argument`` without a spelling yields no forms.
    """
    if period.forms is not None:
        return period.forms
    if period.argument is None:
        return ()
    return tuple(
        _expand(period.argument, spelling, period.zone_argument) for spelling in _spellings(period)
    )


def facts_of(period: Period) -> Facts:
    """The facts a period declares about the tool's data (docs/time.md#facts-about-the-data)."""
    return Facts(**{name: getattr(period, name) for name in Facts.__struct_fields__})


# --- decoding ---------------------------------------------------------------------------------

_AT = re.compile(r"(?P<detail>.*?) - at `\$(?P<path>.*)`", re.DOTALL)
_SNAKE = re.compile(r"_([a-z])")


def _wire_keys(struct: type[msgspec.Struct]) -> frozenset[str]:
    return frozenset(field.encode_name for field in msgspec.structs.fields(struct))


_PERIOD_KEYS: Final = _wire_keys(Period)
_PART_KEYS: Final[dict[str, frozenset[str]]] = {
    "bound": _wire_keys(Bound),
    "zone": _wire_keys(ZoneArgument),
    "keys": _wire_keys(ObjectKeys),
}


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _check_keys(value: Mapping[Any, Any], known: frozenset[str], prefix: str) -> None:
    for key in value:
        if key in known:
            continue
        hint = ""
        if isinstance(key, str):
            camel = _SNAKE.sub(lambda found: found.group(1).upper(), key)
            if camel != key and camel in known:
                hint = f" (the key is spelled {camel})"
        raise refuse(
            _join(prefix, str(key)),
            f"is not a known key{hint}; known keys: {', '.join(sorted(known))}",
        )


def _from_validation(exc: msgspec.ValidationError, prefix: str) -> PeriodDeclarationError:
    text = str(exc)
    found = _AT.fullmatch(text)
    detail, path = (found.group("detail"), found.group("path")) if found else (text, "")
    field = (prefix + path) if path.startswith("[") else _join(prefix, path.lstrip("."))
    return refuse(field or "period", f"is invalid: {detail}")


def _form_from_wire(raw: object, prefix: str) -> Form:
    if not isinstance(raw, Mapping):
        raise refuse(prefix, "must be an object with a kind", raw)
    kind = raw.get("kind")
    form_type = FORM_KINDS.get(kind) if isinstance(kind, str) else None
    if form_type is None:
        raise refuse(_join(prefix, "kind"), f"must be one of {', '.join(FORM_KINDS)}", kind)
    _check_keys(raw, _wire_keys(form_type) | {"kind"}, prefix)
    for key, part in (("from", "bound"), ("to", "bound"), ("zone", "zone"), ("keys", "keys")):
        nested = raw.get(key)
        if isinstance(nested, Mapping):
            _check_keys(nested, _PART_KEYS[part], _join(prefix, key))
    try:
        form = msgspec.convert(raw, form_type)
    except msgspec.ValidationError as exc:
        raise _from_validation(exc, prefix) from exc
    except PeriodDeclarationError as exc:
        raise prefixed(exc, prefix) from exc
    assert isinstance(form, Form)
    return form


def period_from_wire(value: object) -> Period:
    """Decode a period declaration from its TOML/JSON value (camelCase keys,
    docs/time.md#declaring-a-period).

    Raises:
        PeriodDeclarationError: an unknown key (named as written, e.g. ``zone_argument``), a
            value of the wrong type, or any rule of docs/time.md#validation-at-definition-time; the
            field is named by its path.
    """
    if not isinstance(value, Mapping):
        raise refuse("period", "must be an object", value)
    _check_keys(value, _PERIOD_KEYS, "")
    decoded = dict(value)
    forms = value.get("forms")
    if isinstance(forms, list | tuple):
        decoded["forms"] = [
            _form_from_wire(raw, f"forms[{index}]") for index, raw in enumerate(forms)
        ]
    missing = value.get("missing")
    if isinstance(missing, Mapping):
        _check_keys(missing, _wire_keys(Assume), "missing")
    try:
        return msgspec.convert(decoded, Period)
    except msgspec.ValidationError as exc:
        raise _from_validation(exc, "") from exc


# --- the input schema -------------------------------------------------------------------------


def _need_of(as_: str) -> str:
    return "number" if as_ in EPOCH_AS else "string"


def _requirements(period: Period) -> Iterator[tuple[str, str, str, Form]]:
    """(argument, wire path, needed type, form) for every argument the forms mention."""
    shorthand = period.forms is None
    for index, form in enumerate(forms_of(period)):
        base = f"forms[{index}]"
        if isinstance(form, BoundsForm):
            yield form.start.argument, f"{base}.from.argument", _need_of(form.start.as_), form
            yield form.end.argument, f"{base}.to.argument", _need_of(form.end.as_), form
        else:
            need = "object" if isinstance(form, ObjectForm) else "string"
            path = "argument" if shorthand else f"{base}.argument"
            yield form.argument, path, need, form
        zone = zone_argument_of(form)
        if zone is not None:
            yield zone, "zoneArgument" if shorthand else f"{base}.zone.argument", "string", form


def _types(schema: Mapping[str, Any]) -> frozenset[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list):
        return frozenset(item for item in declared if isinstance(item, str))
    return frozenset()


def _fits(types: frozenset[str], need: str) -> bool:
    if need == "number":
        return bool(types & {"number", "integer"})
    return need in types


def _check_object_keys(form: ObjectForm, schema: Mapping[str, Any], path: str) -> None:
    inner = schema.get("properties")
    inner = inner if isinstance(inner, Mapping) else {}
    closed = schema.get("additionalProperties") is False
    for key, where in ((form.keys.start, "keys.from"), (form.keys.end, "keys.to")):
        field = f"{path.removesuffix('.argument')}.{where}"
        declared = inner.get(key)
        if not isinstance(declared, Mapping):
            if closed:
                raise refuse(field, f"names {key!r}, which the object's schema does not allow")
            continue
        types = _types(declared)
        if types and not _fits(types, _need_of(form.as_)):
            raise refuse(
                field,
                f"names {key!r}, typed {sorted(types)}; an {form.as_} value needs a "
                f"{_need_of(form.as_)}",
            )


def check_against_schema(period: Period, input_schema: Mapping[str, Any]) -> None:
    """Check a period's arguments against the tool's input schema
    (docs/time.md#validation-at-definition-time).

    Every argument a form mentions (zone arguments included) must be a property of the
    schema; an epoch bound's property must be a number or integer, every other bound's (and a
    joined, day, look-back or zone argument's) a string, an object form's an object.

    Raises:
        PeriodDeclarationError: naming the period field whose argument is at fault.
    """
    properties = input_schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = input_schema.get("required")
    required = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    for argument, path, need, form in _requirements(period):
        schema = properties.get(argument)
        if not isinstance(schema, Mapping):
            raise refuse(path, f"names {argument!r}, which the input schema does not define")
        if argument in required:
            # A call without it would be refused as invalid before the runtime could fill it.
            raise refuse(
                path,
                f"names {argument!r}, which the input schema requires; the runtime fills an "
                "omitted period, so it must be optional (give the parameter a default)",
            )
        types = _types(schema)
        if not _fits(types, need):
            written = sorted(types) if types else "no type"
            raise refuse(
                path,
                f"names {argument!r}, whose schema type is {written}; it must be a {need}",
            )
        if isinstance(form, ObjectForm) and need == "object":
            _check_object_keys(form, schema, path)
