"""The README's Python blocks run as written, in order, in one directory (as a reader would
paste them), and they and ``examples/`` type-check under ``mypy --strict``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from afp_runtime.agents import read_config

REPO = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_blocks() -> list[str]:
    return BLOCK.findall((REPO / "README.md").read_text(encoding="utf-8"))


def test_the_readme_has_its_python_blocks() -> None:
    """The sections that show code have it (so the checks below are not vacuous)."""
    blocks = readme_blocks()
    assert len(blocks) >= 5
    assert "afp.open(" in blocks[0] and "@afp.tool" in blocks[0]


def test_every_readme_block_runs_as_written(tmp_path: Path) -> None:
    """Each block, run in the same fresh directory after the ones before it, exits 0 and
    prints what it promises."""
    outputs = []
    for number, block in enumerate(readme_blocks()):
        path = tmp_path / f"block_{number}.py"
        path.write_text(block, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": ""},
        )
        assert done.returncode == 0, f"README block {number}:\n{block}\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        outputs.append(done.stdout)
    assert outputs[0].startswith("answered It shipped. run-")
    assert "verified" in outputs[-1]


@pytest.mark.timeout(240)
def test_examples_and_readme_blocks_type_check_strictly(tmp_path: Path) -> None:
    """``mypy --strict`` finds nothing in user code written against the surface, and does
    find a planted mistake (so the types are really seen)."""
    blocks = tmp_path / "blocks"
    blocks.mkdir()
    for number, block in enumerate(readme_blocks()):
        (blocks / f"readme_{number}.py").write_text(block, encoding="utf-8")
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "wrong.py").write_text(
        "import afp_runtime as afp\n\nagent = afp.Agent('x', model=3)\n", encoding="utf-8"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            "examples",
            str(blocks),
            str(planted),
        ],
        capture_output=True,
        text=True,
        timeout=230,
        check=False,
        cwd=REPO,
    )
    problems = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(problems) == 1, done.stdout
    assert "wrong.py:3" in problems[0] and '"model"' in problems[0], done.stdout


def test_the_readme_toml_block_builds_its_agent(tmp_path: Path) -> None:
    """The agents file the README shows loads, with a tools module beside it."""
    toml, _, _ = _toml_blocks()
    (tmp_path / "agents.toml").write_text(toml, encoding="utf-8")
    (tmp_path / "shop_tools.py").write_text(
        "import afp_runtime as afp\n\n@afp.tool\ndef refund(order_id: str) -> str:\n"
        '    """Refund an order."""\n    return order_id\n',
        encoding="utf-8",
    )
    code = (
        "import afp_runtime as afp\n"
        f"[agent] = afp.load_agents({str(tmp_path / 'agents.toml')!r})\n"
        "print(agent.agent_id, [t.name for t in agent.tools], agent.tools[0].check_in)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "desk ['refund'] True"


def _toml_blocks() -> list[str]:
    """The README's TOML blocks: the agents file, the MCP servers under its agent, the host's
    telemetry table."""
    blocks = re.findall(r"^```toml\n(.*?)^```", (REPO / "README.md").read_text(), re.M | re.S)
    assert len(blocks) == 3
    return blocks


def test_the_readme_mcp_block_declares_its_servers(tmp_path: Path) -> None:
    """The MCP tables the README shows, under the agents file's agent, load with the token
    read from the environment; no server is started to load them."""
    desk, servers, _ = _toml_blocks()
    desk = desk.replace(
        '[[agents.tools]]\nref = "shop_tools:refund"',
        '[[agents.tools]]\nref = "afp_runtime.demo:shipping_status"',
    )
    (tmp_path / "agents.toml").write_text(desk + servers, encoding="utf-8")
    code = (
        "import afp_runtime as afp\n"
        f"[agent] = afp.load_agents({str(tmp_path / 'agents.toml')!r})\n"
        "files, tracker = agent.mcp.servers\n"
        "print(files.transport, files.tool_prefix, tracker.transport, tracker.headers,"
        " tracker.tools['close_ticket'].timeout_s)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "TRACKER_TOKEN": "t0k"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stdio files_ http {'Authorization': 'Bearer t0k'} 10.0"


def test_the_readme_telemetry_block_turns_telemetry_on(tmp_path: Path) -> None:
    """The telemetry table the README shows, in the agents file, is the host's telemetry."""
    desk, _, telemetry = _toml_blocks()
    path = tmp_path / "agents.toml"
    path.write_text(desk + telemetry, encoding="utf-8")
    (tmp_path / "shop_tools.py").write_text(
        "import afp_runtime as afp\n\n@afp.tool\ndef refund(order_id: str) -> str:\n"
        '    """Refund an order."""\n    return order_id\n',
        encoding="utf-8",
    )
    config, _ = read_config(path)
    assert config.host.telemetry is not None
    options = config.host.telemetry.telemetry()
    assert options is not None and (options.traces, options.metrics) == ("otlp", "otlp")
    assert options.capture_content is False
