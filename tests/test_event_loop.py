"""The event loop a host runs on: uvloop when installed unless ``AFP_LOOP`` or ``--loop`` says
asyncio, for ``afp.run`` and ``afp serve`` (docs/host.md#the-event-loop)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

import afp_runtime as afp
from afp_runtime._embed import running
from afp_runtime.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


async def _loop_now() -> str:
    await anyio.lowlevel.checkpoint()
    return running.running_loop()


def test_afp_run_takes_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AFP_LOOP", raising=False)
    assert running.uvloop_installed()
    assert afp.run(_loop_now) == "uvloop"


def test_asyncio_is_chosen_by_the_environment_or_the_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AFP_LOOP", "asyncio")
    assert afp.run(_loop_now) == "asyncio"
    assert afp.run(_loop_now, loop="uvloop") == "uvloop"


def test_a_missing_uvloop_falls_back_unless_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AFP_LOOP", raising=False)
    monkeypatch.setattr(running, "uvloop_installed", lambda: False)
    assert afp.run(_loop_now) == "asyncio"
    with pytest.raises(ConfigError, match=r"afp-runtime\[fast\]") as raised:
        afp.run(_loop_now, loop="uvloop")
    assert raised.value.context["field"] == "loop"


def test_an_unknown_loop_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFP_LOOP", "trio")
    with pytest.raises(ConfigError, match="AFP_LOOP must be one of auto, uvloop, asyncio"):
        afp.run(_loop_now)


def test_afp_serve_runs_on_uvloop_by_default(tmp_path: Path) -> None:
    """The start-up line names the loop: uvloop with no AFP_LOOP; a bad AFP_LOOP exits 2."""
    env = {k: v for k, v in os.environ.items() if k not in ("AFP_LOOP", "AFP_API_TOKEN")}
    args = ["--agents", "configs/demo.toml", "--db", str(tmp_path / "afp.db"), "--port", "0"]
    command = [sys.executable, "-m", "afp_runtime.cli", "serve", *args]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO
    )
    try:
        assert process.stderr is not None
        line = next((x for x in process.stderr if x.startswith("afp: serving")), "")
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert line.rstrip().endswith(", uvloop)"), line
    refused = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**env, "AFP_LOOP": "fast"},
        cwd=REPO,
    )
    assert refused.returncode == 2 and "AFP_LOOP must be one of" in refused.stderr
