"""Locating epochs (docs/served.md#where-epochs-are-found): numbers, call ids, outcomes, absence and
legacy anchors."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from afp_runtime.messages import fingerprint
from afp_runtime.records import IterationWrite, ReceiptWrite, ReplyWrite
from afp_runtime.served import check, epoch_at, epochs, receipt_at, served_at, served_views
from afp_runtime.served.locate import EpochLocation
from afp_runtime.served.memory import MemoryRunLog

from ._log import Failure, Reply, RunSim, TestEncoder, answer, call, copy_log, tool, two_epoch_run


def test_two_epoch_run_is_numbered_from_iteration() -> None:
    """Case 8: epochs are numbered 1 and 2 with call ids call-model#4 and call-model#9."""
    found = epochs(two_epoch_run().log)
    assert [e.epoch for e in found] == [1, 2]
    assert [e.call_runtime_stage_id for e in found] == ["call-model#4", "call-model#9"]
    assert [e.anchor_seq for e in found] == [3, 8]
    assert [(e.outcome, e.attempts) for e in found] == [("replied", 1), ("replied", 1)]


@pytest.mark.parametrize("k", [0, 3, -1, 10**9])
def test_absent_epochs_give_none(k: int) -> None:
    """Case 9: epoch 0, a negative and one past the last have no view, receipt or location."""
    log = two_epoch_run().log
    assert served_at(log, k) is None
    assert receipt_at(log, k) is None
    assert epoch_at(log, k) is None


@pytest.mark.parametrize("k", [True, False, "1", 1.0, None])
def test_epoch_must_be_an_int(k: Any) -> None:
    """Case 9: a bool or a non-int epoch raises TypeError naming epoch (True never finds 1)."""
    log = two_epoch_run().log
    for function in (served_at, receipt_at, epoch_at):
        with pytest.raises(TypeError, match="epoch"):
            function(log, k)


def test_a_run_without_a_receipt_has_no_epochs() -> None:
    """Case 9: a run that failed before any receipt lists no epochs and no views."""
    log = MemoryRunLog("run-1")
    log.append("seed", [IterationWrite(verb="set", value=1)], iteration=1)
    log.append("window", [], iteration=1)
    assert epochs(log) == ()
    assert served_views(log) == ()
    assert served_at(log, 1) is None


def test_numbers_follow_the_turns_iteration_counter() -> None:
    """Case 8 (docs/served.md#what-counts-as-an-epoch): a run whose first call is iteration 3 has no
    epochs 1 and 2."""
    sim = RunSim(tools=[tool("alpha_tool")], first_iteration=3, encoder=TestEncoder())
    sim.run([call("c1", "alpha_tool"), answer("done")])
    assert [e.epoch for e in epochs(sim.log)] == [3, 4]
    assert served_at(sim.log, 1) is None
    view = served_at(sim.log, 3)
    receipt = receipt_at(sim.log, 3)
    assert view is not None and receipt is not None
    assert receipt.basis.epoch == 3


def test_failed_call_keeps_its_epoch() -> None:
    """Case 15: an HTTP 401 on the first send leaves epoch 1 failed, with its receipt."""
    sim = RunSim(tools=[tool("alpha_tool")], encoder=TestEncoder()).run([Failure()])
    (found,) = epochs(sim.log)
    assert (found.outcome, found.attempts) == ("failed", 1)
    assert receipt_at(sim.log, 1) == sim.receipts[0]
    view = served_at(sim.log, 1)
    assert view is not None
    assert [g.gap for g in view.gaps] == ["provider-defaults"]


def test_retries_are_attempts_of_one_epoch() -> None:
    """docs/served.md#what-counts-as-an-epoch: the sends recorded on the call-model bundle are the
    epoch's attempts."""
    sim = RunSim(encoder=TestEncoder()).run([Reply(content="done", attempts=3)])
    assert [(e.epoch, e.outcome, e.attempts) for e in epochs(sim.log)] == [(1, "replied", 3)]
    failed = RunSim(encoder=TestEncoder()).run([Failure(error_kind="server", attempts=4)])
    assert epochs(failed.log)[0].attempts == 4


def test_crash_between_receipt_and_reply() -> None:
    """Case 16: the crashed run's epoch is abandoned; the recovery run repeats it, other salt."""
    first = RunSim("run-1", tools=[tool("alpha_tool")], encoder=TestEncoder()).run([None])
    assert epochs(first.log) == (
        EpochLocation(
            epoch=1,
            anchor_seq=3,
            call_runtime_stage_id="call-model#4",
            outcome="abandoned",
            attempts=0,
        ),
    )
    view = served_at(first.log, 1)
    assert view is not None
    assert check(view, receipt_at(first.log, 1), encoder=TestEncoder()).verdict == "verified"
    base = Counter(fingerprint(m) for m in first.sent[-1])
    second = RunSim(
        "run-2", tools=[tool("alpha_tool")], encoder=TestEncoder(), base=base, agent_call=1
    ).run([answer("done")])
    assert [(e.epoch, e.outcome) for e in epochs(second.log)] == [(1, "replied")]
    assert first.bodies[0] == second.bodies[0]
    one, two = first.receipts[0], second.receipts[0]
    assert one.wire is not None and two.wire is not None
    assert one.wire.hash != two.wire.hash
    assert (one.agent_call, two.agent_call) == (1, 2)
    assert receipt_at(first.log, 1) == one
    assert receipt_at(second.log, 1) == two
    assert two.messages.new_entries == ()


def test_live_run_has_an_in_flight_epoch() -> None:
    """docs/served.md#where-epochs-are-found: while the run is live, a receipt without its
    call-model bundle is in flight."""
    sim = RunSim(encoder=TestEncoder(), live=True).run([None])
    assert [(e.outcome, e.attempts) for e in epochs(sim.log)] == [("in-flight", 0)]


def test_legacy_call_model_anchor_is_located() -> None:
    """Case 18: with epoch 2's receipt bundle removed, its call-model bundle still anchors it."""
    log = copy_log(two_epoch_run().log, drop=[8])
    found = epochs(log)
    assert [e.epoch for e in found] == [1, 2]
    assert found[1].anchor_seq == 9
    assert found[1].call_runtime_stage_id == "call-model#9"
    assert found[1].outcome == "replied"
    assert epoch_at(log, 2) == found[1]


def test_earliest_of_two_equal_numbers_wins() -> None:
    """docs/served.md#where-epochs-are-found: in a damaged log with two epochs numbered 1, epoch_at
    returns the earliest."""
    log = MemoryRunLog("run-1")
    log.append("seed", [IterationWrite(verb="set", value=1)], iteration=1)
    log.append("receipt", [ReceiptWrite(verb="set", value={})], iteration=1)
    log.append("call-model", [ReplyWrite(verb="set", value={"attempts": 1})], iteration=1)
    log.append("receipt", [ReceiptWrite(verb="set", value={})], iteration=1)
    assert [e.epoch for e in epochs(log)] == [1, 1]
    found = epoch_at(log, 1)
    assert found is not None and found.anchor_seq == 1
    assert [v.epoch for v in served_views(log)] == [1, 1]


def test_epoch_at_matches_the_listing() -> None:
    """docs/served.md#where-epochs-are-found: every listed epoch is found by epoch_at under its
    number."""
    sim = RunSim(tools=[tool("alpha_tool")], encoder=TestEncoder(), max_iterations=2)
    sim.run([call(f"c{n}", "alpha_tool") for n in range(1, 5)])
    listed = epochs(sim.log)
    assert [e.epoch for e in listed] == [1, 2, 3]
    assert [epoch_at(sim.log, e.epoch) for e in listed] == list(listed)
