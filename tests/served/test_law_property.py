"""The conformance law as a property: any simulated run's views verify against its receipts."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_runtime.messages import ModelParams, ToolSchema, user
from afp_runtime.served import (
    check,
    epochs,
    export_run,
    load_export,
    receipt_at,
    served_at,
    served_views,
)
from afp_runtime.served.check import rebuild_request
from afp_runtime.served.gaps import GAP_KINDS

from ._log import Failure, RunSim, TestEncoder, answer, call, piece

_TEXT = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(["\n", "🐛", "é", '"'])),
    max_size=12,
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    _TEXT,
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=8,
)
_OBJECTS = st.dictionaries(_TEXT, _JSON, max_size=3)
_NAMES = ("alpha", "beta", "gamma")


@st.composite
def _schemas(draw: st.DrawFn) -> list[ToolSchema]:
    names = draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=3))
    return [
        ToolSchema(name=name, description=draw(_TEXT), input_schema=draw(_OBJECTS))
        for name in names
    ]


@st.composite
def _runs(draw: st.DrawFn) -> tuple[RunSim, list[Any]]:
    schemas = draw(_schemas())
    pieces = [
        piece(draw(_TEXT), slot=draw(st.sampled_from(["instructions", "injection"])), source=s)
        for s in draw(st.lists(st.sampled_from(["ops", "rules", "findings"]), max_size=3))
    ]
    forced = ToolSchema(name="answer", input_schema={"type": "object"})
    params = draw(
        st.sampled_from(
            [ModelParams(), ModelParams(temperature=0.25, max_tokens=512), ModelParams(top_p=0.9)]
        )
    )
    sim = RunSim(
        draw(st.sampled_from(["run-1", "run-2", "r"])),
        system=pieces,
        tools=schemas,
        forced=forced if draw(st.booleans()) else None,
        params=params,
        encoder=TestEncoder(),
        max_iterations=draw(st.integers(1, 4)),
        window_keep=draw(st.sampled_from([None, 1, 2])),
        notice=draw(st.booleans()),
        time_line=(lambda n: f"day {n}") if draw(st.booleans()) else None,
        first_iteration=draw(st.integers(1, 3)),
        history=[user(draw(_TEXT)) for _ in range(draw(st.integers(1, 3)))],
        context_writes=draw(st.sampled_from(["changed", "always"])),
    )
    steps: list[Any] = []
    for n in range(draw(st.integers(1, 6))):
        name = draw(st.sampled_from([*(s.name for s in schemas), "gone"]))
        kind = draw(st.sampled_from(["call", "call", "answer", "fail", "crash"]))
        stub = draw(st.booleans())
        if kind == "call":
            steps.append((call(f"c{n}", name, draw(_OBJECTS)), stub))
        elif kind == "answer":
            steps.append((answer(draw(_TEXT)), stub))
        elif kind == "fail":
            steps.append((Failure(), stub))
        else:
            steps.append((None, stub))
    return sim, steps


def _play(sim: RunSim, steps: list[Any]) -> RunSim:
    for outcome, stub in steps:
        if sim.ended:
            break
        stubs = {-1: user("[set aside]")} if stub else None
        sim.step(outcome, stubs=stubs)
    return sim


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_runs())
def test_every_simulated_call_verifies(run: tuple[RunSim, list[Any]]) -> None:
    """docs/served.md#the-conformance-law: a view built from any simulated run is verified against
    the receipt it minted."""
    sim = _play(*run)
    log = sim.log
    views = served_views(log)
    assert len(views) == len(sim.receipts) == len(epochs(log))
    assert views == tuple(served_at(log, e.epoch) for e in epochs(log))
    for view, receipt, request in zip(views, sim.receipts, sim.requests, strict=True):
        assert receipt_at(log, view.epoch) == receipt
        assert [g.gap for g in view.gaps] == ["provider-defaults"]
        assert rebuild_request(view, receipt) == request
        report = check(view, receipt, encoder=TestEncoder(), log=log)
        assert report.verdict == "verified", report
    assert served_views(load_export(export_run(log))) == views


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_runs(), st.integers(1, 12))
def test_partial_exports_never_fail(run: tuple[RunSim, list[Any]], cut: int) -> None:
    """docs/served.md#gaps: a partial export is never damaged: what it lacks is excused, never
    failed."""
    sim = _play(*run)
    partial = load_export(export_run(sim.log, from_seq=cut))
    for view in served_views(partial):
        kinds = [g.gap for g in view.gaps]
        assert kinds[0] == "no-fold-base"
        assert kinds == sorted(kinds, key=GAP_KINDS.index)
        assert ("no-receipt-on-record" in kinds) != ("provider-defaults" in kinds)
        receipt = receipt_at(partial, view.epoch)
        if receipt is not None and receipt.basis.epoch != view.epoch:
            continue  # a position-numbered view: its receipt is looked up by another number
        report = check(view, receipt, encoder=TestEncoder(), log=partial)
        assert report.verdict != "damaged", report
