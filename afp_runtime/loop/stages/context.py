"""The ``context`` stage: compose the request (system pieces, served tools, request-only lines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from afp_runtime.messages import (
    Message,
    ModelRequest,
    ToolSchema,
)
from afp_runtime.records import (
    AnyWrite,
    RequestOnlyWrite,
    ServedToolsWrite,
    SubstitutionsWrite,
    SystemPiecesWrite,
    Txn,
)
from afp_runtime.window import texts

if TYPE_CHECKING:
    from afp_runtime.loop.run import Run


def _served_tools(run: Run) -> tuple[ToolSchema, ...]:
    if run.state.wrap_up_asked:
        return ()
    schemas = tuple(tool.schema() for tool in run.d.tools)
    for extension in run.extensions:
        schemas = extension.serve_tools(run.d.tools, schemas, run.state.history)
    return schemas


def _system_pieces(run: Run) -> tuple[list[dict[str, str]], tuple[Message, ...]]:
    """The system pieces of this request and the window as served (stubs applied)."""
    pieces = (
        [{"slot": "instructions", "source": "definition", "text": run.d.system_prompt}]
        if run.d.system_prompt
        else []
    )
    if run.d.output is not None:
        pieces.append({"slot": "output", "source": "definition", "text": run.d.output.instruction})
    sent = tuple(run.state.history)
    for extension in run.extensions:
        pieces, sent = extension.serve(pieces, sent)
    return pieces, sent


async def context(run: Run) -> tuple[ModelRequest, tuple[Message, ...]]:
    """Compose the request: system pieces, served tools, the served window, request-only lines;
    returns it with the window as it is sent (stubs applied), for the receipt."""
    run.begin("context")
    system_pieces, sent = _system_pieces(run)
    tools = _served_tools(run)
    request_only = (
        [{"role": "user", "reason": "wrap-up", "text": texts.WRAP_UP_TEXT}]
        if run.state.wrap_up_asked
        else []
    )
    for extension in run.extensions:
        request_only += extension.request_lines()
    # Per-request stubs for results the model set aside; history itself is never rewritten.
    substitutions = [
        {"index": i, "message": served}
        for i, (served, kept) in enumerate(zip(sent, run.state.history, strict=True))
        if served is not kept
    ]
    # Keys keep their value until set again, so only what changed is written.
    writes: list[AnyWrite] = []
    for write in (
        SystemPiecesWrite(value=system_pieces),
        ServedToolsWrite(value=[msgspec.to_builtins(tool) for tool in tools]),
        RequestOnlyWrite(value=request_only),
        SubstitutionsWrite(value=substitutions),
    ):
        key, value = write.key, write.value
        if run.state.served.get(key, [] if key == "substitutions" else None) != value:
            writes.append(write)
        run.state.served[key] = value
    await run.committer.stage(Txn(agent_id=run.agent_id, bundles=[run.bundle(writes)]))
    extra = tuple(Message(role="user", content=line["text"]) for line in request_only)
    request = ModelRequest(
        model=run.d.model.model,
        system="\n\n".join(piece["text"] for piece in system_pieces),
        messages=(*sent, *extra),
        tools=tools,
        params=run.d.params,
    )
    return request, sent
