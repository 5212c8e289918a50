"""``mint_receipt``: the pure assembly of a receipt from a request, its served lines and the
digests the receipt stage computed (docs/served.md#when-a-receipt-is-minted)."""

from __future__ import annotations

import msgspec

from afp_runtime.messages import ModelRequest, ToolSchema, salted, user
from afp_runtime.served import (
    Receipt,
    extend_digest,
    mint_receipt,
    new_entries,
    schema_hash,
    start_digest,
    wire_digest,
)
from afp_runtime.served.receipt import RECEIPT_VERSION, OmittedForAttention, request_only_hash

RUN = "run-1"
LOOKUP = ToolSchema(name="lookup", description="Look an order up.")
CANCEL = ToolSchema(name="cancel", description="Cancel an order.")


def _mint(request: ModelRequest, **changes: object) -> Receipt:
    fps = ["fp-hi"]
    args: dict[str, object] = {
        "epoch": 2,
        "model": "m-1",
        "provider": "scripted",
        "agent_call": 3,
        "call_runtime_stage_id": "call-model#7",
        "digest": extend_digest(RUN, start_digest(RUN), request.messages, fps),
        "entries": new_entries(RUN, request.messages, fps, {}),
        "request_only": [{"role": "user", "text": "It is Monday.", "reason": "time"}],
        "system_pieces": [
            {"text": "Be brief.", "slot": "base", "source": "agent"},
            {"text": "", "slot": "findings", "source": "findings"},
        ],
        "schema_hashes": {t.name: schema_hash(RUN, t) for t in request.tools},
        "withheld": None,
        "omitted": (),
        "wire": None,
    }
    args.update(changes)
    return mint_receipt(RUN, request, **args)  # type: ignore[arg-type]


def test_a_receipt_digests_the_request_and_its_lines() -> None:
    """Basis, system, messages and tools come out as the receipt fields say; an empty system
    piece contributes nothing; request-only lines are hashed as the message they were sent as."""
    request = ModelRequest(
        model="m-1", system="Be brief.", messages=(user("hi"),), tools=(LOOKUP, CANCEL)
    )
    receipt = _mint(request)
    assert receipt.version == RECEIPT_VERSION
    assert (receipt.basis.epoch, receipt.basis.run_id, receipt.basis.model) == (2, RUN, "m-1")
    assert (receipt.agent_call, receipt.call_runtime_stage_id) == (3, "call-model#7")
    assert receipt.system.hash == salted(RUN, "Be brief.")
    assert receipt.system.chars == len("Be brief.")
    assert [(p.slot, p.hash) for p in receipt.system.pieces] == [("base", salted(RUN, "Be brief."))]
    assert receipt.messages.count == 1
    assert len(receipt.messages.new_entries) == 1
    [line] = receipt.messages.request_only
    assert (line.role, line.reason) == ("user", "time")
    assert line.hash == request_only_hash(RUN, "It is Monday.", "user")
    assert receipt.tools.names == ("lookup", "cancel")
    assert receipt.tools.schema_hashes == {
        "lookup": schema_hash(RUN, LOOKUP),
        "cancel": schema_hash(RUN, CANCEL),
    }
    assert receipt.omitted_for_attention is None
    assert receipt.wire is None
    # The receipt holds no content: the system text and the request-only line appear nowhere.
    encoded = msgspec.json.encode(receipt)
    assert b"Be brief." not in encoded
    assert b"Monday" not in encoded


def test_omitted_withheld_and_wire_are_carried_when_present() -> None:
    """What the window visit removed, a wrap-up's withheld tools and the wire digest land in
    their fields as given."""
    request = ModelRequest(model="m-1", messages=(user("hi"),))
    wire = wire_digest(RUN, b"{}", encoder="e", settings={}, deterministic=True)
    receipt = _mint(request, withheld="wrap-up", omitted=("h1", "h2"), wire=wire)
    assert receipt.omitted_for_attention == OmittedForAttention(count=2, hashes=("h1", "h2"))
    assert receipt.tools.withheld == "wrap-up"
    assert receipt.tools.names == ()
    assert receipt.wire == wire
