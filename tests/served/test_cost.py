"""Cost (docs/served.md#how-this-is-tested cases 36 and 37), measured by counting reads, never with
a timer."""

from __future__ import annotations

import functools

import msgspec

from afp_runtime.served import (
    check,
    epoch_at,
    epochs,
    receipt_at,
    served_at,
    served_views,
    view_of,
)

from ._log import CountingLog, RunSim, TestEncoder, answer, call, tool

EPOCHS = 1_000


@functools.cache
def _long_run() -> RunSim:
    """A run of 1,000 model calls under a sliding window that keeps two exchanges."""
    sim = RunSim(tools=[tool("alpha_tool")], window_keep=2, notice=True, encoder=TestEncoder())
    sim.max_iterations = EPOCHS + 1
    script = [call(f"c{n}", "alpha_tool") for n in range(1, EPOCHS)]
    return sim.run([*script, answer("done")])


def test_served_at_cost_does_not_grow_with_the_epoch() -> None:
    """Case 36: served_at(1000) makes as many index, bundle and body reads as served_at(10)."""
    log = CountingLog(_long_run().log)
    assert len(epochs(log)) == EPOCHS
    costs = {}
    for k in (10, 500, EPOCHS):
        log.reset()
        assert served_at(log, k) is not None
        costs[k] = log.counts()
    assert costs[10] == costs[500] == costs[EPOCHS]
    anchors, values, bundles, _ = costs[EPOCHS]
    assert (anchors, values, bundles) == (1, 8, 1)
    for function in (receipt_at, epoch_at):
        log.reset()
        function(log, 10)
        early = log.counts()
        log.reset()
        function(log, EPOCHS)
        assert log.counts() == early


def test_served_views_reads_each_bundle_once() -> None:
    """Case 36: the one-pass listing reads every bundle once, each body at most once."""
    log = CountingLog(_long_run().log)
    views = served_views(log)
    assert len(views) == EPOCHS
    assert sum(log.value_reads.values()) == 0
    assert set(log.bundle_reads.values()) == {1}
    assert len(log.bundle_reads) == _long_run().next_seq
    assert max(log.body_reads.values()) == 1


def test_one_pass_equals_the_index_path_for_every_epoch() -> None:
    """Case 36: the one-pass views equal the per-epoch index answers, and all conform."""
    log = _long_run().log
    views = served_views(log)
    located = epochs(log)
    assert views == tuple(view_of(location, log) for location in located)
    assert [v.epoch for v in views] == list(range(1, EPOCHS + 1))
    for view in views[:: EPOCHS // 20]:
        report = check(view, receipt_at(log, view.epoch), encoder=TestEncoder(), log=log)
        assert report.verdict == "verified"


def test_receipts_grow_with_new_messages_only() -> None:
    """Case 37: each receipt lists at most three new entries; their sizes stay flat."""
    log = _long_run().log
    sizes = []
    for location in epochs(log):
        receipt = receipt_at(log, location.epoch)
        assert receipt is not None
        assert len(receipt.messages.new_entries) <= 3
        sizes.append(len(msgspec.json.encode(receipt)))
    steady = sizes[10:]
    assert max(steady) - min(steady) < 64
    # Linear: the second half of the run costs what the first half cost.
    half = len(sizes) // 2
    assert abs(sum(sizes[half:]) - sum(sizes[:half])) < 0.02 * sum(sizes)
    # A drop notice that changed is new: the call, its result and the notice.
    assert len(receipt_at(log, 500).messages.new_entries) == 3  # type: ignore[union-attr]


def test_window_stays_bounded() -> None:
    """Case 36: the sliding window keeps the view's size fixed, so reads are comparable."""
    log = _long_run().log
    sizes = {len(v.messages.as_sent) for v in served_views(log)[10:]}
    assert sizes == {6}
