"""MCP servers declared in an agents file (docs/mcp.md#declaring-a-server): ``[[agents.mcp]]``
with its options, ``${NAME}`` read from the environment, a stdio server run beside the file,
and every mistake named by its key path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import afp_runtime as afp
from afp_runtime.errors import AfpError
from tests.mcp.conftest import LAB

AGENTS = """
[[agents]]
id = "lab-user"
[agents.model]
provider = "scripted"
model = "mock"
script = "afp_runtime.demo:demo_script"

[[agents.mcp]]
name = "lab"
command = "{python}"
args = ["{lab}"]
env = {{ LAB_NOTES = "${{AFP_TEST_NOTES}}", LAB_RELEASE = "release" }}
checkInDestructive = true
timeoutS = 12
[agents.mcp.tools.lookup]
idempotent = false
timeoutS = 3

[[agents.mcp]]
name = "remote"
url = "http://127.0.0.1:9/mcp"
headers = {{ Authorization = "Bearer ${{AFP_TEST_TOKEN}}" }}
prefix = "r_"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(text.format(python=sys.executable, lab=LAB), encoding="utf-8")
    return path


def test_a_file_declares_servers_with_their_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both servers are read with their options; variables come from the environment and a
    stdio server's directory is the file's."""
    monkeypatch.setenv("AFP_TEST_NOTES", "/tmp/notes")
    monkeypatch.setenv("AFP_TEST_TOKEN", "sekrit")
    [agent] = afp.load_agents(_write(tmp_path, AGENTS))
    assert agent.mcp is not None
    lab, remote = agent.mcp.servers
    assert lab.env == {"LAB_NOTES": "/tmp/notes", "LAB_RELEASE": "release"}
    assert lab.cwd == str(tmp_path) and lab.check_in_destructive and lab.timeout_s == 12
    assert lab.tools["lookup"].idempotent is False and lab.tools["lookup"].timeout_s == 3
    assert remote.transport == "http" and remote.headers == {"Authorization": "Bearer sekrit"}
    assert remote.tool_prefix == "r_" and lab.tool_prefix == "lab_"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (("AFP_TEST_TOKEN", None), "agents[0].mcp[1].headers.Authorization"),
        (('prefix = "r_"', 'prefix = "r r"'), "agents[0].mcp[1].prefix"),
        (("timeoutS = 12", "timeoutS = -1"), "agents[0].mcp[0].timeoutS"),
        (('url = "http://127.0.0.1:9/mcp"', 'url = "ftp://x"'), "agents[0].mcp[1].url"),
    ],
)
def test_a_wrong_declaration_is_named_by_its_key_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: tuple[str, str | None], field: str
) -> None:
    """An unset variable, a bad prefix, a negative timeout, a URL that is not HTTP: refused
    when the file is read, the message led by the key path."""
    monkeypatch.setenv("AFP_TEST_NOTES", "/tmp/notes")
    monkeypatch.setenv("AFP_TEST_TOKEN", "sekrit")
    old, new = change
    text = AGENTS
    if new is None:
        monkeypatch.delenv(old)
    else:
        text = text.replace(old, new)
    with pytest.raises(AfpError) as refused:
        afp.load_agents(_write(tmp_path, text))
    assert refused.value.context["field"] == field
    assert str(refused.value).startswith(field)


def test_an_unknown_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key MCP servers do not have (``comand``) is refused, naming it."""
    monkeypatch.setenv("AFP_TEST_NOTES", "/tmp/notes")
    monkeypatch.setenv("AFP_TEST_TOKEN", "sekrit")
    with pytest.raises(AfpError, match="comand"):
        afp.load_agents(_write(tmp_path, AGENTS.replace("command =", "comand =")))
