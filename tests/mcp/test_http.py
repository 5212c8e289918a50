"""Tools from the lab server over streamable HTTP (docs/mcp.md#declaring-a-server): the
declared headers reach the server, a call is answered, a changed list is offered, and a
server that refuses the session is logged and leaves the agent without its tools."""

from __future__ import annotations

import json
from pathlib import Path

import afp_runtime as afp
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import answer, call, capture_logs, tool_reply
from tests.api.conftest import until
from tests.mcp.conftest import observations, offered


async def test_a_call_over_http_carries_the_headers_and_is_answered(
    tmp_path: Path, lab_http: str
) -> None:
    """With the token in ``headers`` the session opens, the
    tools are listed, calls are answered and a changed list is offered in the next turn."""
    model = ScriptedModel(
        [
            tool_reply(call("c1", "lab_add", a=20, b=22), call("c2", "lab_grow")),
            answer("42"),
            tool_reply(call("c3", "lab_echo", text="over http")),
            answer("done"),
        ],
        model="mock",
    )
    server = afp.mcp.http("lab", lab_http, headers={"Authorization": "Bearer lab-token"})
    agent = afp.Agent("lab-user", model, mcp=[server])
    async with afp.open(tmp_path / "afp.db") as store:
        first = await store.run(agent, "add")
        await until(lambda: "lab_echo" in agent.tools_by_name, within_s=20)
        await store.run(agent, "echo")
    assert first.answer == "42"
    assert json.loads(observations(model)["c3"]) == {"result": "over http"}
    assert "lab_add" in offered(model, 0) and "lab_echo" in offered(model, 2)


async def test_a_server_refusing_the_session_is_logged_and_its_tools_left_out(
    tmp_path: Path, lab_http: str
) -> None:
    """Without the token the server answers 401: the agent's turn goes on without the
    server's tools and the log names the server and the transport."""
    model = ScriptedModel([answer("without")], model="mock")
    server = afp.mcp.http("lab", lab_http, connect_timeout_s=10)
    async with afp.open(tmp_path / "afp.db") as store:
        with capture_logs() as logs:
            result = await store.run(afp.Agent("lab-user", model, mcp=[server]), "hi")
    assert result.answer == "without" and offered(model, 0) == []
    down = [e for e in logs if e["event"] == "mcp server unavailable"]
    assert down and down[0]["server"] == "lab" and down[0]["transport"] == "http"


async def test_an_http_server_that_dies_mid_call_is_an_error_observation(
    tmp_path: Path, lab_http: str
) -> None:
    """The HTTP server's process exits during a call: the call is an error observation naming
    the server, the turn is answered, and the log says the server is unavailable."""
    model = ScriptedModel([tool_reply(call("c1", "lab_crash")), answer("it died")], model="mock")
    server = afp.mcp.http(
        "lab", lab_http, headers={"Authorization": "Bearer lab-token"}, connect_timeout_s=2
    )
    async with afp.open(tmp_path / "afp.db") as store:
        with capture_logs() as logs:
            result = await store.run(afp.Agent("lab-user", model, mcp=[server]), "crash it")
    assert result.answer == "it died"
    seen = observations(model)["c1"]
    assert "McpServerError" in seen and "'lab'" in seen
    down = [e for e in logs if e["event"] == "mcp server unavailable"]
    assert down and down[0]["server"] == "lab"
