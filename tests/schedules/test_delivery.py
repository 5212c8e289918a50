"""``plan_delivery`` and the catch-up rule (docs/schedules.md#catching-up): on-time due
instants are always delivered, missed ones by ``catchUp``, none twice across checks; weeks of
virtual time are just instants here."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.schedules import (
    LATE_MS,
    CatchUp,
    Delivery,
    Schedule,
    next_due,
    plan_delivery,
    schedule,
)

_NY = ZoneInfo("America/New_York")
HOUR = 3_600_000
DAY = 24 * HOUR
ANCHOR = int(datetime(2026, 2, 23, 12, 0, tzinfo=UTC).timestamp() * 1000)  # a Monday


def all_due(s: Schedule, after: int, through: int, anchor: int = ANCHOR) -> list[int]:
    found: list[int] = []
    due = next_due(s, after_ms=after, anchor_ms=anchor)
    while due is not None and due <= through:
        found.append(due)
        due = next_due(s, after_ms=due, anchor_ms=anchor)
    return found


class TestOneCheck:
    def test_on_time_is_delivered_whatever_the_policy(self) -> None:
        for policy in ("latest", "all", "none"):
            s = schedule("t", "x", every="2 hours", catch_up=policy)
            due = ANCHOR + 2 * HOUR
            plan = plan_delivery(s, last_ms=ANCHOR, now_ms=due + LATE_MS, anchor_ms=ANCHOR)
            assert plan == Delivery(
                deliver=(due,),
                skipped=(),
                skipped_count=0,
                through_ms=due,
                next_ms=due + 2 * HOUR,
            )

    def test_a_minute_and_a_millisecond_late_is_missed(self) -> None:
        s = schedule("t", "x", every="2 hours", catch_up="none")
        due = ANCHOR + 2 * HOUR
        plan = plan_delivery(s, last_ms=ANCHOR, now_ms=due + LATE_MS + 1, anchor_ms=ANCHOR)
        assert (plan.deliver, plan.skipped, plan.skipped_count) == ((), (due,), 1)
        assert plan.through_ms == due

    def test_latest_delivers_the_newest_missed_and_the_on_time_one(self) -> None:
        s = schedule("t", "x", every="2 hours")
        now = ANCHOR + 10 * HOUR
        plan = plan_delivery(s, last_ms=ANCHOR, now_ms=now, anchor_ms=ANCHOR)
        assert plan.deliver == (ANCHOR + 8 * HOUR, now)
        assert plan.skipped == (ANCHOR + 2 * HOUR, ANCHOR + 4 * HOUR, ANCHOR + 6 * HOUR)
        assert plan.skipped_count == 3
        assert plan.through_ms == now
        assert plan.next_ms == now + 2 * HOUR

    def test_nothing_due_leaves_the_mark(self) -> None:
        s = schedule("t", "x", every="day at 09:00")
        plan = plan_delivery(s, last_ms=ANCHOR, now_ms=ANCHOR + HOUR, anchor_ms=ANCHOR)
        assert plan.deliver == plan.skipped == ()
        assert plan.through_ms == ANCHOR
        assert plan.next_ms == next_due(s, after_ms=ANCHOR, anchor_ms=ANCHOR)

    def test_a_finished_once_schedule_has_no_next(self) -> None:
        s = schedule("o", "x", at="2026-02-24T09:00Z")
        due = next_due(s, after_ms=ANCHOR, anchor_ms=ANCHOR)
        assert due is not None
        plan = plan_delivery(s, last_ms=ANCHOR, now_ms=due, anchor_ms=ANCHOR)
        assert plan.deliver == (due,)
        assert plan.next_ms is None
        again = plan_delivery(s, last_ms=plan.through_ms, now_ms=due + DAY, anchor_ms=ANCHOR)
        assert again.deliver == () and again.next_ms is None

    def test_all_pages_at_the_limit_and_says_more_is_due(self) -> None:
        s = schedule("t", "x", every="30 minutes", catch_up="all")
        now = ANCHOR + 10 * HOUR
        plan = plan_delivery(s, last_ms=ANCHOR, now_ms=now, anchor_ms=ANCHOR, limit=7)
        assert plan.deliver == tuple(ANCHOR + k * HOUR // 2 for k in range(1, 8))
        assert plan.through_ms == plan.deliver[-1]
        assert plan.next_ms is not None and plan.next_ms <= now
        rest = plan_delivery(s, last_ms=plan.through_ms, now_ms=now, anchor_ms=ANCHOR)
        assert rest.deliver == tuple(ANCHOR + k * HOUR // 2 for k in range(8, 21))
        assert rest.next_ms == now + HOUR // 2

    def test_a_long_outage_counts_up_to_the_limit_and_still_finds_the_newest(self) -> None:
        s = schedule("t", "x", cron="* * * * *", zone="America/Los_Angeles")
        now = ANCHOR + 3 * DAY  # 4,320 missed minutes
        plan = plan_delivery(s, last_ms=ANCHOR, now_ms=now, anchor_ms=ANCHOR, limit=10)
        assert plan.deliver == (now - LATE_MS - 60_000, now - LATE_MS, now)
        assert plan.skipped == tuple(ANCHOR + k * 60_000 for k in range(1, 11))
        assert plan.skipped_count == 1000
        assert plan.through_ms == now

    def test_the_wire_shape_is_camel_case(self) -> None:
        plan = Delivery(deliver=(1,), skipped=(), skipped_count=0, through_ms=1, next_ms=None)
        assert msgspec.json.decode(msgspec.json.encode(plan)) == {
            "deliver": [1],
            "skipped": [],
            "skippedCount": 0,
            "throughMs": 1,
            "nextMs": None,
        }


FORMS = (
    {"every": "weekday at 09:00", "zone": "America/New_York"},
    {"every": "day at 02:30", "zone": "America/Los_Angeles"},
    {"every": "day at 01:30 and 02:45", "zone": "America/Los_Angeles"},
    {"cron": "0 */4 * * *", "zone": "Europe/Berlin"},
    {"cron": "0 0 * * *", "zone": "America/Santiago"},
    {"every": "3 hours", "zone": "UTC"},
    {"every": "week on monday at 08:00", "zone": "Australia/Lord_Howe"},
)
# Host checks: gaps between them from seconds to days (a host down for a while).
checks = st.lists(
    st.one_of(st.integers(1, 2 * LATE_MS), st.integers(1, 6 * HOUR), st.integers(1, 5 * DAY)),
    min_size=1,
    max_size=25,
)
# From mid-February to mid-April 2026 and from mid-October: the spring and autumn changes.
starts = st.sampled_from([ANCHOR, ANCHOR + 33 * 7 * DAY])


def run_checks(s: Schedule, anchor: int, gaps: list[int], limit: int) -> list[tuple[int, Delivery]]:
    """A host's checks: each passes the last mark on; under ``all`` it plans again while more
    is due."""
    last, now, plans = anchor, anchor, []
    for gap in gaps:
        now += gap
        while True:
            plan = plan_delivery(s, last_ms=last, now_ms=now, anchor_ms=anchor, limit=limit)
            plans.append((now, plan))
            last = plan.through_ms
            if plan.next_ms is None or plan.next_ms > now:
                break
    return plans


@settings(max_examples=120)
@given(st.sampled_from(FORMS), starts, checks, st.sampled_from(["latest", "all", "none"]))
def test_no_due_instant_is_delivered_twice(
    form: dict[str, str], anchor: int, gaps: list[int], policy: CatchUp
) -> None:
    s = schedule("p", "x", catch_up=policy, **form)
    delivered = [d for _, plan in run_checks(s, anchor, gaps, 1000) for d in plan.deliver]
    assert len(delivered) == len(set(delivered))
    assert delivered == sorted(delivered)


@settings(max_examples=120)
@given(st.sampled_from(FORMS), starts, checks, st.integers(1, 5))
def test_all_delivers_every_due_instant(
    form: dict[str, str], anchor: int, gaps: list[int], limit: int
) -> None:
    s = schedule("p", "x", catch_up="all", **form)
    plans = run_checks(s, anchor, gaps, limit)
    delivered = [d for _, plan in plans for d in plan.deliver]
    assert delivered == all_due(s, anchor, anchor + sum(gaps), anchor)
    assert all(plan.skipped == () for _, plan in plans)


@settings(max_examples=120)
@given(st.sampled_from(FORMS), starts, checks)
def test_latest_delivers_exactly_the_newest_missed_and_the_on_time(
    form: dict[str, str], anchor: int, gaps: list[int]
) -> None:
    s = schedule("p", "x", catch_up="latest", **form)
    last = anchor
    for now, plan in run_checks(s, anchor, gaps, 1000):
        due = all_due(s, last, now, anchor)
        missed = [d for d in due if now - d > LATE_MS]
        on_time = [d for d in due if now - d <= LATE_MS]
        assert plan.deliver == tuple(missed[-1:] + on_time)
        assert plan.skipped == tuple(missed[:-1])
        assert plan.skipped_count == len(missed[:-1])
        assert plan.through_ms == (due[-1] if due else last)
        last = plan.through_ms


@settings(max_examples=120)
@given(st.sampled_from(FORMS), starts, checks)
def test_none_delivers_only_on_time_ones(
    form: dict[str, str], anchor: int, gaps: list[int]
) -> None:
    s = schedule("p", "x", catch_up="none", **form)
    last = anchor
    for now, plan in run_checks(s, anchor, gaps, 1000):
        due = all_due(s, last, now, anchor)
        assert plan.deliver == tuple(d for d in due if now - d <= LATE_MS)
        assert plan.skipped == tuple(d for d in due if now - d > LATE_MS)
        last = plan.through_ms


def test_every_weekday_at_nine_over_six_weeks_of_checks_each_minute_around_nine() -> None:
    """A host up on weekday mornings only, down each night and over weekends: with
    ``latest`` each morning gets one message, on time, and a Monday none for the weekend."""
    s = schedule("standup", "Standup", every="weekday at 09:00", zone="America/New_York")
    anchor = int(datetime(2026, 2, 23, 5, 0, tzinfo=UTC).timestamp() * 1000)  # Mon 00:00 EST
    last, delivered = anchor, list[int]()
    for day in range(42):
        morning = anchor + day * DAY + 9 * HOUR - 5 * 60_000  # 08:55 (EST days)
        for minute in range(0, 70, 1):
            now = morning + minute * 60_000 - (HOUR if day >= 13 else 0)  # EDT from 03-08
            plan = plan_delivery(s, last_ms=last, now_ms=now, anchor_ms=anchor)
            assert plan.skipped == ()
            delivered += plan.deliver
            last = plan.through_ms
    local = [
        datetime.fromtimestamp(d / 1000, UTC).astimezone(_NY).strftime("%a %H:%M")
        for d in delivered
    ]
    assert len(local) == 30
    assert {text[-5:] for text in local} == {"09:00"}
    assert "Sat" not in {text[:3] for text in local}
