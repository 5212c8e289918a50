"""The ``receipt`` stage: encode the request and commit its digests before it is sent."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime.messages import (
    Message,
    ModelRequest,
    ToolSchema,
    fingerprint,
)
from afp_runtime.models import EncodedRequest
from afp_runtime.records import (
    ReceiptMinted,
    ReceiptWrite,
    Txn,
    runtime_stage_id,
)
from afp_runtime.served import (
    Receipt,
    extend_digest,
    mint_receipt,
    new_entries,
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
        counts = Counter(sent_fps)
        entries = new_entries(
            run.run_id, sent, sent_fps, run.state.base_counts, run.state.body_hashes, counts
        )
        run.state.base_counts = counts
    run.state.base_is_prefix = not substitutions
    agent_call = run.state.conv.model_calls + 1
    call_stage_id = runtime_stage_id("call-model", run.seq + 1)
    receipt = _mint(run, request, encoded, entries, omitted, agent_call, call_stage_id)
    # The next run's first receipt takes this call as its base (docs/served.md#receipt-fields).
    state = run.checkpoint(
        msgspec.structs.replace(
            run.state.conv,
            model_calls=agent_call,
            last_sent=run.state.conv.history,
            last_sent_subs=tuple((sub["index"], sent_fps[sub["index"]]) for sub in substitutions),
        )
    )
    bundle = run.bundle([ReceiptWrite(value=msgspec.to_builtins(receipt))])
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


def _mint(
    run: Run,
    request: ModelRequest,
    encoded: EncodedRequest | None,
    entries: Any,
    omitted: tuple[str, ...],
    agent_call: int,
    call_stage_id: str,
) -> Receipt:
    """The receipt of the request about to be sent (docs/served.md#receipt-fields)."""
    model = run.d.model
    return mint_receipt(
        run.run_id,
        request,
        epoch=run.state.iteration,
        model=model.model,
        provider=model.provider,
        agent_call=agent_call,
        call_runtime_stage_id=call_stage_id,
        digest=run.state.digest,
        entries=entries,
        request_only=run.state.served["requestOnly"],
        system_pieces=run.state.served["systemPieces"],
        schema_hashes={t.name: _schema_hash(run, t) for t in request.tools},
        withheld="wrap-up" if run.state.wrap_up_asked else None,
        omitted=omitted,
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
