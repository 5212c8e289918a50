"""Run exports: a whole or partial log as JSON, read back as an in-memory run log."""

from __future__ import annotations

import msgspec
import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.messages import fingerprint
from afp_runtime.served import (
    check,
    epochs,
    export_run,
    load_export,
    receipt_at,
    served_at,
    served_views,
)
from afp_runtime.served.export import EXPORT_FORMAT
from afp_runtime.served.memory import MemoryRunLog

from ._log import RunSim, TestEncoder, answer, call, copy_log, tool, two_epoch_run


def _statuses(log: MemoryRunLog, k: int) -> dict[str, str]:
    view = served_at(log, k)
    assert view is not None
    report = check(view, receipt_at(log, k), encoder=TestEncoder(), log=log)
    return {c.clause: c.status for c in report.clauses} | {"verdict": report.verdict}


def test_full_export_round_trips() -> None:
    """docs/api.md#the-afp-command: a complete export reads back with the same epochs, views and
    receipts."""
    log = two_epoch_run().log
    data = export_run(log)
    loaded = load_export(data)
    assert loaded.has_base and not loaded.live and loaded.run_id == "run-1"
    assert epochs(loaded) == epochs(log)
    assert served_views(loaded) == served_views(log)
    assert [receipt_at(loaded, k) for k in (1, 2)] == [receipt_at(log, k) for k in (1, 2)]
    assert export_run(loaded) == data
    document = msgspec.json.decode(data)
    assert document["format"] == EXPORT_FORMAT
    assert set(document) == {"format", "runId", "hasBase", "live", "bundles", "bodies"}
    assert len(document["bodies"]) == 4
    assert all("fingerprint" in ref for ref in document["bundles"][0]["writes"][5]["value"])


def test_partial_export_as_the_loop_commits() -> None:
    """Case 19: from seq 6 the view is numbered by position and its unknowns are excused."""
    # The loop's context stage writes pieces and tools only when they change, so this export
    # (which lacks the first context bundle) reads them as unknown: their clauses are excused,
    # where docs/served.md's case 19 (written for a context bundle holding every key) says pass.
    sim = two_epoch_run()
    partial = load_export(export_run(sim.log, from_seq=6))
    assert not partial.has_base
    views = served_views(partial)
    assert [v.epoch for v in views] == [1]
    receipt = receipt_at(partial, 1)
    assert receipt is not None and receipt.basis.epoch == 2
    view = views[0]
    assert [g.gap for g in view.gaps] == [
        "no-fold-base",
        "no-conversation-on-record",
        "provider-defaults",
    ]
    assert view.messages.as_sent == ()
    statuses = _statuses(partial, 1)
    assert statuses["epoch"] == "excused"
    for clause in ("messages.count", "messages.digest", "messages.newEntries"):
        assert statuses[clause] == "excused"
    assert statuses["system.hash"] == "excused"
    assert statuses["tools.names"] == "excused"
    assert statuses["wire"] == "not-checkable"
    assert statuses["verdict"] == "reconstructed"


def test_partial_export_with_the_context_bundle_complete() -> None:
    """Case 19: when the export's context bundle holds every per-request key, system and
    tools clauses pass, epoch and messages clauses are excused, verdict reconstructed."""
    sim = two_epoch_run(context_writes="always")
    partial = load_export(export_run(sim.log, from_seq=6))
    statuses = _statuses(partial, 1)
    for clause in ("system.hash", "system.chars", "system.pieces"):
        assert statuses[clause] == "pass"
    for clause in ("tools.names", "tools.forced", "tools.withheld", "tools.schemaHashes"):
        assert statuses[clause] == "pass"
    for clause in ("epoch", "messages.count", "messages.digest", "messages.newEntries"):
        assert statuses[clause] == "excused"
    assert statuses["messages.requestOnly"] == "pass"
    assert statuses["verdict"] == "reconstructed"


def test_partial_export_mixes_positions_and_iterations() -> None:
    """docs/served.md#what-counts-as-an-epoch: after the cut, an epoch without a readable counter is
    numbered by position."""
    sim = RunSim(tools=[tool("alpha_tool")], encoder=TestEncoder())
    sim.run([call("c1", "alpha_tool"), call("c2", "alpha_tool"), answer("done")])
    partial = load_export(export_run(sim.log, from_seq=6))
    assert [e.epoch for e in epochs(partial)] == [1, 3]
    assert served_at(partial, 2) is None
    first, third = served_at(partial, 1), served_at(partial, 3)
    assert first is not None and third is not None
    receipt = receipt_at(partial, 3)
    assert receipt is not None and receipt.basis.epoch == 3
    assert _statuses(partial, 3)["epoch"] == "pass"
    assert served_views(partial) == (first, third)


def test_partial_export_keeps_later_appends() -> None:
    """docs/served.md#the-fold-base: values appended after the cut read as what the export holds
    (possibly shorter)."""
    sim = two_epoch_run()
    partial = load_export(export_run(sim.log, from_seq=6))
    assert len(partial.value_at("history", 10)) == 1
    assert partial.value_at("iteration", 10) is not None


def test_export_keeps_missing_bodies_missing() -> None:
    """docs/api.md#the-afp-command: an export never invents a body the store lost; the view reports
    it."""
    sim = two_epoch_run()
    gone = fingerprint(sim.sent[1][2])
    loaded = load_export(export_run(copy_log(sim.log, drop_bodies=[gone])))
    assert loaded.body(gone) is None
    view = served_at(loaded, 2)
    assert view is not None and view.gaps[0].refs == (gone,)


def test_export_keeps_damaged_bodies_byte_for_byte() -> None:
    """docs/served.md#when-a-receipt-is-minted law 4: damaged bodies, even non-UTF-8 ones, are
    exported as stored."""
    sim = two_epoch_run()
    target = fingerprint(sim.sent[1][1])
    for damaged in (b'{"role": "user",  "content": "x"}', b"\xff\xfe not text"):
        log = copy_log(sim.log, bodies={target: damaged})
        assert load_export(export_run(log)).body(target) == damaged


def test_live_flag_is_exported() -> None:
    """docs/api.md#the-afp-command: a live run's export says so, and its unfinished epoch reads in
    flight."""
    sim = RunSim(encoder=TestEncoder(), live=True).run([None])
    loaded = load_export(export_run(sim.log))
    assert loaded.live
    assert epochs(loaded)[0].outcome == "in-flight"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (b"not json", "export"),
        (b"[]", "format"),
        (b'{"format": "afp-run-export/2"}', "format"),
        (b'{"format": "afp-run-export/1", "runId": "r"}', "export"),
    ],
)
def test_load_refuses_what_is_not_an_export(data: bytes, field: str) -> None:
    """docs/api.md#the-afp-command: a document that is not an afp-run-export/1 is refused, naming
    the field."""
    with pytest.raises(InvalidValue) as caught:
        load_export(data)
    assert caught.value.context["field"] == field


@pytest.mark.parametrize("from_seq", [-1, True, 1.5])
def test_export_refuses_a_bad_start(from_seq: object) -> None:
    """docs/api.md#the-afp-command: from_seq must be a non-negative int."""
    with pytest.raises(InvalidValue) as caught:
        export_run(two_epoch_run().log, from_seq=from_seq)  # type: ignore[arg-type]
    assert caught.value.context["field"] == "from_seq"
