"""The ``receipt`` stage: encode the request and commit its digests before it is sent."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from afp_runtime.messages import (
    ModelRequest,
    ToolSchema,
    fingerprint,
    salted,
)
from afp_runtime.models import EncodedRequest
from afp_runtime.records import (
    Txn,
    Write,
    runtime_stage_id,
)
from afp_runtime.served import (
    RECEIPT_VERSION,
    Basis,
    MessagesDigest,
    OmittedForAttention,
    Receipt,
    RequestOnlyDigest,
    SystemDigest,
    ToolsDigest,
    extend_digest,
    schema_hash,
    start_digest,
    wire_digest,
)

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


log = structlog.get_logger()


def _schema_hash(run: Run, schema: ToolSchema) -> str:
    found = run.schema_hashes.get(schema.name)
    if found is None:
        found = run.schema_hashes[schema.name] = schema_hash(run.run_id, schema)
    return found


async def receipt(run: Run, request: ModelRequest) -> EncodedRequest | None:
    run.begin("receipt")
    model = run.d.model
    encoded = model.encode(request) if model.encoder is not None else None
    # Between window changes the as-sent list only grows, so the digest extends by the new
    # messages; when stubs change what is sent, it is recomputed over the whole window.
    substitutions = run.served.get("substitutions") or []
    if substitutions or run.digest_had_substitutions:
        fps = list(run.fps)
        for sub in substitutions:
            fps[sub["index"]] = fingerprint(sub["message"])
        run.digest = extend_digest(run.run_id, start_digest(run.run_id), run.sent, fps)
    else:
        run.digest = extend_digest(run.run_id, run.digest, run.history, run.fps)
    run.digest_had_substitutions = bool(substitutions)
    agent_call = run.conv.model_calls + 1
    call_stage_id = runtime_stage_id("call-model", run.seq + 1)
    request_only = tuple(
        RequestOnlyDigest(
            role="user",
            hash=salted(run.run_id, line["text"]),
            reason=line["reason"],
        )
        for line in run.served["requestOnly"]
    )
    receipt = Receipt(
        version=RECEIPT_VERSION,
        basis=Basis(
            epoch=run.iteration,
            run_id=run.run_id,
            model=model.model,
            provider=model.provider,
        ),
        agent_call=agent_call,
        call_runtime_stage_id=call_stage_id,
        system=SystemDigest(hash=salted(run.run_id, request.system), chars=len(request.system)),
        messages=MessagesDigest(
            count=len(request.messages), digest=run.digest.digest, request_only=request_only
        ),
        tools=ToolsDigest(
            names=tuple(t.name for t in request.tools),
            schema_hashes={t.name: _schema_hash(run, t) for t in request.tools},
            forced=None,
            withheld="wrap-up" if run.wrap_up_asked else None,
        ),
        params=request.params,
        omitted_for_attention=(
            OmittedForAttention(count=len(run.omitted), hashes=run.omitted) if run.omitted else None
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
    state = run.checkpoint(model_calls=agent_call)
    bundle = run.bundle([Write(key="receipt", verb="set", value=receipt)])
    await run.committer.stage(Txn(agent_id=run.agent_id, bundles=[bundle], conversation=state))
    run.epochs += 1
    run.emit(
        "receipt.minted",
        {
            "epoch": run.iteration,
            "agentCall": agent_call,
            "callRuntimeStageId": call_stage_id,
            "wire": encoded is not None,
        },
    )
    return encoded
