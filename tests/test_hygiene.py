"""Library calls never write to stdout; logs go to stderr, coloured only on a terminal, as JSON
lines when asked (``--log-format json`` or ``AFP_LOG_FORMAT=json``)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

ANSI = "\x1b["

# A turn that is held (the script is empty): the loop logs a warning on the way.
HELD_PROGRAM = """
import anyio
import afp_runtime as afp

agent = afp.Agent("quiet", afp.ScriptedModel([]))

async def main() -> None:
    async with afp.open("afp.db") as store:
        result = await store.run(agent, "hello")
        assert result.status == "held", result

anyio.run(main)
"""

CONFIG = """
[[agents]]
id = "quiet"
[agents.model]
provider = "scripted"
model = "m"
script = "empty_script:SCRIPT"
"""


def _python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**os.environ, **env},
    )


def _afp_run(
    cwd: Path, *options: str, script: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    (cwd / "empty_script.py").write_text(script + "SCRIPT = []\n", encoding="utf-8")
    (cwd / "agents.toml").write_text(CONFIG, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *options, "run", "agents.toml", "-m", "hi"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**{k: v for k, v in os.environ.items() if k != "AFP_LOG_FORMAT"}, **env},
    )


def test_an_embedding_program_gets_nothing_on_stdout(tmp_path: Path) -> None:
    """A library call that logs a warning writes nothing to stdout; stderr has the warning as
    plain text (no ANSI: stderr is no terminal)."""
    done = _python(HELD_PROGRAM, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "turn stopped" in done.stderr and "script-exhausted" in done.stderr
    assert ANSI not in done.stderr


def test_the_application_can_route_library_logs_through_logging(tmp_path: Path) -> None:
    """Unconfigured, the library logs to the standard ``afp_runtime`` logger: a program that
    configures ``logging`` gets the records there (here: silenced below ERROR)."""
    quiet = "import logging\nlogging.getLogger('afp_runtime').setLevel(logging.ERROR)\n"
    done = _python(quiet + HELD_PROGRAM, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")


def test_afp_logs_plain_text_to_stderr_when_it_is_not_a_terminal(tmp_path: Path) -> None:
    """The CLI's own log lines go to stderr without ANSI colour when piped."""
    done = _afp_run(tmp_path)
    assert done.returncode == 8, done.stderr
    assert "turn stopped" in done.stderr
    assert ANSI not in done.stderr
    assert "turn stopped" not in done.stdout


def test_log_format_json_gives_json_lines(tmp_path: Path) -> None:
    """``--log-format json`` and ``AFP_LOG_FORMAT=json`` make every stderr line a JSON object."""
    (tmp_path / "flag").mkdir()
    (tmp_path / "env").mkdir()
    for done in (
        _afp_run(tmp_path / "flag", "--log-format", "json"),
        _afp_run(tmp_path / "env", AFP_LOG_FORMAT="json"),
    ):
        assert done.returncode == 8, done.stderr
        lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
        assert any(entry["event"] == "turn stopped" for entry in lines)
        assert all(entry["level"] for entry in lines)


def test_a_librarys_standard_logging_comes_out_in_the_same_format(tmp_path: Path) -> None:
    """A record another library logs through ``logging`` (asyncpg's pool does) is a JSON line
    under ``--log-format json``, with its level and logger, and plain text otherwise."""
    noisy = "import logging\nlogging.getLogger('a.library').warning('pool busy: %s', 3)\n"
    (tmp_path / "json").mkdir()
    (tmp_path / "console").mkdir()
    as_json = _afp_run(tmp_path / "json", "--log-format", "json", script=noisy)
    lines = [json.loads(line) for line in as_json.stderr.splitlines() if line.strip()]
    assert {"event": "pool busy: 3", "level": "warning", "logger": "a.library"}.items() <= next(
        entry for entry in lines if entry.get("logger") == "a.library"
    ).items()
    console = _afp_run(tmp_path / "console", script=noisy)
    assert "pool busy: 3" in console.stderr and ANSI not in console.stderr


def test_a_librarys_traceback_is_one_line_unless_verbose(tmp_path: Path) -> None:
    """A library record logged with its exception (asyncpg's pool while a server is down) is
    one line naming the exception; with ``-v`` the traceback is shown."""
    noisy = (
        "import logging\n"
        "try:\n    raise ConnectionError('server is shutting down')\n"
        "except ConnectionError:\n"
        "    logging.getLogger('a.library').warning('retrying', exc_info=True)\n"
    )
    (tmp_path / "quiet").mkdir()
    (tmp_path / "verbose").mkdir()
    quiet = _afp_run(tmp_path / "quiet", script=noisy)
    verbose = _afp_run(tmp_path / "verbose", "-v", script=noisy)
    assert "retrying" in quiet.stderr and "Traceback" not in quiet.stderr
    assert "ConnectionError: server is shutting down" in quiet.stderr
    assert "Traceback" in verbose.stderr


def test_an_unknown_log_format_is_a_usage_error(tmp_path: Path) -> None:
    """``AFP_LOG_FORMAT`` other than console or json is refused with exit 2."""
    done = _afp_run(tmp_path, AFP_LOG_FORMAT="xml")
    assert done.returncode == 2
    assert "AFP_LOG_FORMAT must be console or json" in done.stderr


def test_logs_are_coloured_on_a_terminal(tmp_path: Path) -> None:
    """With stderr on a terminal the console logs carry ANSI colour."""
    (tmp_path / "empty_script.py").write_text("SCRIPT = []\n", encoding="utf-8")
    (tmp_path / "agents.toml").write_text(CONFIG, encoding="utf-8")
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "afp_runtime.cli", "run", "agents.toml", "-m", "hi"],
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=60,
            check=False,
            cwd=tmp_path,
            env={k: v for k, v in os.environ.items() if k != "AFP_LOG_FORMAT"},
        )
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 8
    assert b"turn stopped" in seen and ANSI.encode() in seen
