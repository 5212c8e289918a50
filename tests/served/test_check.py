"""The conformance law (docs/served.md#the-conformance-law): clauses, excuses, the wire clause and
the verdict."""

from __future__ import annotations

import msgspec

from afp_runtime.messages import ModelParams, fingerprint, message_body, user
from afp_runtime.models import ScriptedModel
from afp_runtime.served import (
    ConformanceReport,
    Receipt,
    ServedView,
    check,
    encode_served,
    receipt_at,
    served_at,
    served_views,
)
from afp_runtime.served.check import CLAUSES, rebuild_request

from ._log import RunSim, TestEncoder, answer, call, copy_log, tool, two_epoch_run


def _statuses(report: ConformanceReport) -> dict[str, tuple[str, str | None]]:
    return {c.clause: (c.status, c.detail) for c in report.clauses}


def _pair(log: object, k: int) -> tuple[ServedView, Receipt | None]:
    view = served_at(log, k)  # type: ignore[arg-type]
    assert view is not None
    return view, receipt_at(log, k)  # type: ignore[arg-type]


def test_two_epoch_run_is_verified() -> None:
    """Case 8: both epochs verify, the wire clause included."""
    log = two_epoch_run().log
    for k in (1, 2):
        view, receipt = _pair(log, k)
        report = check(view, receipt, encoder=TestEncoder(), log=log)
        assert report.verdict == "verified"
        assert [c.clause for c in report.clauses] == list(CLAUSES)
        assert all(c.status == "pass" and c.detail is None for c in report.clauses)
        assert (report.run_id, report.epoch, report.gaps) == ("run-1", k, ("provider-defaults",))


def test_the_built_in_scripted_adapter_is_an_encoder() -> None:
    """docs/served.md#the-wire-digest: the scripted adapter's own encode reproduces the bytes the
    receipt witnessed."""
    sim = RunSim(tools=[tool("alpha_tool")], encoder=TestEncoder())
    sim.run([call("c1", "alpha_tool"), answer("done")])
    model = ScriptedModel([], model="mock")
    for view in served_views(sim.log):
        report = check(view, receipt_at(sim.log, view.epoch), encoder=model, log=sim.log)
        assert report.verdict == "verified"
    assert model.encode(sim.requests[1]).body == sim.bodies[1]


def test_rebuilt_request_is_the_sent_request() -> None:
    """docs/served.md#the-wire-digest: recomposing the request from view and receipt gives the
    request the call made."""
    sim = RunSim(
        tools=[tool("alpha_tool")],
        forced=tool("answer"),
        params=ModelParams(temperature=0.5),
        time_line=lambda n: f"day {n}",
        encoder=TestEncoder(),
    )
    sim.run([call("c1", "alpha_tool"), answer("done")])
    for view, request in zip(served_views(sim.log), sim.requests, strict=True):
        receipt = receipt_at(sim.log, view.epoch)
        assert receipt is not None
        assert rebuild_request(view, receipt) == request


def test_without_a_receipt_nothing_is_checkable() -> None:
    """Case 17: a rejected receipt makes every clause not-checkable; verdict reconstructed."""
    log = copy_log(two_epoch_run().log, replace={(3, "receipt"): {"system": {"hash": "x"}}})
    view, receipt = _pair(log, 1)
    assert receipt is None
    report = check(view, receipt, encoder=TestEncoder(), log=log)
    assert all(c.status == "not-checkable" and c.detail == "no-receipt" for c in report.clauses)
    assert report.verdict == "reconstructed"
    assert report.run_id == "run-1"
    assert check(view, None).run_id is None


def test_missing_body_excuses_the_message_clauses() -> None:
    """Case 20: with a body gone, the messages clauses are excused, the rest pass."""
    sim = two_epoch_run()
    log = copy_log(sim.log, drop_bodies=[fingerprint(sim.sent[1][2])])
    view, receipt = _pair(log, 2)
    report = check(view, receipt, encoder=TestEncoder(), log=log)
    statuses = _statuses(report)
    for clause in ("messages.count", "messages.digest", "messages.newEntries"):
        assert statuses[clause][0] == "excused"
    assert statuses["messages.requestOnly"] == ("pass", None)
    assert statuses["system.hash"] == ("pass", None)
    assert statuses["wire"] == ("not-checkable", "composition-incomplete")
    assert report.verdict == "reconstructed"


def test_model_without_encode() -> None:
    """Case 21: no encode, no wire: no-wire-digest, wire not-checkable, the rest pass."""
    sim = RunSim(tools=[tool("alpha_tool")], encoder=TestEncoder(encoder=None))
    sim.run([call("c1", "alpha_tool"), answer("done")])
    for view in served_views(sim.log):
        receipt = receipt_at(sim.log, view.epoch)
        assert receipt is not None and receipt.wire is None
        assert b'"wire"' not in msgspec.json.encode(sim.log.value_at("receipt", 3))
        assert [g.gap for g in view.gaps] == ["no-wire-digest", "provider-defaults"]
        report = check(view, receipt, encoder=TestEncoder(), log=sim.log)
        statuses = _statuses(report)
        assert statuses.pop("wire") == ("not-checkable", "no-wire")
        assert all(status == ("pass", None) for status in statuses.values())
        assert report.verdict == "reconstructed"


def test_non_deterministic_encoder() -> None:
    """docs/served.md#every-view-has-a-gap: an adapter declaring deterministic false gives
    wire-not-reproducible."""
    sim = RunSim(encoder=TestEncoder(deterministic=False)).run([answer("done")])
    view, receipt = _pair(sim.log, 1)
    assert [g.gap for g in view.gaps] == ["wire-not-reproducible", "provider-defaults"]
    report = check(view, receipt, encoder=TestEncoder(deterministic=False))
    assert _statuses(report)["wire"] == ("not-checkable", "not-deterministic")
    assert report.verdict == "reconstructed"


def test_no_encoder_at_check_time() -> None:
    """docs/served.md#the-conformance-law: without an encoder now, the wire clause cannot be run."""
    view, receipt = _pair(two_epoch_run().log, 1)
    report = check(view, receipt)
    assert _statuses(report)["wire"] == ("not-checkable", "encoder-unavailable")
    assert report.verdict == "reconstructed"
    assert check(view, receipt, encoder=TestEncoder(encoder=None)).verdict == "reconstructed"


def test_encoder_drift_is_not_checkable() -> None:
    """Case 22: an adapter with other settings or another encoder id cannot re-check bytes."""
    view, receipt = _pair(two_epoch_run().log, 2)
    changed = TestEncoder(extra={"maxTokens": 1024})
    assert _statuses(check(view, receipt, encoder=changed))["wire"] == (
        "not-checkable",
        "encoder-changed",
    )
    renamed = TestEncoder(encoder="scripted/2")
    assert _statuses(check(view, receipt, encoder=renamed))["wire"] == (
        "not-checkable",
        "encoder-changed",
    )


def test_tampered_body_is_located() -> None:
    """Case 22: a tampered stored body fails the digest, names its index, and fails the wire."""
    sim = two_epoch_run()
    target = fingerprint(sim.sent[1][1])
    log = copy_log(sim.log, bodies={target: message_body(user("something else entirely"))})
    view, receipt = _pair(log, 2)
    report = check(view, receipt, encoder=TestEncoder(), log=log)
    statuses = _statuses(report)
    assert statuses["messages.digest"] == ("fail", "index-1-hash-differs")
    assert statuses["messages.newEntries"] == ("fail", "index-1-role-differs")
    assert statuses["wire"] == ("fail", "hash-differs")
    assert report.verdict == "damaged"
    without_log = check(view, receipt, encoder=TestEncoder())
    assert _statuses(without_log)["messages.digest"] == ("fail", "digest-differs")
    first, first_receipt = _pair(log, 1)
    assert check(first, first_receipt, encoder=TestEncoder(), log=log).verdict == "verified"


def test_tampered_tool_result_hash() -> None:
    """Case 22: a body changed in content only fails newEntries by hash at its index."""
    sim = two_epoch_run()
    original = sim.sent[1][2]
    altered = msgspec.structs.replace(original, content="a different result")
    log = copy_log(sim.log, bodies={fingerprint(original): message_body(altered)})
    view, receipt = _pair(log, 2)
    statuses = _statuses(check(view, receipt, encoder=TestEncoder(), log=log))
    assert statuses["messages.digest"] == ("fail", "index-2-hash-differs")
    assert statuses["messages.newEntries"] == ("fail", "index-2-hash-differs")
    assert statuses["messages.count"] == ("pass", None)


def test_damaged_receipt_digest_fails() -> None:
    """docs/served.md#the-conformance-law: a receipt digest that no longer matches is a failure of
    that clause."""
    sim = two_epoch_run()
    stored = msgspec.to_builtins(sim.receipts[0])
    stored["system"]["hash"] = "0" * 64
    stored["tools"]["names"] = ["other_tool"]
    log = copy_log(sim.log, replace={(3, "receipt"): stored})
    view, receipt = _pair(log, 1)
    statuses = _statuses(check(view, receipt, encoder=TestEncoder(), log=log))
    assert statuses["system.hash"] == ("fail", "hash-differs")
    assert statuses["tools.names"] == ("fail", "names-differ")
    assert statuses["system.chars"] == ("pass", None)


def test_undecodable_body_is_damage() -> None:
    """docs/served.md#the-conformance-law: a stored body that is no message is left out without
    excuse and located."""
    sim = two_epoch_run()
    log = copy_log(sim.log, bodies={fingerprint(sim.sent[1][1]): b"not json"})
    view, receipt = _pair(log, 2)
    assert len(view.messages.as_sent) == 2
    assert [g.gap for g in view.gaps] == ["provider-defaults"]
    report = check(view, receipt, encoder=TestEncoder(), log=log)
    assert _statuses(report)["messages.digest"] == ("fail", "index-1-hash-differs")
    assert _statuses(report)["messages.count"] == ("fail", "count-differs")


def test_epoch_clause_compares_numbers() -> None:
    """docs/served.md#the-conformance-law: the receipt's epoch must equal the view's number."""
    sim = two_epoch_run()
    stored = msgspec.to_builtins(sim.receipts[1])
    stored["basis"]["epoch"] = 5
    log = copy_log(sim.log, replace={(8, "receipt"): stored})
    view, receipt = _pair(log, 2)
    assert _statuses(check(view, receipt, encoder=TestEncoder()))["epoch"] == (
        "fail",
        "epoch-differs",
    )


def test_report_encodes_in_camel_case() -> None:
    """docs/served.md#the-conformance-law: the report's JSON has runId, epoch, verdict, clauses and
    gap kinds."""
    view, receipt = _pair(two_epoch_run().log, 1)
    data = msgspec.json.decode(encode_served(check(view, receipt)))
    assert set(data) == {"runId", "epoch", "verdict", "clauses", "gaps"}
    assert data["clauses"][-1] == {
        "clause": "wire",
        "status": "not-checkable",
        "detail": "encoder-unavailable",
    }
