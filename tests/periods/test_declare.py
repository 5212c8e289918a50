"""Period declarations: shorthand, forms, facts, decoding and the checks of
docs/time.md#validation-at-definition-time."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from afp_runtime.errors import PeriodDeclarationError
from afp_runtime.time import Period, period_from_wire
from afp_runtime.time._declare import (
    Assume,
    check_against_schema,
    facts_of,
    forms_of,
)
from afp_runtime.time._facts import Facts
from afp_runtime.time._forms import (
    Bound,
    BoundsForm,
    DayForm,
    JoinedForm,
    LookbackForm,
    ObjectForm,
    ObjectKeys,
    ZoneArgument,
)
from tests.periods._build import EPOCH, wire_of


def field_of(exc: pytest.ExceptionInfo[PeriodDeclarationError]) -> Any:
    """The field an error names."""
    return exc.value.context["field"]


class TestCase55:
    """Case 55, the declaration part."""

    def test_json_decodes_to_the_python_period(self) -> None:
        """camelCase JSON and snake_case keywords make the same Period."""
        raw = json.loads('{"argument": "w", "spelling": "wall-range", "zoneArgument": "tz"}')
        assert period_from_wire(raw) == Period(
            argument="w", spelling="wall-range", zone_argument="tz"
        )

    def test_snake_case_key_is_unknown(self) -> None:
        """{"zone_argument": "tz", ...} names the unknown key zone_argument."""
        raw = {"argument": "w", "spelling": "wall-range", "zone_argument": "tz"}
        with pytest.raises(PeriodDeclarationError) as exc:
            period_from_wire(raw)
        assert field_of(exc) == "zone_argument"
        assert "zoneArgument" in str(exc.value)

    def test_zone_argument_with_iso_range_is_refused(self) -> None:
        """zoneArgument with the iso-range spelling names zoneArgument, decoded or built."""
        raw = {"argument": "w", "spelling": "iso-range", "zoneArgument": "tz"}
        with pytest.raises(PeriodDeclarationError) as exc:
            period_from_wire(raw)
        assert field_of(exc) == "zoneArgument"
        with pytest.raises(PeriodDeclarationError) as built:
            Period(argument="w", spelling="iso-range", zone_argument="tz")
        assert field_of(built) == "zoneArgument"


class TestShorthand:
    """Shorthand expansion (docs/time.md#declaring-a-period)."""

    def test_each_spelling_expands_to_its_form(self) -> None:
        """The four spellings become the forms of the docs/time.md#declaring-a-period table, in the
        listed order."""
        period = Period(
            argument="w",
            accepts=("lookback", "signed-lookback", "iso-range", "wall-range"),
            zone_argument="tz",
        )
        assert forms_of(period) == (
            LookbackForm(argument="w", signed=False),
            LookbackForm(argument="w", signed=True),
            JoinedForm(argument="w", as_="iso", joiner="..", edge="inclusive"),
            JoinedForm(
                argument="w",
                as_="wall",
                joiner="..",
                edge="inclusive",
                zone=ZoneArgument(argument="tz"),
            ),
        )

    def test_argument_without_spelling_yields_no_forms(self) -> None:
        """An argument alone gives the tool no conversion."""
        assert forms_of(Period(argument="w")) == ()

    def test_explicit_forms_are_kept(self) -> None:
        """Explicit forms are the period's forms."""
        assert forms_of(Period(forms=[EPOCH])) == (EPOCH,)


class TestWire:
    """TOML/JSON decoding (camelCase keys) and encoding."""

    def test_full_declaration_round_trips(self) -> None:
        """The docs/scenarios.md example decodes and encodes back to the same keys."""
        raw = {
            "forms": [
                {
                    "kind": "bounds",
                    "from": {"argument": "start_time", "as": "epoch-ms"},
                    "to": {"argument": "end_time", "as": "epoch-ms", "edge": "exclusive"},
                },
                {"kind": "day", "argument": "date", "zone": {"argument": "tz"}},
            ],
            "direction": "past",
            "granularity": "1m",
            "maxRange": "24h",
            "retention": "30d",
            "filtersToAsked": True,
            "missing": {"assume": "1h"},
        }
        period = period_from_wire(raw)
        assert forms_of(period)[0] == EPOCH
        assert period.missing == Assume(length="1h")
        assert facts_of(period) == Facts(
            direction="past",
            granularity="1m",
            max_range="24h",
            retention="30d",
            filters_to_asked=True,
        )
        assert wire_of(period) == raw

    def test_missing_as_sent_is_the_default(self) -> None:
        """missing is "as-sent" unless assume is given."""
        assert period_from_wire({"argument": "w", "missing": "as-sent"}).missing == "as-sent"
        assert Period(argument="w").missing == "as-sent"

    @pytest.mark.parametrize(
        ("raw", "field"),
        [
            (
                {"forms": [{"kind": "day", "argument": "d", "zone": {"argument": "tz"}, "x": 1}]},
                "forms[0].x",
            ),
            (
                {
                    "forms": [
                        {
                            "kind": "bounds",
                            "from": {"argument": "a", "as": "iso", "edg": 1},
                            "to": {"argument": "b", "as": "iso", "edge": "exclusive"},
                        }
                    ]
                },
                "forms[0].from.edg",
            ),
            (
                {"forms": [{"kind": "day", "argument": "d", "zone": {"arg": "tz"}}]},
                "forms[0].zone.arg",
            ),
            (
                {
                    "forms": [
                        {
                            "kind": "object",
                            "argument": "o",
                            "as": "iso",
                            "edge": "exclusive",
                            "keys": {"from": "a", "to": "b", "by": "c"},
                        }
                    ]
                },
                "forms[0].keys.by",
            ),
            ({"argument": "w", "missing": {"assume": "1h", "then": 2}}, "missing.then"),
            ({"forms": [{"kind": "span", "argument": "w"}]}, "forms[0].kind"),
            ({"forms": [{"argument": "w"}]}, "forms[0].kind"),
        ],
    )
    def test_unknown_keys_are_named_at_any_depth(self, raw: Any, field: str) -> None:
        """An unknown key (or kind) is refused with its path."""
        with pytest.raises(PeriodDeclarationError) as exc:
            period_from_wire(raw)
        assert field_of(exc) == field

    @pytest.mark.parametrize(
        ("raw", "field"),
        [
            ({"argument": 3, "spelling": "lookback"}, "argument"),
            ({"argument": "w", "spelling": "iso"}, "spelling"),
            ({"argument": "w", "accepts": ["lookback", "bad"]}, "accepts[1]"),
            (
                {"forms": [{"kind": "lookback", "argument": "w", "signed": "yes"}]},
                "forms[0].signed",
            ),
            (
                {"forms": [{"kind": "joined", "argument": "w", "as": "iso", "joiner": "--"}]},
                "forms[0].joiner",
            ),
            ({"forms": [{"kind": "lookback", "argument": "w", "units": "dx"}]}, "forms[0].units"),
            (
                {"forms": [{"kind": "day", "argument": "d", "maxRange": "1 day"}]},
                "forms[0].maxRange",
            ),
            ({"forms": "w"}, "forms"),
            ({"argument": "w", "missing": {"assume": "1hour"}}, "missing.assume"),
            ({"argument": "w", "missing": "ask"}, "missing"),
            ("lookback", "period"),
        ],
    )
    def test_bad_values_name_their_path(self, raw: Any, field: str) -> None:
        """Type errors and docs/time.md#validation-at-definition-time problems inside forms are
        named by their wire path."""
        with pytest.raises(PeriodDeclarationError) as exc:
            period_from_wire(raw)
        assert field_of(exc) == field

    def test_msgspec_decoding_also_refuses_unknown_keys(self) -> None:
        """Decoding with msgspec directly refuses an unknown key as a ValidationError."""
        raw = b'{"argument": "w", "spelling": "lookback", "zone_argument": "tz"}'
        with pytest.raises(msgspec.ValidationError):
            msgspec.json.decode(raw, type=Period)


class TestValidation:
    """Every rule of docs/time.md#validation-at-definition-time, raised when the declaration is
    made."""

    def test_shorthand_and_forms_together(self) -> None:
        """Shorthand with forms names forms."""
        with pytest.raises(PeriodDeclarationError) as exc:
            Period(argument="w", spelling="lookback", forms=(EPOCH,))
        assert field_of(exc) == "forms"

    def test_wall_range_needs_zone_argument(self) -> None:
        """wall-range without zoneArgument names zoneArgument."""
        with pytest.raises(PeriodDeclarationError) as exc:
            Period(argument="w", spelling="wall-range")
        assert field_of(exc) == "zoneArgument"
        with pytest.raises(PeriodDeclarationError) as listed:
            Period(argument="w", accepts=("iso-range", "wall-range"))
        assert field_of(listed) == "zoneArgument"

    def test_zone_argument_with_another_spelling(self) -> None:
        """zoneArgument with accepts that hold no wall-range names zoneArgument."""
        with pytest.raises(PeriodDeclarationError) as exc:
            Period(argument="w", accepts=("lookback",), zone_argument="tz")
        assert field_of(exc) == "zoneArgument"

    @pytest.mark.parametrize(
        ("options", "field"),
        [
            ({"spelling": "lookback"}, "argument"),
            ({"argument": "w", "spelling": "lookback", "accepts": ("lookback",)}, "accepts"),
            ({"argument": "w", "accepts": ()}, "accepts"),
            ({"argument": "w", "spelling": "wall-range", "zone_argument": "w"}, "zoneArgument"),
            ({"argument": ""}, "argument"),
        ],
    )
    def test_incomplete_shorthand(self, options: dict[str, Any], field: str) -> None:
        """Shorthand must be whole and coherent."""
        with pytest.raises(PeriodDeclarationError) as exc:
            Period(**options)
        assert field_of(exc) == field

    @pytest.mark.parametrize("units", ["x", "mhdwy", "mm", ""])
    def test_units_outside_smhdw(self, units: str) -> None:
        """units holds distinct letters from smhdw only."""
        with pytest.raises(PeriodDeclarationError) as exc:
            LookbackForm(argument="w", units=units)
        assert field_of(exc) == "units"

    @pytest.mark.parametrize("fact", ["retention", "max_range", "granularity"])
    @pytest.mark.parametrize("value", ["24", "1 d", "0h", "1mo", "1.5h"])
    def test_facts_that_are_not_durations(self, fact: str, value: str) -> None:
        """retention, maxRange and granularity must be durations (named in camelCase)."""
        wire = {"max_range": "maxRange"}.get(fact, fact)
        with pytest.raises(PeriodDeclarationError) as exc:
            Period(argument="w", spelling="lookback", **{fact: value})
        assert field_of(exc) == wire
        with pytest.raises(PeriodDeclarationError) as direct:
            Facts(**{fact: value})
        assert field_of(direct) == wire

    def test_per_form_cap_that_is_not_a_duration(self) -> None:
        """A form's own maxRange must be a duration."""
        with pytest.raises(PeriodDeclarationError) as exc:
            DayForm(argument="d", zone=ZoneArgument(argument="tz"), max_range="a day")
        assert field_of(exc) == "maxRange"

    def test_direction_outside_its_values(self) -> None:
        """direction is past, future or any."""
        with pytest.raises(PeriodDeclarationError) as exc:
            Period(argument="w", spelling="lookback", direction="sideways")  # type: ignore[arg-type]
        assert field_of(exc) == "direction"
        with pytest.raises(PeriodDeclarationError) as decoded:
            period_from_wire({"argument": "w", "direction": "sideways"})
        assert field_of(decoded) == "direction"

    def test_bounds_to_needs_an_edge(self) -> None:
        """A bounds form whose to has no edge names forms[i].to.edge."""
        raw = {
            "forms": [
                {
                    "kind": "bounds",
                    "from": {"argument": "a", "as": "iso"},
                    "to": {"argument": "b", "as": "iso"},
                }
            ]
        }
        with pytest.raises(PeriodDeclarationError) as exc:
            period_from_wire(raw)
        assert field_of(exc) == "forms[0].to.edge"
        with pytest.raises(PeriodDeclarationError) as built:
            BoundsForm(start=Bound(argument="a", as_="iso"), end=Bound(argument="b", as_="iso"))
        assert field_of(built) == "to.edge"

    def test_bounds_from_edge_can_only_be_inclusive(self) -> None:
        """The from bound's edge, when given, is inclusive."""
        with pytest.raises(PeriodDeclarationError) as exc:
            BoundsForm(
                start=Bound(argument="a", as_="iso", edge="exclusive"),
                end=Bound(argument="b", as_="iso", edge="exclusive"),
            )
        assert field_of(exc) == "from.edge"

    def test_bounds_use_distinct_arguments(self) -> None:
        """The two bounds use different arguments."""
        with pytest.raises(PeriodDeclarationError) as exc:
            BoundsForm(
                start=Bound(argument="a", as_="iso"),
                end=Bound(argument="a", as_="iso", edge="exclusive"),
            )
        assert field_of(exc) == "to.argument"

    def test_object_form_needs_an_edge(self) -> None:
        """An object form without edge names edge."""
        keys = ObjectKeys(start="from", end="to")
        with pytest.raises(PeriodDeclarationError) as exc:
            ObjectForm(argument="o", keys=keys, as_="iso")
        assert field_of(exc) == "edge"
        raw = {
            "forms": [
                {"kind": "object", "argument": "o", "as": "iso", "keys": {"from": "a", "to": "b"}}
            ]
        }
        with pytest.raises(PeriodDeclarationError) as decoded:
            period_from_wire(raw)
        assert field_of(decoded) == "forms[0].edge"

    def test_object_keys_differ(self) -> None:
        """keys.from and keys.to are two different names."""
        with pytest.raises(PeriodDeclarationError) as exc:
            ObjectForm(
                argument="o", keys=ObjectKeys(start="a", end="a"), as_="iso", edge="inclusive"
            )
        assert field_of(exc) == "keys.to"

    @pytest.mark.parametrize(
        "form",
        [
            DayForm(argument="d"),
            JoinedForm(argument="w", as_="wall", joiner=".."),
            JoinedForm(argument="w", as_="date", joiner="/"),
            BoundsForm(
                start=Bound(argument="a", as_="iso"),
                end=Bound(argument="b", as_="date", edge="inclusive"),
            ),
        ],
    )
    def test_local_forms_need_a_zone(self, form: Any) -> None:
        """A wall, date or day form needs a zone argument or wallZone: "agent"."""
        with pytest.raises(PeriodDeclarationError) as exc:
            Period(forms=(EPOCH, form))
        assert field_of(exc) == "forms[1].zone"
        assert forms_of(Period(forms=(EPOCH, form), wall_zone="agent"))[1] == form

    def test_wall_zone_is_agent_only(self) -> None:
        """wallZone can only be "agent"."""
        with pytest.raises(PeriodDeclarationError) as exc:
            period_from_wire({"argument": "w", "wallZone": "utc"})
        assert field_of(exc) == "wallZone"

    def test_assume_needs_a_duration(self) -> None:
        """assume("1 hour") is refused."""
        with pytest.raises(PeriodDeclarationError) as exc:
            Period(argument="w", missing=Assume(length="1 hour"))
        assert field_of(exc) == "missing.assume"


SCHEMA = {
    "type": "object",
    "properties": {
        "start_time": {"type": "integer"},
        "end_time": {"type": ["number", "null"]},
        "w": {"type": "string"},
        "tz": {"type": "string"},
        "span": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "additionalProperties": False,
        },
    },
}


class TestAgainstSchema:
    """A period's arguments checked against the tool's input schema
    (docs/time.md#validation-at-definition-time)."""

    def test_fitting_period_passes(self) -> None:
        """Epoch bounds on numbers and a shorthand on a string pass."""
        check_against_schema(Period(forms=(EPOCH,)), SCHEMA)
        check_against_schema(
            Period(argument="w", spelling="wall-range", zone_argument="tz"), SCHEMA
        )

    def test_absent_argument(self) -> None:
        """A form argument absent from the schema names the period field."""
        with pytest.raises(PeriodDeclarationError) as exc:
            check_against_schema(Period(argument="window", spelling="lookback"), SCHEMA)
        assert field_of(exc) == "argument"

    def test_a_required_period_argument_is_refused(self) -> None:
        """A period argument the schema requires is refused at definition, naming it: a call
        leaving it out would fail as invalid before the runtime could fill it."""
        required = {**SCHEMA, "required": ["w"]}
        with pytest.raises(PeriodDeclarationError, match="requires") as exc:
            check_against_schema(Period(argument="w", spelling="lookback"), required)
        assert field_of(exc) == "argument"

    def test_absent_zone_argument(self) -> None:
        """A zone argument absent from the schema is refused too."""
        period = Period(argument="w", spelling="wall-range", zone_argument="zone")
        with pytest.raises(PeriodDeclarationError) as exc:
            check_against_schema(period, SCHEMA)
        assert field_of(exc) == "zoneArgument"
        day = Period(forms=(DayForm(argument="w", zone=ZoneArgument(argument="zone")),))
        with pytest.raises(PeriodDeclarationError) as explicit:
            check_against_schema(day, SCHEMA)
        assert field_of(explicit) == "forms[0].zone.argument"

    def test_epoch_bound_on_a_string(self) -> None:
        """An epoch bound on a property that is not a number is refused."""
        form = BoundsForm(
            start=Bound(argument="w", as_="epoch-s"),
            end=Bound(argument="end_time", as_="epoch-s", edge="exclusive"),
        )
        with pytest.raises(PeriodDeclarationError) as exc:
            check_against_schema(Period(forms=(form,)), SCHEMA)
        assert field_of(exc) == "forms[0].from.argument"

    def test_other_bound_on_a_number(self) -> None:
        """An iso bound on a number property is refused."""
        form = BoundsForm(
            start=Bound(argument="start_time", as_="iso"),
            end=Bound(argument="w", as_="iso", edge="exclusive"),
        )
        with pytest.raises(PeriodDeclarationError) as exc:
            check_against_schema(Period(forms=(form,)), SCHEMA)
        assert field_of(exc) == "forms[0].from.argument"

    def test_lookback_on_a_number(self) -> None:
        """A look-back argument must be a string."""
        with pytest.raises(PeriodDeclarationError) as exc:
            check_against_schema(Period(argument="start_time", spelling="lookback"), SCHEMA)
        assert field_of(exc) == "argument"

    def test_object_form_keys(self) -> None:
        """An object form's declared keys must fit its as; a closed object needs both keys."""
        good = ObjectForm(
            argument="span", keys=ObjectKeys(start="a", end="a2"), as_="iso", edge="exclusive"
        )
        with pytest.raises(PeriodDeclarationError) as closed:
            check_against_schema(Period(forms=(good,)), SCHEMA)
        assert field_of(closed) == "forms[0].keys.to"
        typed = ObjectForm(
            argument="span", keys=ObjectKeys(start="a", end="b"), as_="iso", edge="exclusive"
        )
        with pytest.raises(PeriodDeclarationError) as wrong:
            check_against_schema(Period(forms=(typed,)), SCHEMA)
        assert field_of(wrong) == "forms[0].keys.to"
