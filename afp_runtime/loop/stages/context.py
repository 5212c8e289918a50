"""The ``context`` stage: compose the request (system pieces, served tools, request-only lines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

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


log = structlog.get_logger()


def _served_tools(run: Run) -> tuple[ToolSchema, ...]:
    if run.wrap_up_asked:
        return ()
    return tuple(tool.schema() for tool in run.d.tools)


async def context(run: Run) -> ModelRequest:
    run.begin("context")
    system_pieces = (
        [{"slot": "instructions", "source": "definition", "text": run.d.system_prompt}]
        if run.d.system_prompt
        else []
    )
    tools = _served_tools(run)
    request_only = (
        [{"role": "user", "reason": "wrap-up", "text": WRAP_UP_TEXT}] if run.wrap_up_asked else []
    )
    # Keys keep their value until set again, so only what changed is written.
    writes = []
    for key, value in (
        ("systemPieces", system_pieces),
        ("servedTools", list(tools)),
        ("requestOnly", request_only),
    ):
        if run.served.get(key) != value:
            writes.append(Write(key=key, verb="set", value=value))
            run.served[key] = value
    await run.committer.stage(Txn(agent_id=run.agent_id, bundles=[run.bundle(writes)]))
    extra = tuple(Message(role="user", content=line["text"]) for line in request_only)
    return ModelRequest(
        model=run.d.model.model,
        system=run.d.system_prompt,
        messages=(*run.history, *extra),
        tools=tools,
        params=run.d.params,
    )
