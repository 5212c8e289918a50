"""The ``receipt`` stage: encode the request and commit its digests before it is sent."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import msgspec

from afp_runtime.messages import (
    Message,
    ModelRequest,
    ToolSchema,
    fingerprint,
    salted,
)
from afp_runtime.models import EncodedRequest
from afp_runtime.records import (
    ReceiptMinted,
    Txn,
    Write,
    runtime_stage_id,
)
from afp_runtime.served import (
    RECEIPT_VERSION,
    Basis,
    MessagesDigest,
    OmittedForAttention,
    PieceDigest,
    Receipt,
    RequestOnlyDigest,
    SystemDigest,
    ToolsDigest,
    extend_digest,
    new_entries,
    request_only_hash,
    schema_hash,
    start_digest,
    wire_digest,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


def _schema_hash(run: Run, schema: ToolSchema) -> str:
    if any(extension.schemas_vary for extension in run.extensions):
        return schema_hash(run.run_id, schema)
    found = run.state.schema_hashes.get(schema.name)
    if found is None:
        found = run.state.schema_hashes[schema.name] = schema_hash(run.run_id, schema)
    return found


async def receipt(
    run: Run, request: ModelRequest, *, sent: tuple[Message, ...], omitted: tuple[str, ...]
) -> EncodedRequest | None:
    """Digest the request about to be sent (``sent``: the window as sent; ``omitted``: what this
    iteration's window visit removed) and commit its receipt."""
    run.begin("receipt")
    model = run.d.model
    encoded = model.encode(request) if model.encoder is not None else None
    # Between window changes the as-sent list only grows, so the digest extends by the new
    # messages; when stubs change what is sent, it is recomputed over the whole window.
    substitutions = run.state.served.get("substitutions") or []
    sent_fps = list(run.state.fps)
    for sub in substitutions:
        sent_fps[sub["index"]] = fingerprint(sub["message"])
    grew_only = (
        run.state.base_is_prefix and not substitutions and not run.state.digest_had_substitutions
    )
    previous = run.state.digest.count
    if substitutions or run.state.digest_had_substitutions:
        run.state.digest = extend_digest(run.run_id, start_digest(run.run_id), sent, sent_fps)
    else:
        run.state.digest = extend_digest(
            run.run_id, run.state.digest, run.state.history, run.state.fps
        )
    run.state.digest_had_substitutions = bool(substitutions)
    # Per-entry hashes only for what is new since the base receipt
    # (docs/architecture.md#decision-2-receipts-grow-with-new-messages-only).
    if grew_only and previous <= len(sent_fps):
        # The base is this run's previous call and the window only grew since: the new
        # entries are exactly the appended ones (O(new), not O(window)).
        appended = sent_fps[previous:]
        entries = new_entries(run.run_id, sent[previous:], appended, {}, run.state.body_hashes)
        entries = tuple(msgspec.structs.replace(e, index=e.index + previous) for e in entries)
        for fp in appended:
            run.state.base_counts[fp] = run.state.base_counts.get(fp, 0) + 1
    else:
        entries = new_entries(
            run.run_id, sent, sent_fps, run.state.base_counts, run.state.body_hashes
        )
        run.state.base_counts = dict(Counter(sent_fps))
    run.state.base_is_prefix = not substitutions
    agent_call = run.state.conv.model_calls + 1
    call_stage_id = runtime_stage_id("call-model", run.seq + 1)
    request_only = tuple(
        RequestOnlyDigest(
            role=line["role"],
            hash=request_only_hash(run.run_id, line["text"], line["role"]),
            reason=line["reason"],
        )
        for line in run.state.served["requestOnly"]
    )
    pieces = tuple(
        PieceDigest(hash=salted(run.run_id, p["text"]), slot=p["slot"], source=p["source"])
        for p in run.state.served["systemPieces"]
        if p["text"]
    )
    receipt = Receipt(
        version=RECEIPT_VERSION,
        basis=Basis(
            epoch=run.state.iteration,
            run_id=run.run_id,
            model=model.model,
            provider=model.provider,
        ),
        agent_call=agent_call,
        call_runtime_stage_id=call_stage_id,
        system=SystemDigest(
            hash=salted(run.run_id, request.system), chars=len(request.system), pieces=pieces
        ),
        messages=MessagesDigest(
            count=len(request.messages),
            digest=run.state.digest.digest,
            new_entries=entries,
            request_only=request_only,
        ),
        tools=ToolsDigest(
            names=tuple(t.name for t in request.tools),
            schema_hashes={t.name: _schema_hash(run, t) for t in request.tools},
            forced=None,
            withheld="wrap-up" if run.state.wrap_up_asked else None,
        ),
        params=request.params,
        omitted_for_attention=(
            OmittedForAttention(count=len(omitted), hashes=omitted) if omitted else None
        ),
        wire=(
            wire_digest(
                run.run_id,
                encoded.body,
                encoder=model.encoder or "",
                settings=dict(model.settings()),
                deterministic=model.deterministic,
            )
            if encoded is not None
            else None
        ),
    )
    # The next run's first receipt takes this call as its base (docs/served.md#receipt-fields).
    state = run.checkpoint(
        model_calls=agent_call,
        last_sent=run.state.conv.history,
        last_sent_subs=tuple((sub["index"], sent_fps[sub["index"]]) for sub in substitutions),
    )
    bundle = run.bundle([Write(key="receipt", verb="set", value=receipt)])
    # The receipt is durable before the request leaves; the window and context bundles (and the
    # previous iteration's close) share its transaction (docs/loop.md#durability-modes).
    await run.committer.stage(
        Txn(agent_id=run.agent_id, bundles=[bundle], conversation=state), durable=True
    )
    run.state.epochs += 1
    run.emit(
        ReceiptMinted(
            epoch=run.state.iteration,
            agent_call=agent_call,
            call_runtime_stage_id=call_stage_id,
            wire=encoded is not None,
            wire_digest=receipt.wire.hash if receipt.wire is not None else msgspec.UNSET,
        )
    )
    return encoded
