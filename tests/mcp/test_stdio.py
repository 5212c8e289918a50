"""Tools from a real MCP server over stdio (docs/mcp.md): listed with the prefix, schema and
hints, called through one session kept open across turns, results as observations, a changed
list, a server that crashes, garbles, hangs or never starts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

import afp_runtime as afp
from afp_runtime.errors import AgentDefinitionError
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import FakeClock, answer, call, capture_logs, tool_reply
from tests.api.conftest import until
from tests.mcp.conftest import Lab, observations, offered

HANDMADE = Path(__file__).resolve().parent / "handmade_server.py"


def _agent(model: ScriptedModel, lab: Lab, **server: object) -> afp.Agent:
    return afp.Agent("lab-user", model, mcp=[lab.stdio(**server)], max_iterations=4)


async def test_listed_tools_join_the_agent_and_a_call_reaches_the_server(
    tmp_path: Path, lab: Lab
) -> None:
    """The server's tools are offered under the prefix with their description and schema; a
    call to ``lab_add`` is answered with the structured result as JSON, ``lab_note`` writes
    its note once."""
    model = ScriptedModel(
        [
            tool_reply(call("c1", "lab_add", a=2, b=3), call("c2", "lab_note", text="hi")),
            answer("five"),
        ],
        model="mock",
    )
    agent = _agent(model, lab)
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "add them")
    assert agent.mcp is not None and agent.mcp.connections[0].down is None
    assert result.status == "answered" and result.answer == "five"
    names = offered(model, 0)
    assert {"lab_add", "lab_note", "lab_lookup", "lab_grow", "lab_crash"} <= set(names)
    schema = next(t for t in model.requests[0].tools if t.name == "lab_add")
    assert schema.description == "Add two numbers."
    assert schema.input_schema["required"] == ["a", "b"]
    seen = observations(model)
    assert json.loads(seen["c1"]) == {"result": 5}
    assert seen["c2"] == json.dumps({"result": "noted hi"}, separators=(",", ":"))
    assert await lab.lines() == ["note hi"]


async def test_annotations_map_onto_durability_and_explicit_options_win(
    tmp_path: Path, lab: Lab
) -> None:
    """``readOnlyHint`` is idempotent and parallel-safe, ``idempotentHint`` idempotent only, no
    hint neither (and destructive: a check-in with ``checkInDestructive``); an explicit tool
    option overrides its hint."""
    model = ScriptedModel([answer("ok")], model="mock")
    agent = _agent(
        model,
        lab,
        check_in_destructive=True,
        tools={"lookup": {"parallel_safe": True, "timeout_s": 5.0}},
    )
    async with afp.open(tmp_path / "afp.db") as store:
        await store.run(agent, "hello")
    tools = agent.tools_by_name
    add, note, lookup = tools["lab_add"], tools["lab_note"], tools["lab_lookup"]
    assert (add.idempotent, add.parallel_safe, add.check_in) == (True, True, False)
    assert (note.idempotent, note.parallel_safe, note.check_in) == (False, False, True)
    assert (lookup.idempotent, lookup.parallel_safe, lookup.check_in) == (True, True, False)
    assert lookup.timeout_s == 5.0 and add.timeout_s == 60.0


async def test_errors_and_pictures_become_observations(tmp_path: Path, lab: Lab) -> None:
    """An ``isError`` result is an error observation with the server's text; an image and an
    embedded resource are noted by type and size, never inlined, a resource link by its URI."""
    model = ScriptedModel(
        [
            tool_reply(
                call("c1", "lab_fail", why="no disk"),
                call("c2", "lab_picture"),
                call("c3", "lab_document"),
            ),
            answer(""),
        ],
        model="mock",
    )
    async with afp.open(tmp_path / "afp.db") as store:
        await store.run(_agent(model, lab), "try")
    seen = observations(model)
    assert "McpToolError" in seen["c1"] and "cannot: no disk" in seen["c1"]
    assert "'lab'" in seen["c1"]
    assert seen["c2"] == "a square\n[image image/png, 100 bytes, not shown]"
    assert seen["c3"] == (
        "[resource file:///a.csv (text/csv), 7 characters, not shown]\n"
        "[resource link file:///b.csv (b)]"
    )


async def test_one_session_serves_every_turn_and_a_changed_list_is_offered(
    tmp_path: Path, lab: Lab
) -> None:
    """Turns share one session (no second listing without a change); once ``lab_grow`` has
    announced a changed list, the list is read again and the next turn's request offers
    ``lab_echo``, whose call is answered."""
    model = ScriptedModel(
        [
            tool_reply(call("c1", "lab_grow")),
            answer("grown"),
            tool_reply(call("c2", "lab_echo", text="back")),
            answer("done"),
        ],
        model="mock",
    )
    agent = _agent(model, lab)
    async with afp.open(tmp_path / "afp.db") as store:
        await store.run(agent, "grow")
        assert agent.mcp is not None
        await until(lambda: "lab_echo" in agent.tools_by_name, within_s=20)
        listings = agent.mcp.connections[0].version
        await store.run(agent, "echo")
        assert agent.mcp.connections[0].version == listings
    assert "lab_echo" not in offered(model, 0) and "lab_echo" in offered(model, 2)
    assert json.loads(observations(model)["c2"]) == {"result": "back"}


async def test_a_server_that_dies_mid_call_answers_clearly_and_comes_back(
    tmp_path: Path, lab: Lab
) -> None:
    """A call whose server exits is an error observation naming the server; the session is
    opened again and the next turn's call is answered."""
    model = ScriptedModel(
        [
            tool_reply(call("c1", "lab_crash")),
            answer("it died"),
            tool_reply(call("c2", "lab_add", a=1, b=1)),
            answer("two"),
        ],
        model="mock",
    )
    agent = _agent(model, lab)
    async with afp.open(tmp_path / "afp.db") as store:
        with capture_logs() as logs:
            first = await store.run(agent, "crash it")
            seen = observations(model)
            second = await store.run(agent, "add")
    assert first.status == "answered" and second.status == "answered"
    assert "McpServerError" in seen["c1"] and "'lab' went away during the call" in seen["c1"]
    assert json.loads(observations(model)["c2"]) == {"result": 2}
    down = [e for e in logs if e["event"] == "mcp server unavailable"]
    assert down and down[0]["server"] == "lab"


async def test_a_malformed_message_ends_the_call_and_the_session(tmp_path: Path) -> None:
    """A server answering a call with a line that is not JSON-RPC: the call fails at once
    with an observation naming the server and what it sent, not at its timeout."""
    handmade = afp.mcp.stdio("handmade", sys.executable, [str(HANDMADE)], prefix="")
    model = ScriptedModel([tool_reply(call("c1", "echo")), answer("")], model="mock")
    agent = afp.Agent("lab-user", model, mcp=[handmade])
    async with afp.open(tmp_path / "afp.db") as store:
        with anyio.fail_after(20):
            await store.run(agent, "garble")
    seen = observations(model)
    assert "McpServerError" in seen["c1"] and "'handmade' sent a malformed message" in seen["c1"]


async def test_the_handshake_names_the_runtime_and_its_release(tmp_path: Path) -> None:
    """At ``initialize`` the client introduces itself as afp-runtime at the installed release,
    the one ``afp --version`` and the API's health report."""
    handmade = afp.mcp.stdio("handmade", sys.executable, [str(HANDMADE)], prefix="")
    model = ScriptedModel([tool_reply(call("c1", "client")), answer("")], model="mock")
    agent = afp.Agent("lab-user", model, mcp=[handmade])
    async with afp.open(tmp_path / "afp.db") as store:
        with anyio.fail_after(20):
            await store.run(agent, "who are you")
    assert f"afp-runtime {afp.__version__}" in observations(model)["c1"]


async def test_an_older_server_pushes_its_change_and_the_next_request_offers_it(
    tmp_path: Path,
) -> None:
    """A server of the 2025 handshake (no change stream) says its list changed before it
    answers ``grow``: the very next request of the turn offers ``grown``."""
    handmade = afp.mcp.stdio("handmade", sys.executable, [str(HANDMADE)], prefix="old_")
    model = ScriptedModel([tool_reply(call("c1", "old_grow")), answer("done")], model="mock")
    agent = afp.Agent("lab-user", model, mcp=[handmade])
    async with afp.open(tmp_path / "afp.db") as store:
        await store.run(agent, "grow")
        assert agent.mcp is not None
        assert agent.mcp.connections[0].version == 2
    assert "old_grown" not in offered(model, 0) and "old_grown" in offered(model, 1)


async def test_a_hanging_call_times_out_on_the_injected_clock(tmp_path: Path, lab: Lab) -> None:
    """A call the server does not answer ends when the agent's clock passes the tool's
    timeout (no wall-clock wait): a timeout observation, then the turn goes on."""
    clock = FakeClock()
    model = ScriptedModel([tool_reply(call("c1", "lab_slow")), answer("gave up")], model="mock")
    agent = _agent(model, lab, tools={"slow": {"timeout_s": 30.0}})
    async with afp.open(tmp_path / "afp.db", clock=clock) as store:
        async with anyio.create_task_group() as group:
            results = []

            async def run() -> None:
                results.append(await store.run(agent, "wait"))

            group.start_soon(run)
            await until(lambda: lab.started("slow"), within_s=30)
            clock.advance(31)
        await anyio.Path(lab.release).touch()
    assert results[0].answer == "gave up"
    assert "did not finish within its time limit of 30 s" in observations(model)["c1"]


async def test_a_server_that_never_starts_leaves_the_agent_running(tmp_path: Path) -> None:
    """A command that does not exist: the agent's turn is answered without its tools, the log
    names the server, and another agent on the host never notices."""
    broken = afp.mcp.stdio("ghost", str(tmp_path / "no-such-program"), connect_timeout_s=5)
    lonely = ScriptedModel([answer("alone")], model="mock")
    other = ScriptedModel([answer("fine")], model="mock")
    async with afp.open(tmp_path / "afp.db") as store:
        with capture_logs() as logs:
            async with store.host(
                [afp.Agent("lonely", lonely, mcp=[broken]), afp.Agent("other", other)]
            ) as host:
                await host.post("lonely", "hi")
                await host.post("other", "hi")
                await until(lambda: lonely.calls >= 1 and other.calls >= 1, within_s=20)
    assert offered(lonely, 0) == []
    down = [e for e in logs if e["event"] == "mcp server unavailable"]
    assert down and down[0]["server"] == "ghost" and "no-such-program" in down[0]["error"]


def test_a_declaration_is_checked_when_the_agent_is_made(lab: Lab) -> None:
    """Both command and url, a bad name, an unset variable in a header: each refused with the
    field named."""
    model = ScriptedModel([answer("")], model="mock")
    refusals = {
        "mcp[0]": afp.mcp.McpServer(name="x", command="a", url="http://h"),
        "mcp[0].name": afp.mcp.McpServer(name="no spaces", command="a"),
        "mcp[0].headers.Authorization": afp.mcp.http(
            "h", "http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer ${AFP_NO_SUCH}"}
        ),
        "mcp[0].connectTimeoutS": afp.mcp.stdio("s", "a", connect_timeout_s=0),
    }
    for field, server in refusals.items():
        with pytest.raises(AgentDefinitionError) as refused:
            afp.Agent("a", model, mcp=[server])
        assert refused.value.context["field"] == field
