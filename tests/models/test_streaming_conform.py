"""A streamed call run through a real store verifies: the receipt's wire digest covers the
request as sent (``"stream": true`` included), and the conformance check re-encodes it byte
for byte, with the agent's own adapter and with the built-in adapter of the receipt's encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import afp_runtime as afp
from afp_runtime.models import AnthropicModel, OpenAICompatModel
from tests.models._sse_wire import anthropic_events, openai_events, sse

OPENAI_BODY = {
    "choices": [{"index": 0, "message": {"content": "Hello there."}, "finish_reason": "stop"}]
}
ANTHROPIC_BODY = {"content": [{"type": "text", "text": "Hello there."}], "stop_reason": "end_turn"}


def adapter(kind: str, url: str) -> Any:
    if kind == "openai-compatible":
        return OpenAICompatModel(base_url=url + "/v1", model="m", stream=True)
    return AnthropicModel(model="m", api_key="k", base_url=url, stream=True)


@pytest.mark.parametrize("kind", ["openai-compatible", "anthropic"])
async def test_a_streamed_run_conforms_byte_for_byte(tmp_path: Path, server, kind: str) -> None:
    events = (
        openai_events(OPENAI_BODY)
        if kind == "openai-compatible"
        else anthropic_events(ANTHROPIC_BODY)
    )
    server.stream([sse(events)])
    model = adapter(kind, server.url)
    agent = afp.Agent("streamer", model)
    db = tmp_path / "afp.db"
    try:
        async with afp.open(db) as store:
            result = await store.run(agent, "Say hello.")
            assert (result.status, result.answer) == ("answered", "Hello there.")
            assert result.run_id is not None
            [own] = await store.conform(result.run_id)
    finally:
        await model.aclose()
    [sent] = server.received
    assert sent.json()["stream"] is True
    # A later process that does not have the agent re-encodes with the built-in adapter.
    async with afp.open(db) as store:
        [builtin] = await store.conform(result.run_id)
    for report in (own, builtin):
        clauses = {c.clause: c for c in report.clauses}
        assert clauses["wire"].status == "pass", clauses["wire"]
        assert report.verdict == "verified"
