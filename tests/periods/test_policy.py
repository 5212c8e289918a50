"""The time policy, the ``choice`` it leaves, and confirmation
(docs/time.md#policy-and-confirmation; docs/time.md#how-this-is-tested cases 5, 8, 9, 10)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.errors import AgentDefinitionError
from afp_runtime.time._candidates import Resolution
from afp_runtime.time._clock import TimeClock
from afp_runtime.time._english import read_english
from afp_runtime.time._parts import FixedDate, NumericDate, TimeParts, Wall
from afp_runtime.time._policy import (
    AppliedPolicy,
    Choice,
    NoneChoice,
    OnlyChoice,
    OpenChoice,
    PolicyChoice,
    TimePolicy,
    apply_policy,
    with_confirm,
)
from afp_runtime.time._resolve import resolve

LA = "America/Los_Angeles"
CLOCK = TimeClock(now="2026-10-09T15:40:00Z", now_source="inbox", zone=LA, zone_source="agent")
ASK = TimePolicy()


def wire(value: Any) -> Any:
    """``value`` as decoded JSON."""
    return msgspec.json.decode(msgspec.json.encode(value))


def resolution(text: str, policy: TimePolicy = ASK) -> Resolution:
    """The resolution of the single mention in ``text``."""
    (mention,) = read_english(text).mentions
    return resolve(mention.parses, clock=CLOCK, policy=policy)


def filed(text: str, policy: TimePolicy = ASK) -> Any:
    """The filed choice of the single mention in ``text``, as JSON."""
    return wire(with_confirm(apply_policy(resolution(text, policy), policy)))


class TestTimePolicy:
    """``TimePolicy`` values and its wire shape (docs/time.md#the-time-policy)."""

    def test_defaults(self) -> None:
        """Both questions are asked by default and nothing is mapped; the wire form is
        empty."""
        assert (ASK.date_order, ASK.year, ASK.abbreviations) == ("ask", "ask", None)
        assert wire(ASK) == {}

    def test_camel_case_wire(self) -> None:
        """TOML/JSON keys are camelCase; they decode to the snake_case attributes."""
        policy = msgspec.convert(
            {"dateOrder": "MDY", "year": "current", "abbreviations": {"PST": LA}}, TimePolicy
        )
        assert policy == TimePolicy(date_order="MDY", year="current", abbreviations={"PST": LA})

    def test_unknown_key_refused(self) -> None:
        """An unknown key (a snake_case one included) is refused."""
        with pytest.raises(msgspec.ValidationError, match="date_order"):
            msgspec.convert({"date_order": "MDY"}, TimePolicy)

    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            ({"date_order": "DYM"}, "time.policy.dateOrder"),
            ({"year": "previous"}, "time.policy.year"),
            ({"abbreviations": {"PST": "PST8PDT"}}, "time.policy.abbreviations.PST"),
            ({"abbreviations": {"": LA}}, "time.policy.abbreviations."),
        ],
    )
    def test_bad_values(self, kwargs: dict[str, Any], field: str) -> None:
        """A bad value raises ``AgentDefinitionError`` naming the field."""
        with pytest.raises(AgentDefinitionError) as caught:
            TimePolicy(**kwargs)
        assert caught.value.context["field"] == field


class TestApplyPolicy:
    """``apply_policy``: what the policy leaves, before confirmation
    (docs/time.md#the-time-policy)."""

    def test_date_order_case_5(self) -> None:
        """Case 5: without a policy the three readings of 10/09/26 leave ``date-order``."""
        assert apply_policy(resolution("10/09/26 8 AM to 8:40 AM"), ASK) == OpenChoice(
            remaining=(0, 1, 2), open=("date-order",)
        )

    def test_mdy_case_5(self) -> None:
        """Case 5: ``dateOrder: MDY`` leaves the month-first reading, settled by policy."""
        policy = TimePolicy(date_order="MDY")
        choice = apply_policy(resolution("10/09/26 8 AM to 8:40 AM"), policy)
        assert choice == PolicyChoice(candidate=0, policy=AppliedPolicy(date_order="MDY"))
        assert filed("10/09/26 8 AM to 8:40 AM", policy) == {
            "by": "open",
            "remaining": [0],
            "open": ["confirm"],
            "policy": {"dateOrder": "MDY"},
        }

    def test_year_current_case_9(self) -> None:
        """Case 9: ``year: current`` on "Sept 29" gives ``{by: policy, candidate: 0, policy:
        {year: current}}`` before confirmation."""
        policy = TimePolicy(year="current")
        assert wire(apply_policy(resolution("Sept 29"), policy)) == {
            "by": "policy",
            "candidate": 0,
            "policy": {"year": "current"},
        }
        assert filed("Sept 29") == {"by": "open", "remaining": [0, 1], "open": ["year", "confirm"]}

    def test_dst_stays_open_case_8(self) -> None:
        """Case 8: with ``dateOrder: MDY`` the two readings of the repeated hour leave
        ``dst``."""
        policy = TimePolicy(date_order="MDY")
        assert filed("1:30 AM on 11/01/2026", policy) == {
            "by": "open",
            "remaining": [0, 1],
            "open": ["dst", "confirm"],
            "policy": {"dateOrder": "MDY"},
        }

    def test_meridiem_case_6(self) -> None:
        """Case 6: "8 AM to 8:40" leaves ``meridiem``."""
        assert filed("8 AM to 8:40") == {
            "by": "open",
            "remaining": [0, 1],
            "open": ["meridiem", "confirm"],
        }

    def test_only(self) -> None:
        """A single candidate and nothing discarded: ``only``."""
        assert apply_policy(resolution("yesterday"), ASK) == OnlyChoice()
        assert wire(OnlyChoice()) == {"by": "only"}

    def test_needs_zone_case_5(self) -> None:
        """Case 5: "PST" with no map needs a zone: ``{by: open, remaining: [], open: [zone]}``,
        filed as is."""
        found = resolution("10/09/26 8 AM to 8:40 AM PST", TimePolicy(date_order="MDY"))
        assert apply_policy(found, ASK) == OpenChoice(remaining=(), open=("zone",))
        assert filed("10/09/26 8 AM to 8:40 AM PST") == {
            "by": "open",
            "remaining": [],
            "open": ["zone"],
        }

    def test_needs_zone_case_10(self) -> None:
        """Case 10: "Pacific time" leaves ``open [zone]``."""
        assert filed("9 AM Pacific time") == {"by": "open", "remaining": [], "open": ["zone"]}

    def test_abbreviation(self) -> None:
        """A mapped abbreviation whose two readings differ leaves ``abbreviation``."""
        policy = TimePolicy(date_order="MDY", abbreviations={"PST": LA})
        assert filed("10/09/2026 8 AM PST", policy) == {
            "by": "open",
            "remaining": [0, 1],
            "open": ["abbreviation", "confirm"],
            "policy": {"dateOrder": "MDY"},
        }

    def test_several_parses(self) -> None:
        """Windows from different parses leave ``parse``."""
        found = resolve(
            [
                TimeParts(date=FixedDate(year=2026, month=10, day=9)),
                TimeParts(date=FixedDate(year=2026, month=10, day=8)),
            ],
            clock=CLOCK,
        )
        assert apply_policy(found, ASK) == OpenChoice(remaining=(0, 1), open=("parse",))

    def test_zone_beside_candidates(self) -> None:
        """A parse needing a zone beside one with candidates leaves ``zone`` open with them."""
        found = resolve(
            [
                TimeParts(wall=Wall(h=9, meridiem="am"), zone_token="PST"),
                TimeParts(wall=Wall(h=9, meridiem="am")),
            ],
            clock=CLOCK,
        )
        assert with_confirm(apply_policy(found, ASK)) == OpenChoice(
            remaining=(0,), open=("zone", "confirm")
        )

    def test_same_window_counts_once(self) -> None:
        """Readings drawing the same window count as one: 10/10/2026 is a single window."""
        found = resolution("10/10/2026")
        assert len(found.candidates) == 2
        assert apply_policy(found, ASK) == OnlyChoice()
        assert with_confirm(apply_policy(found, ASK)) == OpenChoice(
            remaining=(0,), open=("confirm",)
        )

    @pytest.mark.parametrize(
        ("order", "kept"),
        [
            ("MDY", ["2026-10-09", "2025-10-09"]),
            ("YMD", ["2026-10-09", "2025-10-09"]),
            ("DMY", ["2026-09-10", "2025-09-10"]),
        ],
    )
    def test_two_field_dates(self, order: str, kept: list[str]) -> None:
        """Two-field dates: MDY and YMD keep month-day, DMY keeps day-month."""
        found = resolution("10/9")
        choice = apply_policy(found, TimePolicy(date_order=order))  # type: ignore[arg-type]
        assert isinstance(choice, OpenChoice)
        assert [found.candidates[i].range.start[:10] for i in choice.remaining] == kept
        assert choice.open == ("year",)

    def test_both_settings(self) -> None:
        """Both settings together leave one window and name both."""
        policy = TimePolicy(date_order="DMY", year="current")
        assert wire(apply_policy(resolution("10/9"), policy)) == {
            "by": "policy",
            "candidate": 2,
            "policy": {"dateOrder": "DMY", "year": "current"},
        }

    def test_setting_that_removes_nothing_is_not_named(self) -> None:
        """A setting that discarded nothing is not listed in ``policy``."""
        policy = TimePolicy(date_order="MDY", year="current")
        assert apply_policy(resolution("Sept 29"), policy) == PolicyChoice(
            candidate=0, policy=AppliedPolicy(year="current")
        )


class TestNone:
    """``{by: none, why}``."""

    def test_unsupported(self) -> None:
        """Only unsupported parses: ``unsupported``."""
        found = resolve([TimeParts(anchor="previous")], clock=CLOCK)
        assert apply_policy(found, ASK) == NoneChoice(why="unsupported")

    def test_no_candidate(self) -> None:
        """Readable parts that draw no window: ``no-candidate``."""
        found = resolve(
            [TimeParts(date=NumericDate(fields=(2, 30, 31), year_digits=2))], clock=CLOCK
        )
        assert apply_policy(found, ASK) == NoneChoice(why="no-candidate")

    def test_excluded_by_policy(self) -> None:
        """Every candidate discarded: ``excluded-by-policy``."""
        found = resolve(
            [TimeParts(date=NumericDate(fields=(2026, 10, 9), year_digits=4))], clock=CLOCK
        )
        assert wire(apply_policy(found, TimePolicy(date_order="DMY"))) == {
            "by": "none",
            "why": "excluded-by-policy",
        }

    def test_none_is_filed_unchanged(self) -> None:
        """Confirmation leaves ``none`` as it is."""
        assert with_confirm(NoneChoice(why="unreadable")) == NoneChoice(why="unreadable")


class TestWithConfirm:
    """docs/time.md#nothing-is-settled-without-the-person: every reading waits for the person."""

    def test_only(self) -> None:
        """Case 1: ``only`` is filed as ``{by: open, remaining: [0], open: [confirm]}``."""
        assert wire(with_confirm(OnlyChoice())) == {
            "by": "open",
            "remaining": [0],
            "open": ["confirm"],
        }

    def test_policy(self) -> None:
        """``policy`` is filed as ``open`` on its candidate, keeping the policy."""
        choice = PolicyChoice(candidate=1, policy=AppliedPolicy(year="current"))
        assert wire(with_confirm(choice)) == {
            "by": "open",
            "remaining": [1],
            "open": ["confirm"],
            "policy": {"year": "current"},
        }

    def test_open_gets_confirm_once(self) -> None:
        """``confirm`` is appended once."""
        choice = with_confirm(OpenChoice(remaining=(0, 2), open=("date-order",)))
        assert choice == OpenChoice(remaining=(0, 2), open=("date-order", "confirm"))
        assert with_confirm(choice) == choice

    def test_zone_first(self) -> None:
        """An open choice without candidates waits for a zone, without ``confirm``."""
        choice = OpenChoice(remaining=(), open=("zone",))
        assert with_confirm(choice) == choice

    def test_wire_round_trip(self) -> None:
        """Choices decode back from their wire form, tagged on ``by``."""
        for choice in (
            OnlyChoice(),
            PolicyChoice(candidate=0, policy=AppliedPolicy(date_order="YMD")),
            OpenChoice(remaining=(1,), open=("confirm",), policy=AppliedPolicy(year="current")),
            NoneChoice(why="no-candidate"),
        ):
            assert msgspec.json.decode(msgspec.json.encode(choice), type=Choice) == choice


# --- properties -------------------------------------------------------------------------------

TEXTS = [
    "10/09/26 8 AM to 8:40 AM",
    "10/9",
    "Sept 29",
    "1:30 AM on 11/01/2026",
    "8 AM to 8:40",
    "8:45 to 8:55",
    "10/10/2026",
    "2026/10/09",
    "10/09/2026 8 AM PST",
    "yesterday",
    "last 2 hours",
    "Feb 29",
    "11/01/26 1:30 AM to 1:45 AM",
]
POLICIES = st.builds(
    TimePolicy,
    date_order=st.sampled_from(["ask", "MDY", "DMY", "YMD"]),
    year=st.sampled_from(["ask", "current"]),
    abbreviations=st.sampled_from([None, {"PST": LA}]),
)


def _windows(found: Resolution, choice: Any) -> set[tuple[int, int]]:
    if isinstance(choice, OpenChoice):
        indices: list[int] = list(choice.remaining)
    elif isinstance(choice, PolicyChoice):
        indices = [choice.candidate]
    elif isinstance(choice, OnlyChoice):
        indices = [0]
    else:
        indices = []
    return {found.candidates[i].range.bounds() for i in indices}


@settings(max_examples=150, deadline=None)
@given(text=st.sampled_from(TEXTS), policy=POLICIES)
def test_a_policy_only_removes(text: str, policy: TimePolicy) -> None:
    """Whatever the policy, the windows left are among those left without it, indices name
    candidates, and the candidates themselves are untouched."""
    (mention,) = read_english(text).mentions
    found = resolve(mention.parses, clock=CLOCK, policy=policy)
    before = wire(found)
    choice = apply_policy(found, policy)
    unpoliced = apply_policy(found, ASK)
    assert wire(found) == before
    assert _windows(found, choice) <= _windows(found, unpoliced)
    confirmed = with_confirm(choice)
    assert _windows(found, confirmed) == _windows(found, choice)
    if isinstance(confirmed, OpenChoice):
        assert list(confirmed.remaining) == sorted(set(confirmed.remaining))
        assert all(0 <= i < len(found.candidates) for i in confirmed.remaining)
        assert confirmed.open[-1:] == (("confirm",) if confirmed.remaining else ("zone",))
