"""The ``context`` stage: compose the request (system pieces, served tools, request-only lines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from afp_runtime._logging import get_logger
from afp_runtime.findings import decorate_schema, offer_ids, serve_findings
from afp_runtime.loop.stages._time import has_forms, time_line_text, with_time_quote
from afp_runtime.messages import (
    Message,
    ModelRequest,
    ToolSchema,
)
from afp_runtime.records import (
    Txn,
    Write,
)
from afp_runtime.window import WRAP_UP_TEXT

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


log = get_logger()


def _served_tools(run: Run) -> tuple[ToolSchema, ...]:
    if run.wrap_up_asked:
        return ()
    schemas = tuple(tool.schema() for tool in run.d.tools)
    if run.time is not None:
        # Every tool with period forms may say which words its period came from
        # (docs/findings.md#declarations-on-the-final-answer).
        schemas = tuple(
            with_time_quote(schema) if has_forms(tool) else schema
            for tool, schema in zip(run.d.tools, schemas, strict=True)
        )
    if run.d.findings is None:
        return schemas
    # Armed: every served schema gains the optional _findings argument
    # (docs/findings.md#how-the-schema-is-served); the registry's schemas are never changed.
    offer = offer_ids(run.history, run.fold.standing_of)
    return tuple(
        msgspec.structs.replace(schema, input_schema=decorate_schema(schema.input_schema, offer))
        for schema in schemas
    )


def _system_pieces(run: Run) -> tuple[list[dict[str, str]], tuple[Message, ...]]:
    """The system pieces of this request and the window as served (stubs applied)."""
    pieces = (
        [{"slot": "instructions", "source": "definition", "text": run.d.system_prompt}]
        if run.d.system_prompt
        else []
    )
    if run.d.findings is None:
        return pieces, tuple(run.history)
    served = serve_findings(run.history, run.fold, run.d.findings)
    pieces.append({"slot": "findings", "source": "findings", "text": served.instruction})
    if served.ledger_piece is not None:
        pieces.append({"slot": "ledger", "source": "findings", "text": served.ledger_piece})
    return pieces, tuple(served.messages)


async def context(run: Run) -> ModelRequest:
    """Compose the request: system pieces, served tools, the served window, request-only lines."""
    run.begin("context")
    system_pieces, sent = _system_pieces(run)
    tools = _served_tools(run)
    request_only = (
        [{"role": "user", "reason": "wrap-up", "text": WRAP_UP_TEXT}] if run.wrap_up_asked else []
    )
    if run.time is not None:
        # docs/time.md#the-served-time-line: the turn's clock, at the end of every request of the
        # turn.
        request_only.append(
            {"role": "user", "reason": "time-line", "text": time_line_text(run.time)}
        )
    # Per-request stubs for results the model set aside; history itself is never rewritten.
    substitutions = [
        {"index": i, "message": served}
        for i, (served, kept) in enumerate(zip(sent, run.history, strict=True))
        if served is not kept
    ]
    # Keys keep their value until set again, so only what changed is written.
    writes = []
    for key, value in (
        ("systemPieces", system_pieces),
        ("servedTools", list(tools)),
        ("requestOnly", request_only),
        ("substitutions", substitutions),
    ):
        if run.served.get(key, [] if key == "substitutions" else None) != value:
            writes.append(Write(key=key, verb="set", value=value))
        run.served[key] = value
    await run.committer.stage(Txn(agent_id=run.agent_id, bundles=[run.bundle(writes)]))
    run.sent = sent
    extra = tuple(Message(role="user", content=line["text"]) for line in request_only)
    return ModelRequest(
        model=run.d.model.model,
        system="\n\n".join(piece["text"] for piece in system_pieces),
        messages=(*sent, *extra),
        tools=tools,
        params=run.d.params,
    )
