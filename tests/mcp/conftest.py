"""Helpers for the MCP tests: the lab server of ``lab_server.py`` declared over stdio or over
streamable HTTP (started here as a process of its own), and reading what a model was sent."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import afp_runtime as afp
from afp_runtime.mcp import McpServer
from afp_runtime.models import ScriptedModel
from afp_runtime.tools import Tool

LAB = Path(__file__).resolve().parent / "lab_server.py"


class Lab:
    """The lab server's files: its notes and the release file ``slow`` waits for."""

    def __init__(self, root: Path) -> None:
        self.notes = root / "notes.txt"
        self.release = root / "release"
        self.env = {"LAB_NOTES": str(self.notes), "LAB_RELEASE": str(self.release)}

    def stdio(self, **options: Any) -> McpServer:
        """The lab over stdio, as the agent's server ``lab``."""
        return afp.mcp.stdio("lab", sys.executable, [str(LAB)], env=self.env, **options)

    async def lines(self) -> list[str]:
        """The notes the server wrote, in order."""
        notes = anyio.Path(self.notes)
        return (await notes.read_text("utf-8")).splitlines() if await notes.exists() else []

    def lines_now(self) -> list[str]:
        """``lines``, for a test outside an event loop."""
        return self.notes.read_text("utf-8").splitlines() if self.notes.exists() else []

    async def started(self, tool: str) -> bool:
        """Whether the server noted that ``tool`` started."""
        return f"{tool} started" in await self.lines()


@pytest.fixture(name="lab")
def fixture_lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(name="lab_http")
def fixture_lab_http(lab: Lab) -> Iterator[str]:
    """The lab served over streamable HTTP in a process of its own; its endpoint URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(LAB), "--http", str(port)],
        env={**lab.env, "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(10)


def observations(model: ScriptedModel) -> dict[str, str]:
    """Every tool result the model was sent, by tool-call id (the latest request's)."""
    request = model.requests[-1]
    return {m.tool_call_id: m.content for m in request.messages if m.role == "tool"}


def offered(model: ScriptedModel, index: int) -> list[str]:
    """The tool names offered in the model's request ``index``."""
    return [tool.name for tool in model.requests[index].tools]


def by_name(agent: afp.Agent) -> dict[str, Tool]:
    """The agent's tools now."""
    return agent.tools_by_name
