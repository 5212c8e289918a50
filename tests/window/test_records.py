"""Records on the wire: tagged built-ins, lossless custom records
(docs/window.md#record-schemas)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from afp_runtime.messages import Usage
from afp_runtime.window import CustomRecord, record_to_wire
from afp_runtime.window.observations import PinnedTurn, WindowObservations
from afp_runtime.window.records import SlidingWindowRecord, SummarizeOldestRecord, TokenBudgetRecord
from afp_runtime.window.stage import record_from_wire
from afp_runtime.window.standdown import stand_down_block
from afp_runtime.window.validate import strategy_of
from tests.window._build import cr, ikw

SLIDING = SlidingWindowRecord(
    iteration=4,
    keep_recent_turns=2,
    removed_stage_ids=("writer#1", "writer#2"),
    removed_message_count=2,
    window_chars_before=1000,
    window_chars_after=400,
    turns_before=4,
    turns_after=4,
    refusals=(cr(0, 0), ikw(2, 3), ikw(3, 5)),
    dropped_observations=("look",),
    observations=WindowObservations(
        pinned=(PinnedTurn(tool_name="look", turn_index=1, chars=62),), yielded=1, limit=1
    ),
)
TOKEN = TokenBudgetRecord(
    iteration=4,
    measured_tokens=1001,
    threshold_tokens=1000,
    over_budget=True,
    keep_recent_turns=6,
    removed_stage_ids=(),
    removed_message_count=0,
    window_chars_before=133,
    window_chars_after=133,
    refusals=(ikw(0, 0), ikw(1, 1)),
)
SUMMARY = SummarizeOldestRecord(
    iteration=3,
    measured_tokens=900,
    threshold_tokens=100.5,
    over_budget=True,
    window_chars_before=2400,
    removed_stage_ids=("writer#0",),
    removed_message_count=5,
    window_chars_after=700,
    summary_chars=100,
    refusals=(ikw(3, 5),),
    summarizer_tokens=Usage(input=7, output=3),
    observations=stand_down_block(2),
)
CUSTOM = CustomRecord(
    strategy="keep-the-gist",
    iteration=2,
    removed_stage_ids=("writer#3",),
    removed_message_count=1,
    window_chars_before=10,
    window_chars_after=9,
    refusals=(ikw(1, 1),),
    extra={"mood": "tidy", "scores": [1, 2.5], "nested": {"a": None}},
    dropped_observations=("look",),
)


@pytest.mark.parametrize("record", [SLIDING, TOKEN, SUMMARY, CUSTOM])
def test_round_trip_is_lossless(record: Any) -> None:
    """Every record decodes back to an equal record and the same wire object."""
    wire = record_to_wire(record)
    back = record_from_wire(wire)
    assert back == record
    assert type(back) is type(record)
    assert record_to_wire(back) == wire
    assert msgspec.json.decode(msgspec.json.encode(wire)) == wire


def test_sliding_wire_keys_in_documented_order() -> None:
    """docs/window.md#sliding-window: the sliding record's keys are camelCase, in the documented
    order, stage keys last."""
    assert list(record_to_wire(SLIDING)) == [
        "strategy",
        "iteration",
        "keepRecentTurns",
        "removedStageIds",
        "removedMessageCount",
        "windowCharsBefore",
        "windowCharsAfter",
        "turnsBefore",
        "turnsAfter",
        "refusals",
        "droppedObservations",
        "observations",
    ]
    assert record_to_wire(SLIDING)["strategy"] == "sliding-window"
    assert record_to_wire(SLIDING)["refusals"][0] == {
        "reason": "current-request",
        "turnIndex": 0,
        "messageIndex": 0,
    }


def test_absent_keys_are_omitted_and_required_ones_always_written() -> None:
    """Absent means omitted, never null; overBudget and empty removedStageIds always appear."""
    wire = record_to_wire(TOKEN)
    assert wire["overBudget"] is True
    assert wire["removedStageIds"] == []
    assert None not in wire.values()
    assert "observations" not in wire
    assert record_to_wire(SUMMARY)["observations"] == {
        "pinned": [],
        "yielded": 0,
        "limit": 2,
        "standDown": True,
    }


def test_custom_extra_is_written_flat() -> None:
    """docs/window.md#custom-and-foreign-records: a custom record's own keys sit flat beside the
    common fields."""
    wire = record_to_wire(CUSTOM)
    assert "extra" not in wire
    assert wire["mood"] == "tidy"
    assert wire["strategy"] == "keep-the-gist"
    keys = list(wire)
    assert keys.index("refusals") < keys.index("mood") < keys.index("droppedObservations")


def test_foreign_record_keeps_every_unknown_key() -> None:
    """docs/window.md#custom-and-foreign-records: an unknown tag decodes to a custom record and
    re-encodes to the same object."""
    wire = {
        "strategy": "someone-elses",
        "iteration": 7,
        "removedStageIds": [],
        "removedMessageCount": 0,
        "windowCharsBefore": 5,
        "windowCharsAfter": 5,
        "refusals": [],
        "legacyFoldCount": 3,
        "extra": {"kept": True},
    }
    record = record_from_wire(wire)
    assert isinstance(record, CustomRecord)
    assert strategy_of(record) == "someone-elses"
    assert record.extra == {"legacyFoldCount": 3, "extra": {"kept": True}}
    assert record_to_wire(record) == wire


def test_builtin_tag_with_a_custom_shape_is_kept_as_custom() -> None:
    """A record under a built-in tag that is not that built-in's shape is kept, not lost."""
    wire = {
        "strategy": "sliding-window",
        "iteration": 1,
        "removedStageIds": [],
        "removedMessageCount": 0,
        "windowCharsBefore": 0,
        "windowCharsAfter": 0,
        "refusals": [],
        "flavour": "home-made",
    }
    record = record_from_wire(wire)
    assert isinstance(record, CustomRecord)
    assert record_to_wire(record) == wire


def test_missing_common_fields_are_refused() -> None:
    """A record without its common fields cannot be decoded."""
    with pytest.raises(msgspec.ValidationError):
        record_from_wire({"strategy": "someone-elses", "iteration": 1})


def test_strategy_of_reads_the_tag() -> None:
    """The strategy name of a built-in record is its union tag."""
    assert [strategy_of(r) for r in (SLIDING, TOKEN, SUMMARY, CUSTOM)] == [
        "sliding-window",
        "token-budget",
        "summarize-oldest",
        "keep-the-gist",
    ]
