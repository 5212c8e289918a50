"""Rebuilding served views (docs/served.md#the-served-view): content, gaps, and what a view refuses
to change."""

from __future__ import annotations

import msgspec
import pytest

from afp_runtime.messages import (
    Message,
    ModelParams,
    ToolCall,
    fingerprint,
    message_body,
    salted,
    tool_result,
    user,
)
from afp_runtime.records import ForcedToolWrite
from afp_runtime.served import (
    ServedView,
    check,
    encode_served,
    epochs,
    receipt_at,
    served_at,
    served_views,
    view_of,
)
from afp_runtime.served.gaps import GAP_WHY
from afp_runtime.served.memory import MemoryRunLog
from afp_runtime.served.payloads import thaw_message

from ._log import (
    WRAP_UP_LINE,
    RunSim,
    TestEncoder,
    answer,
    call,
    copy_log,
    piece,
    tool,
    two_epoch_run,
)


def _view(log: MemoryRunLog, k: int) -> ServedView:
    view = served_at(log, k)
    assert view is not None
    return view


def _kinds(view: ServedView) -> list[str]:
    return [gap.gap for gap in view.gaps]


def test_two_epoch_views() -> None:
    """Case 8: what each call was sent, and the receipts' new entries."""
    sim = two_epoch_run()
    one, two = _view(sim.log, 1), _view(sim.log, 2)
    assert _kinds(one) == _kinds(two) == ["provider-defaults"]
    assert one.tools.names == ("alpha_tool",)
    assert one.system.text == "you are a bot"
    assert len(one.messages.as_sent) == 1
    assert [m.role for m in two.messages.as_sent] == ["user", "assistant", "tool"]
    assert two.messages.as_sent[1].tool_calls[0].id == "c1"
    assert two.messages.as_sent[2].tool_call_id == "c1"
    first, second = receipt_at(sim.log, 1), receipt_at(sim.log, 2)
    assert first is not None and second is not None
    assert [(e.index, e.role) for e in first.messages.new_entries] == [(0, "user")]
    assert second.messages.count == 3
    assert [e.index for e in second.messages.new_entries] == [1, 2]
    assert second.messages.new_entries[1].key == "c1"
    assert second.messages.new_entries[0].key is None


def test_view_matches_what_the_adapter_was_handed() -> None:
    """docs/served.md#rebuild-order: the view's system, messages and tools are the request the call
    composed."""
    sim = two_epoch_run()
    for view, request in zip(served_views(sim.log), sim.requests, strict=True):
        assert view.system.text == request.system
        lines = tuple(line.as_message() for line in view.messages.request_only)
        assert view.messages.as_sent + lines == request.messages
        assert tuple(s.as_schema() for s in view.tools.schemas) == request.tools


def test_basis_comes_from_the_receipt() -> None:
    """Case 10: the view's basis is the receipt's model, provider and run id."""
    view = _view(two_epoch_run().log, 1)
    assert view.basis is not None
    assert msgspec.to_builtins(view.basis) == {
        "model": "mock",
        "provider": "scripted",
        "runId": "run-1",
    }


def test_digests_are_salted_per_run() -> None:
    """Case 11: the same run under run-1 and run-2 gives unrelated digests, equal counts."""
    one = receipt_at(two_epoch_run("run-1").log, 1)
    two = receipt_at(two_epoch_run("run-2").log, 1)
    assert one is not None and two is not None
    assert one.system.hash != two.system.hash
    assert one.messages.digest != two.messages.digest
    assert one.messages.new_entries[0].hash != two.messages.new_entries[0].hash
    assert one.system.chars == two.system.chars == 13


def test_receipts_hold_no_content() -> None:
    """Case 12: the receipt digests a secret in the system text; only the view shows it."""
    sim = RunSim("run-1", system="bot with key sk-abc123", encoder=TestEncoder())
    sim.run([answer("done")])
    receipt = receipt_at(sim.log, 1)
    assert receipt is not None
    assert receipt.system.hash == (
        "058344670ab446abf3578e3f0fb337490beaba03737139c14fcabcdd913d9d5d"
    )
    assert b"sk-abc123" not in msgspec.json.encode(receipt)
    assert b"sk-abc123" not in msgspec.json.encode(sim.log.value_at("receipt", 3))
    assert "sk-abc123" in _view(sim.log, 1).system.text


def test_wrap_up_call() -> None:
    """Case 13: the call after the step budget has no tools and one wrap-up line."""
    sim = RunSim(tools=[tool("alpha_tool")], max_iterations=2, encoder=TestEncoder())
    sim.run([call(f"c{n}", "alpha_tool") for n in range(1, 4)])
    assert [e.epoch for e in epochs(sim.log)] == [1, 2, 3]
    view = _view(sim.log, 3)
    assert view.tools.withheld == "wrap-up"
    assert view.tools.names == ()
    assert [(x.role, x.reason, x.text) for x in view.messages.request_only] == [
        ("user", "wrap-up", WRAP_UP_LINE)
    ]
    receipt = receipt_at(sim.log, 3)
    assert receipt is not None and receipt.tools.withheld == "wrap-up"
    assert b'"tools"' not in sim.bodies[2]
    assert _view(sim.log, 2).tools.withheld is None
    for view in served_views(sim.log):
        verdict = check(view, receipt_at(sim.log, view.epoch), encoder=TestEncoder()).verdict
        assert verdict == "verified"


def test_forced_answer_tool() -> None:
    """Case 14: the forced tool is served last, forced, chosen in params, alone on wrap-up."""
    sim = RunSim(
        tools=[tool("alpha_tool")], forced=tool("answer"), max_iterations=2, encoder=TestEncoder()
    )
    sim.run([call(f"c{n}", "alpha_tool") for n in range(1, 4)])
    views = served_views(sim.log)
    assert len(views) == 3
    for view in views:
        receipt = receipt_at(sim.log, view.epoch)
        assert receipt is not None
        assert view.tools.names[-1] == "answer"
        assert view.tools.schemas[-1].name == "answer"
        assert view.tools.forced == "answer"
        assert msgspec.to_builtins(receipt.params)["toolChoice"] == {
            "type": "tool",
            "name": "answer",
        }
        assert check(view, receipt, encoder=TestEncoder()).verdict == "verified"
    assert views[2].tools.names == ("answer",)


def test_forced_tool_not_served_is_not_forced() -> None:
    """docs/served.md#rebuild-order step 5: a run constant naming a tool that is not served leaves
    forced absent."""
    extra = ForcedToolWrite(verb="set", value="answer")
    log = copy_log(two_epoch_run().log, add={0: [extra]})
    assert _view(log, 2).tools.forced is None


def test_damaged_receipt_is_rejected() -> None:
    """Case 17: a receipt overwritten with a fragment is rejected, never repaired."""
    log = copy_log(two_epoch_run().log, replace={(3, "receipt"): {"system": {"hash": "x"}}})
    assert receipt_at(log, 1) is None
    view = _view(log, 1)
    assert view.basis is None
    (gap,) = view.gaps
    assert (gap.gap, gap.cause) == ("no-receipt-on-record", "receipt-shape-rejected")
    assert "basis" not in msgspec.json.decode(encode_served(view))


@pytest.mark.parametrize(
    "stored",
    [
        None,
        "receipt",
        [],
        {"version": 2, "basis": {"epoch": 1}},
        {"version": True, "basis": {"epoch": 1}},
        {"version": 1, "basis": {"epoch": "1"}},
        {"version": 1, "basis": {"epoch": 1}},
    ],
)
def test_receipt_shapes_that_are_rejected(stored: object) -> None:
    """docs/served.md#reading-a-stored-receipt: anything but a decodable version-1 receipt with an
    int epoch is rejected."""
    log = copy_log(two_epoch_run().log, replace={(3, "receipt"): stored})
    assert receipt_at(log, 1) is None
    assert _view(log, 1).gaps[0].cause == "receipt-shape-rejected"


def test_extra_receipt_fields_are_ignored() -> None:
    """docs/served.md#reading-a-stored-receipt: a receipt with unknown extra fields is accepted as
    stored."""
    sim = two_epoch_run()
    stored = dict(msgspec.to_builtins(sim.receipts[0]))
    stored["futureField"] = {"anything": [1, 2]}
    log = copy_log(sim.log, replace={(3, "receipt"): stored})
    assert receipt_at(log, 1) == sim.receipts[0]
    assert _kinds(_view(log, 1)) == ["provider-defaults"]


def test_missing_receipt_bundle() -> None:
    """Case 18: epoch 2 without its receipt bundle is still served, receipt-missing."""
    log = copy_log(two_epoch_run().log, drop=[8])
    view = _view(log, 2)
    (gap,) = view.gaps
    assert (gap.gap, gap.cause) == ("no-receipt-on-record", "receipt-missing")
    assert view.call_runtime_stage_id == "call-model#9"
    assert len(view.messages.as_sent) == 3
    rejected = copy_log(two_epoch_run().log, replace={(8, "receipt"): 7})
    assert _view(rejected, 2).gaps[0].why == gap.why == GAP_WHY["no-receipt-on-record"]


def test_missing_body_is_left_out() -> None:
    """Case 20: the tool message's body is gone; the view omits it and lists its fingerprint."""
    sim = two_epoch_run()
    tool_fp = fingerprint(sim.sent[1][2])
    log = copy_log(sim.log, drop_bodies=[tool_fp])
    view = _view(log, 2)
    assert len(view.messages.as_sent) == 2
    assert _kinds(view) == ["body-missing", "provider-defaults"]
    gap = view.gaps[0]
    assert gap.refs == (tool_fp,)
    assert gap.fields == ("messages.digest", "messages.newEntries", "messages.count")
    assert _kinds(_view(log, 1)) == ["provider-defaults"]


def test_many_missing_bodies_are_counted() -> None:
    """docs/served.md#gap-catalogue: body-missing lists 32 fingerprints, then the count of the
    rest."""
    history = [user(f"message {n}") for n in range(40)]
    sim = RunSim(history=history, encoder=TestEncoder()).run([answer("done")])
    log = copy_log(sim.log, drop_bodies=[fingerprint(m) for m in history])
    (gap, _) = _view(log, 1).gaps
    assert gap.refs == (*(fingerprint(m) for m in history[:32]), 8)


def test_time_line_is_the_last_request_only_line() -> None:
    """Case 23: with time enabled every call ends with one time-line line; without, none."""
    sim = RunSim(
        tools=[tool("alpha_tool")],
        time_line=lambda n: f"It is now day {n}.",
        max_iterations=2,
        encoder=TestEncoder(),
    )
    sim.run([call(f"c{n}", "alpha_tool") for n in range(1, 4)])
    for view in served_views(sim.log):
        last = view.messages.request_only[-1]
        assert (last.reason, last.text) == ("time-line", f"It is now day {view.epoch}.")
        assert [x.reason for x in view.messages.request_only].count("time-line") == 1
        receipt = receipt_at(sim.log, view.epoch)
        assert check(view, receipt, encoder=TestEncoder()).verdict == "verified"
    assert all(v.messages.request_only == () for v in served_views(two_epoch_run().log))


def test_params_are_receipt_only() -> None:
    """Case 24: dials set are in params exactly; no dials give {}; the view never has params."""
    sim = RunSim(params=ModelParams(temperature=0.25, max_tokens=512), encoder=TestEncoder())
    sim.run([answer("done")])
    receipt = receipt_at(sim.log, 1)
    assert receipt is not None
    assert msgspec.to_builtins(receipt.params) == {"temperature": 0.25, "maxTokens": 512}
    plain = receipt_at(two_epoch_run().log, 1)
    assert plain is not None and msgspec.to_builtins(plain.params) == {}
    encoded = msgspec.json.decode(encode_served(_view(sim.log, 1)))
    assert not {"params", "agentCall", "omittedForAttention", "wire"} & set(encoded)


def test_window_omissions() -> None:
    """Case 25: each omitted hash is the new-entry hash its message got when first sent."""
    sim = RunSim(tools=[tool("alpha_tool")], window_keep=1, encoder=TestEncoder())
    sim.run([*(call(f"c{n}", "alpha_tool") for n in range(1, 4)), answer("done")])
    receipts = [receipt_at(sim.log, e.epoch) for e in epochs(sim.log)]
    assert all(r is not None for r in receipts)
    first_hash: dict[str, str] = {}
    for receipt in receipts:
        assert receipt is not None
        for entry in receipt.messages.new_entries:
            first_hash.setdefault(entry.hash, entry.hash)
    assert receipts[0] is not None and receipts[0].omitted_for_attention is None
    assert receipts[1] is not None and receipts[1].omitted_for_attention is None
    removed = 0
    for index, receipt in enumerate(receipts[2:], start=3):
        assert receipt is not None
        omitted = receipt.omitted_for_attention
        assert omitted is not None
        assert omitted.count == len(omitted.hashes) == 2
        removed += omitted.count
        view = _view(sim.log, index)
        sent = {salted("run-1", message_body(thaw_message(m))) for m in view.messages.as_sent}
        for digest in omitted.hashes:
            assert digest in first_hash
            assert digest not in sent
    assert removed == 4
    plain = [receipt_at(two_epoch_run().log, k) for k in (1, 2)]
    assert all(r is not None and r.omitted_for_attention is None for r in plain)


def test_views_are_values() -> None:
    """Case 26: a view cannot be changed in place, and later answers are unaffected."""
    log = two_epoch_run().log
    before = served_views(log)
    view = before[1]
    with pytest.raises(AttributeError):
        view.epoch = 5  # type: ignore[misc]
    assert isinstance(view.messages.as_sent, tuple)
    assert isinstance(view.gaps, tuple) and isinstance(view.tools.names, tuple)
    with pytest.raises(TypeError):
        view.tools.schemas[0].input_schema["type"] = "array"
    with pytest.raises(TypeError):
        view.messages.as_sent[1].tool_calls[0].args["q"] = "x"
    assert served_at(log, 1) == before[0]
    assert served_at(log, 2) == before[1]


def test_nested_payloads_are_read_only() -> None:
    """docs/served.md#a-view-is-a-value: nested objects and arrays inside args and schemas are
    read-only too."""
    args = {"filters": {"tags": ["a", "b"]}, "limit": 3}
    sim = RunSim(tools=[tool("alpha_tool")], encoder=TestEncoder())
    sim.run([call("c1", "alpha_tool", args), answer("done")])
    view = _view(sim.log, 2)
    filters = view.messages.as_sent[1].tool_calls[0].args["filters"]
    with pytest.raises(TypeError):
        filters["tags"] = []
    assert filters["tags"] == ("a", "b")
    assert b'"tags":["a","b"]' in encode_served(view)
    assert check(view, receipt_at(sim.log, 2), encoder=TestEncoder()).verdict == "verified"


def test_empty_pieces_are_dropped() -> None:
    """docs/served.md#rebuild-order step 2: empty pieces never make a blank paragraph (vector 1's
    joined text)."""
    pieces = [piece("You are a bot."), piece("", slot="injection"), piece("Be brief.")]
    sim = RunSim("run-1", system=pieces, encoder=TestEncoder()).run([answer("ok")])
    view = _view(sim.log, 1)
    assert view.system.text == "You are a bot.\n\nBe brief."
    assert [p.text for p in view.system.pieces] == ["You are a bot.", "Be brief."]
    receipt = receipt_at(sim.log, 1)
    assert receipt is not None and receipt.system.hash == (
        "83a03216147f4c77a1236e66df61675beee561aa7d6eedca1ab7f76aae4e152d"
    )
    assert check(view, receipt, encoder=TestEncoder()).verdict == "verified"


def test_context_values_are_read_as_the_call_read_them() -> None:
    """docs/served.md#the-runlog-interface: pieces written only when changed are still read at every
    later call."""
    sim = RunSim(tools=[tool("alpha_tool")], encoder=TestEncoder())
    sim.step(call("c1", "alpha_tool"))
    sim.pieces = [piece("you are a bot"), piece("new rule", slot="injection", source="rules")]
    sim.step(call("c2", "alpha_tool"))
    sim.step(answer("done"))
    context_writes = [{w.key for w in b.writes} for b in sim.log.bundles() if b.stage == "context"]
    assert context_writes[0] == {"systemPieces", "servedTools", "requestOnly"}
    assert context_writes[1] == {"systemPieces"}
    assert context_writes[2] == set()
    texts = [v.system.text for v in served_views(sim.log)]
    assert texts == ["you are a bot", "you are a bot\n\nnew rule", "you are a bot\n\nnew rule"]
    assert [v.tools.names for v in served_views(sim.log)] == [("alpha_tool",)] * 3


def test_substitutions_are_applied_per_request() -> None:
    """docs/served.md#rebuild-order step 3: a stub replaces a message in what was sent, never in the
    conversation."""
    stub = tool_result("c1", "alpha_tool", "[set aside: 2,000 chars]")
    sim = RunSim(tools=[tool("alpha_tool")], encoder=TestEncoder())
    sim.step(call("c1", "alpha_tool"))
    sim.step(call("c2", "alpha_tool"), stubs={2: stub})
    sim.step(answer("done"))
    views = served_views(sim.log)
    assert views[1].messages.as_sent[2] == stub
    assert views[2].messages.as_sent[2].content == "alpha_tool answered c1"
    for view in views:
        assert check(view, receipt_at(sim.log, view.epoch), encoder=TestEncoder()).verdict == (
            "verified"
        )


def test_substitution_outside_the_list_is_damage() -> None:
    """docs/served.md#rebuild-order step 3: a substitution index outside the list is ignored and
    fails the digest."""
    stub = tool_result("c1", "alpha_tool", "[set aside]")
    sim = RunSim(tools=[tool("alpha_tool")], encoder=TestEncoder())
    sim.step(call("c1", "alpha_tool"))
    sim.step(answer("done"), stubs={2: stub})
    bad = [{"index": 7, "message": msgspec.to_builtins(stub)}]
    log = copy_log(sim.log, replace={(7, "substitutions"): bad})
    view = _view(log, 2)
    assert view.messages.as_sent == tuple(sim.history[:3])
    assert _kinds(view) == ["provider-defaults"]
    report = check(view, receipt_at(log, 2), encoder=TestEncoder(), log=log)
    statuses = {c.clause: (c.status, c.detail) for c in report.clauses}
    assert statuses["messages.digest"] == ("fail", "digest-differs")
    assert report.verdict == "damaged"


def test_markers_survive_the_rebuild() -> None:
    """docs/served.md#salted-digests: markers come from the list references and never change a
    digest."""
    marked = Message(role="user", content="note", injected_by="window")
    refused = tool_result("c0", "gone_tool", "unknown tool", not_dispatched=True)
    assistant = Message(role="assistant", tool_calls=(ToolCall(id="c0", name="gone_tool"),))
    history = [user("go"), assistant, refused, marked]
    sim = RunSim(history=history, encoder=TestEncoder()).run([answer("ok")])
    view = _view(sim.log, 1)
    assert view.messages.as_sent[2].not_dispatched is True
    assert view.messages.as_sent[3].injected_by == "window"
    assert check(view, receipt_at(sim.log, 1), encoder=TestEncoder()).verdict == "verified"


def test_view_of_a_location() -> None:
    """docs/served.md#rebuild-order: view_of over each location equals served_at and the one-pass
    listing."""
    sim = RunSim(tools=[tool("alpha_tool")], window_keep=1, notice=True, encoder=TestEncoder())
    sim.run([*(call(f"c{n}", "alpha_tool") for n in range(1, 6)), answer("done")])
    listed = served_views(sim.log)
    assert listed == tuple(view_of(e, sim.log) for e in epochs(sim.log))
    assert listed == tuple(served_at(sim.log, e.epoch) for e in epochs(sim.log))


def test_view_json_is_camel_case() -> None:
    """docs/served.md#view-fields: a view encodes with camelCase names and without absent fields."""
    data = msgspec.json.decode(encode_served(_view(two_epoch_run().log, 2)))
    assert set(data) == {
        "epoch",
        "callRuntimeStageId",
        "basis",
        "system",
        "messages",
        "tools",
        "gaps",
    }
    assert set(data["messages"]) == {"asSent", "requestOnly"}
    assert set(data["tools"]) == {"names", "schemas"}
    assert data["tools"]["schemas"][0]["inputSchema"] == {"type": "object"}
    assert data["messages"]["asSent"][2]["toolCallId"] == "c1"
