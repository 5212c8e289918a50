"""The scripted model of the MCP process tests: a turn calls ``lab_slow`` tagged with the
agent's id, then answers with what the tool said."""

from __future__ import annotations

from afp_runtime.messages import ModelReply, ModelRequest, ToolCall


def slow_then_answer(request: ModelRequest, call_number: int) -> ModelReply:
    """Call ``lab_slow`` once per turn, then answer ``said: RESULT``."""
    last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
    results = [m for m in request.messages[last_user + 1 :] if m.role == "tool"]
    if results:
        return ModelReply(content=f"said: {results[-1].content}", stop_reason="end")
    tag = request.messages[last_user].content
    call = ToolCall(id=f"slow-{tag}", name="lab_slow", args={"tag": tag})
    return ModelReply(content="", tool_calls=(call,), stop_reason="tool-calls")
