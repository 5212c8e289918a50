"""The ``afp`` command and secrets and terminals: an echoed key reaches no output, log line or
stored byte (docs/host.md#secrets-in-errors-and-logs); a password on the command line is
warned about once (docs/storage.md#passwords); JSON on a terminal escapes what the tables show
as pictures, and stays byte for byte on a pipe (docs/api.md#json-output)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tty
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.echoing import OPENAI_KEY, echoing_provider

AFP = [sys.executable, "-m", "afp_runtime.cli"]
# What a terminal acts on or reorders: RLO, LRI, CSI (C1) and ESC.
PLANTED = "a\u202eb\u2066c\u009bd\x1b[31me\x7f"
RAW = ("\u202e", "\u2066", "\u009b", "\x7f")


def afp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*AFP, *args], capture_output=True, timeout=120, check=False, env=env)


@pytest.fixture(name="echoing")
def fixture_echoing() -> Iterator[str]:
    with echoing_provider() as url:
        yield url


def test_an_echoed_key_reaches_no_output_log_line_or_stored_byte(
    tmp_path: Path, echoing: str
) -> None:
    """``afp -v run`` on an endpoint that quotes the key back: the held turn's error, every
    log line (JSON and console), ``afp runs``/``afp inbox`` and the database show ``***``."""
    config = tmp_path / "echo.toml"
    config.write_text(
        '[[agents]]\nid = "ops"\n[agents.model]\nprovider = "openai-compatible"\n'
        f'model = "gpt-echo"\nbaseUrl = "{echoing}/v1"\napiKeyEnv = "ECHO_KEY"\n',
        encoding="utf-8",
    )
    db, db2 = str(tmp_path / "afp.db"), str(tmp_path / "afp.db2")
    env = {**os.environ, "ECHO_KEY": OPENAI_KEY}
    outputs = [
        afp("-v", "run", str(config), "--db", db, "-m", "hello", "--json", env=env),
        afp("-v", "--log-format", "json", "run", str(config), "--db", db2, "-m", "hi", env=env),
        afp("runs", "ops", "--db", db, "--json"),
        afp("inbox", "ops", "--db", db, "--json"),
    ]
    [outcome] = json.loads(outputs[0].stdout)
    assert outcome["errorKind"] == "auth"
    assert "Authorization: Bearer ***" in outcome["error"]
    assert b"turn stopped" in outputs[0].stderr and b"turn stopped" in outputs[1].stderr
    assert b"Bearer ***" in outputs[1].stderr
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("afp.db"))
    assert b"credentials were refused" in stored
    for done in outputs:
        assert OPENAI_KEY.encode() not in done.stdout + done.stderr, done.args
    assert OPENAI_KEY.encode() not in stored


def test_a_password_on_the_command_line_is_warned_about_once(tmp_path: Path) -> None:
    """A store URL with a password among the arguments gets one warning line; the password
    itself is never printed; the same URL without a password gets none."""
    url = "postgresql://ann:Pw-0n-the-line@127.0.0.1:1/afp?connect_timeout_s=2"
    loud = afp("agents", "--db", url)
    quiet = afp("agents", "--db", url.replace(":Pw-0n-the-line", ""))
    warned = [line for line in loud.stderr.splitlines() if b"password on the command line" in line]
    assert len(warned) == 1
    assert b"PGPASSWORD" in warned[0]
    assert b"Pw-0n-the-line" not in loud.stdout + loud.stderr
    assert b"password on the command line" not in quiet.stderr
    assert loud.returncode == quiet.returncode != 0  # nothing listens there: unavailable


def _on_a_terminal(*args: str) -> bytes:
    """What ``afp`` writes to stdout when stdout is a terminal (a pty in raw mode, so the
    bytes are the program's own)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    with subprocess.Popen([*AFP, *args], stdout=slave, stderr=subprocess.PIPE) as proc:
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=60)
    os.close(master)
    assert proc.returncode == 0, proc.stderr
    return b"".join(chunks)


@pytest.fixture(name="planted", scope="module")
def fixture_planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A store whose agent ``ops`` was asked and answered ``PLANTED``: its config, its
    database and its run id."""
    folder = tmp_path_factory.mktemp("planted")
    (folder / "planted.py").write_text(
        "from afp_runtime.testing import answer\n"
        f"replies = [answer({PLANTED!r}), answer({PLANTED!r})]\n",
        encoding="utf-8",
    )
    config = folder / "planted.toml"
    config.write_text(
        '[[agents]]\nid = "ops"\n[agents.model]\nprovider = "scripted"\nmodel = "m"\n'
        'script = "planted:replies"\n',
        encoding="utf-8",
    )
    db = str(folder / "afp.db")
    assert afp("run", str(config), "--db", db, "-m", PLANTED).returncode == 0
    run_id = json.loads(afp("runs", "ops", "--db", db, "--json").stdout)["items"][0]["runId"]
    return config, db, run_id


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "ops", "--json"],
        ["inbox", "ops", "--json"],
        ["commits", "RUN", "--json", "--expand"],
        ["checkpoint", "ops"],
        ["export", "RUN"],
        ["served", "RUN", "--json"],
    ],
    ids=lambda command: command[0],
)
def test_json_on_a_terminal_escapes_controls_and_bidi_marks_and_a_pipe_gets_the_bytes(
    planted: tuple[Path, str, str], command: list[str]
) -> None:
    """On a pty no raw RLO, LRI, C1 or DEL is written (each is ``\\uXXXX``) and the text
    decodes to the same value as the piped output, which keeps them raw, as before."""
    _, db, run_id = planted
    args = [run_id if word == "RUN" else word for word in command] + ["--db", db]
    shown = _on_a_terminal(*args).decode()
    piped = afp(*args).stdout.decode()
    assert not any(char in shown for char in RAW), shown
    assert "\\u202e" in shown and "\\u009b" in shown and "\\u2066" in shown
    assert all(char in piped for char in RAW)
    assert json.loads(shown) == json.loads(piped)


def test_a_run_prints_its_outcome_escaped_on_a_terminal(planted: tuple[Path, str, str]) -> None:
    """``afp run --json`` on a terminal: the planted answer comes back escaped, same value."""
    config, db, _ = planted
    shown = _on_a_terminal("run", str(config), "--db", db, "-m", "again", "--json").decode()
    assert not any(char in shown for char in RAW), shown
    assert json.loads(shown)[0]["finalAnswer"] == PLANTED
