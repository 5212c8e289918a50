"""The five period form kinds a tool declares, and their bounds (docs/time.md#the-five-form-kinds).

A form says how a tool takes a period: two bound arguments (``bounds``), one joined string
(``joined``), one object (``object``), one local date (``day``) or one length ending now
(``lookback``). Forms are a tagged union on ``kind``; keys are camelCase on the wire.

Every form checks its own fields when it is made, in Python or by decoding, and raises
``PeriodDeclarationError`` naming the field relative to the form (``to.edge``, ``units``); the
period that holds it names the same field under ``forms[i]``. Whether a ``wall``, ``date`` or
``day`` form has a zone is the period's check (it depends on the period's ``wallZone``), and
whether arguments exist in the input schema is checked when the tool is defined.

Readings settled here:

* Python attribute names that are keywords get a trailing underscore: ``Bound.as_`` (wire
  ``as``); the ``from``/``to`` keys are ``start``/``end``.
* ``LookbackForm.signed`` defaults to false, the ``lookback`` spelling's value.
* ``joiner`` has no default (docs/time.md#the-five-form-kinds gives none); the shorthand writes
  ``".."``.
* A zone argument must differ from the form's other arguments, and a bound's ``edge`` may be
  given on ``from`` only as ``inclusive``.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

import msgspec

from afp_runtime.time._check import check_choice, check_duration, check_name, refuse
from afp_runtime.time._durations import LOOKBACK_UNITS, check_units
from afp_runtime.time._wire import Wire

BoundAs = Literal["iso", "epoch-ms", "epoch-s", "date", "wall"]
"""How one end is written: strict instant, epoch milliseconds or seconds, local date, or local
wall time without offset."""

Edge = Literal["inclusive", "exclusive"]
"""Whether a written end is the last instant covered or the first one not covered."""

Joiner = Literal["..", "/"]
"""What separates the two ends of a joined string."""

BOUND_AS: Final[tuple[str, ...]] = get_args(BoundAs)
EDGES: Final[tuple[str, ...]] = get_args(Edge)
JOINERS: Final[tuple[str, ...]] = get_args(Joiner)
ZONED_AS: Final[frozenset[str]] = frozenset({"date", "wall"})
"""Bound spellings that are local to a zone."""
EPOCH_AS: Final[frozenset[str]] = frozenset({"epoch-ms", "epoch-s"})


class ZoneArgument(Wire, frozen=True):
    """The argument a form writes the zone name into.

    Attributes:
        argument: the argument's name.
    """

    argument: str


class Bound(Wire, frozen=True):
    """One end of a ``bounds`` form.

    Attributes:
        argument: the argument that receives this end.
        as_: how the end is written (wire ``as``).
        edge: ``inclusive`` or ``exclusive``; mandatory on a ``to`` bound, and only
            ``inclusive`` (or absent) on a ``from`` bound.
    """

    argument: str
    as_: BoundAs = msgspec.field(name="as")
    edge: Edge | None = None


class ObjectKeys(Wire, frozen=True):
    """The two keys of an ``object`` form's value.

    Attributes:
        start: the key of the first end (wire ``from``).
        end: the key of the last end (wire ``to``); a different name.
    """

    start: str = msgspec.field(name="from")
    end: str = msgspec.field(name="to")


class _Form(Wire, frozen=True, tag_field="kind"):
    """Base of the form kinds (tagged on ``kind``)."""


def _check_zone(zone: object, others: tuple[str, ...]) -> None:
    if zone is None:
        return
    if not isinstance(zone, ZoneArgument):
        raise refuse("zone", "must be a zone argument {argument}", zone)
    check_name(zone.argument, "zone.argument")
    if zone.argument in others:
        raise refuse("zone.argument", "must differ from the form's other arguments", zone.argument)


def _check_bound(bound: object, field: str) -> None:
    if not isinstance(bound, Bound):
        raise refuse(field, "must be a bound {argument, as, edge?}", bound)
    check_name(bound.argument, f"{field}.argument")
    check_choice(bound.as_, BOUND_AS, f"{field}.as")
    if bound.edge is not None:
        check_choice(bound.edge, EDGES, f"{field}.edge")


class BoundsForm(_Form, frozen=True, tag="bounds"):
    """Two arguments, one per end (docs/time.md#the-five-form-kinds).

    Attributes:
        start: the ``from`` bound (wire ``from``); its edge can only be ``inclusive``.
        end: the ``to`` bound (wire ``to``); its edge is mandatory.
        zone: the argument that receives the zone name, if any.
        max_range: this form's own cap, a duration (wire ``maxRange``); it replaces the
            period's for this form.
    """

    start: Bound = msgspec.field(name="from")
    end: Bound = msgspec.field(name="to")
    zone: ZoneArgument | None = None
    max_range: str | None = None

    def __post_init__(self) -> None:
        _check_bound(self.start, "from")
        _check_bound(self.end, "to")
        if self.start.edge not in (None, "inclusive"):
            raise refuse("from.edge", "can only be inclusive", self.start.edge)
        if self.end.edge is None:
            raise refuse("to.edge", "is mandatory (inclusive or exclusive)")
        if self.end.argument == self.start.argument:
            raise refuse("to.argument", "must differ from from.argument", self.end.argument)
        _check_zone(self.zone, (self.start.argument, self.end.argument))
        check_duration(self.max_range, "maxRange")


class JoinedForm(_Form, frozen=True, tag="joined"):
    """One string ``a<joiner>b`` (docs/time.md#the-five-form-kinds).

    Attributes:
        argument: the argument that receives the string.
        as_: how both ends are written (wire ``as``).
        joiner: ``..`` or ``/``.
        edge: the ``to`` end's edge, ``inclusive`` by default.
        zone: the argument that receives the zone name, if any.
        max_range: this form's own cap (wire ``maxRange``).
    """

    argument: str
    as_: BoundAs = msgspec.field(name="as")
    joiner: Joiner
    edge: Edge = "inclusive"
    zone: ZoneArgument | None = None
    max_range: str | None = None

    def __post_init__(self) -> None:
        check_name(self.argument, "argument")
        check_choice(self.as_, BOUND_AS, "as")
        check_choice(self.joiner, JOINERS, "joiner")
        check_choice(self.edge, EDGES, "edge")
        _check_zone(self.zone, (self.argument,))
        check_duration(self.max_range, "maxRange")


class ObjectForm(_Form, frozen=True, tag="object"):
    """One object ``{keys.from: a, keys.to: b}`` (docs/time.md#the-five-form-kinds).

    Attributes:
        argument: the argument that receives the object.
        keys: the object's two key names.
        as_: how both ends are written (wire ``as``).
        edge: the ``to`` end's edge; mandatory.
        zone: the argument that receives the zone name, if any.
        max_range: this form's own cap (wire ``maxRange``).
    """

    argument: str
    keys: ObjectKeys
    as_: BoundAs = msgspec.field(name="as")
    edge: Edge | None = None
    zone: ZoneArgument | None = None
    max_range: str | None = None

    def __post_init__(self) -> None:
        check_name(self.argument, "argument")
        if not isinstance(self.keys, ObjectKeys):
            raise refuse("keys", "must be {from, to}", self.keys)
        check_name(self.keys.start, "keys.from")
        check_name(self.keys.end, "keys.to")
        if self.keys.start == self.keys.end:
            raise refuse("keys.to", "must differ from keys.from", self.keys.end)
        check_choice(self.as_, BOUND_AS, "as")
        if self.edge is None:
            raise refuse("edge", "is mandatory on an object form (inclusive or exclusive)")
        check_choice(self.edge, EDGES, "edge")
        _check_zone(self.zone, (self.argument,))
        check_duration(self.max_range, "maxRange")


class DayForm(_Form, frozen=True, tag="day"):
    """One local date ``YYYY-MM-DD`` (docs/time.md#the-five-form-kinds).

    Attributes:
        argument: the argument that receives the date.
        zone: the argument that receives the zone name, if any.
        max_range: this form's own cap (wire ``maxRange``).
    """

    argument: str
    zone: ZoneArgument | None = None
    max_range: str | None = None

    def __post_init__(self) -> None:
        check_name(self.argument, "argument")
        _check_zone(self.zone, (self.argument,))
        check_duration(self.max_range, "maxRange")


class LookbackForm(_Form, frozen=True, tag="lookback"):
    """One length ending now, ``<n><unit>``, with a leading ``-`` when signed
    (docs/time.md#the-five-form-kinds).

    Attributes:
        argument: the argument that receives the length.
        signed: whether the length is written with a leading ``-``.
        units: the unit letters allowed, distinct letters from ``smhdw``; ``mhdw`` when absent.
        max_range: this form's own cap (wire ``maxRange``).
    """

    argument: str
    signed: bool = False
    units: str | None = None
    max_range: str | None = None

    def __post_init__(self) -> None:
        check_name(self.argument, "argument")
        if not isinstance(self.signed, bool):
            raise refuse("signed", "must be true or false", self.signed)
        if self.units is not None:
            problem = check_units(self.units)
            if problem is not None:
                raise refuse("units", problem, self.units)
        check_duration(self.max_range, "maxRange")

    @property
    def letters(self) -> str:
        """The unit letters this form allows (``units``, else ``mhdw``)."""
        return self.units if self.units is not None else LOOKBACK_UNITS


Form = BoundsForm | JoinedForm | ObjectForm | DayForm | LookbackForm
"""One of the five form kinds."""

FORM_KINDS: Final[dict[str, type[_Form]]] = {
    str(kind.__struct_config__.tag): kind for kind in get_args(Form)
}
"""Each ``kind`` tag and its form type."""


def zone_argument_of(form: Form) -> str | None:
    """The form's zone argument, or None (a look-back form never has one)."""
    if isinstance(form, LookbackForm):
        return None
    return form.zone.argument if form.zone is not None else None


def value_arguments_of(form: Form) -> tuple[str, ...]:
    """The arguments that carry the period's values (every argument but the zone's)."""
    if isinstance(form, BoundsForm):
        return (form.start.argument, form.end.argument)
    return (form.argument,)


def arguments_of(form: Form) -> tuple[str, ...]:
    """Every argument the form mentions, its zone argument last (if it has one)."""
    zone = zone_argument_of(form)
    return value_arguments_of(form) + ((zone,) if zone is not None else ())


def ends_of(form: BoundsForm | JoinedForm | ObjectForm) -> tuple[BoundAs, BoundAs, Edge | None]:
    """How a two-ended form writes its ``from`` and ``to`` values, and its ``to`` end's edge."""
    if isinstance(form, BoundsForm):
        return form.start.as_, form.end.as_, form.end.edge
    return form.as_, form.as_, form.edge


def needs_zone(form: Form) -> bool:
    """Whether the form writes local values (``wall``, ``date`` or ``day``)."""
    if isinstance(form, DayForm | LookbackForm):
        return isinstance(form, DayForm)
    return any(as_ in ZONED_AS for as_ in ends_of(form)[:2])
