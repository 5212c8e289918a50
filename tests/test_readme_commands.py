"""The README's commands, pasted into a fresh shell after ``scripts/demo``, all run.

The folder: a temporary copy of what the commands read (``scripts/demo``, ``scripts/_venv``,
``configs/``, ``pyproject.toml``, one scenario file) and a ``.venv`` standing for the one
``scripts/_venv`` makes: ``bin/python`` runs this test's interpreter, ``bin/afp`` runs
``afp_runtime.cli`` with it, ``bin/activate`` puts ``bin`` on ``PATH``, and the install stamp
matches ``pyproject.toml``, so ``scripts/demo`` runs the demo the way it always does without
installing anything. Every command runs in ``bash`` with ``PATH=/usr/bin:/bin`` (a fresh shell:
no ``afp`` on it) after ``source .venv/bin/activate``, the one activation step the README
documents, and must exit 0.

Which commands, by rule:

* every line of the README's ``sh`` blocks and every inline code span that starts with
  ``afp ``, ``.venv/bin/afp``, ``source `` or ``scripts/``;
* ``scripts/demo`` first, three times ("run it again to continue": the third run folds), then
  the README's ten-line program (its ``python`` block), which the next sentence's commands read
  back (``afp runs support``);
* placeholders take values from that store: ``AGENT`` is ``demo`` (the agent named by an
  ``afp runs NAME`` in the same paragraph when there is one), ``RUN`` is ``AGENT:last``, ``N``
  and ``EPOCH`` are 1 or 2 as written, an optional ``[M]`` is given as 3, ``FINGERPRINT`` is
  the demo's newest fold and ``FILE.json`` a scenario of ``tests/scenarios``;
* a span that is only ``afp WORD`` names a command in prose: its ``--help`` is run.

Skipped, each by a named rule (``SKIPS``): ``scripts/test`` (the whole suite),
``scripts/inspector-screenshot`` (a browser), ``afp …`` (not a command), and whatever needs the
PostgreSQL server of the "Scaling out" block (every line of an ``sh`` block after its ``export
AFP_DB=postgresql://…``, and any command naming ``$AFP_DB``). ``afp serve`` is a long-running
server: it is started in the background on a free port with ``agents.toml`` standing for the
demo's file, ``afp health`` is asked until it answers (exit 0), and the server is stopped.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
PREFIXES = ("afp ", ".venv/bin/afp", "source ", "scripts/")
SKIPS = {
    "whole-suite": "scripts/test",
    "browser": "scripts/inspector-screenshot",
    "not-a-command": "afp …",
}
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+)`")


def sh_lines(text: str) -> list[str]:
    """The selected lines of the ``sh`` blocks, comments cut, in order; after an ``export
    AFP_DB=postgresql…`` the rest of its block needs that server and is left out."""
    out: list[str] = []
    for kind, body in _FENCE.findall(text):
        if kind != "sh":
            continue
        for raw in body.splitlines():
            line = raw.split(" #", 1)[0].strip()
            if line.startswith("export AFP_DB=postgresql"):
                break
            if line.startswith(PREFIXES):
                out.append(line)
    return out


def prose_spans(text: str) -> list[tuple[str, str]]:
    """The selected inline code spans outside code blocks, each with its paragraph."""
    out: list[tuple[str, str]] = []
    for paragraph in _FENCE.sub("", text).split("\n\n"):
        for span in _SPAN.findall(paragraph):
            if span.startswith(PREFIXES):
                out.append((span, paragraph))
    return out


def ten_line_program(text: str) -> str:
    """The ``python`` block under "An agent in ten lines"."""
    section = text.split("## An agent in ten lines", 1)[1]
    return next(body for kind, body in _FENCE.findall(section) if kind == "python")


def fake_venv(root: Path) -> None:
    """A ``.venv`` with this interpreter and an install stamp ``scripts/_venv`` accepts."""
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    # Scripts, not symlinks: a linked interpreter outside its venv would not find its packages.
    for name, args in (("python", ""), ("afp", " -m afp_runtime.cli")):
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}"{args} "$@"\n')
        path.chmod(0o755)
    (bin_dir / "activate").write_text(
        f'VIRTUAL_ENV="{root / ".venv"}"\nexport VIRTUAL_ENV\nPATH="$VIRTUAL_ENV/bin:$PATH"\n'
        "export PATH\n"
    )
    stamp = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    (root / ".venv" / ".afp-installed").write_text(stamp + "\n")


def shell(root: Path, command: str, *, background: bool = False) -> subprocess.Popen[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "PYTHONPATH": str(REPO)}
    script = f"source .venv/bin/activate\n{command}"
    return subprocess.Popen(
        ["bash", "-c", script if not background else f"{script} & wait"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=background,
    )


def run(root: Path, command: str) -> str:
    process = shell(root, command)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, (command, out[-2000:], err[-2000:])
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def concrete(span: str, paragraph: str, fold: str) -> str:
    """The span with its placeholders given values by the rules of the module docstring."""
    named = re.search(r"`afp runs (\w+)`", paragraph)
    agent = named.group(1) if named else "demo"
    words = {
        "AGENT": agent,
        "RUN": f"{agent}:last",
        "EPOCH": "1",
        "N": "2",
        "[M]": "3",
        "FINGERPRINT": fold,
        "FILE.json": "scenario.json",
    }
    return " ".join(words.get(word, word) for word in span.split())


def serve_and_ask_health(root: Path, command: str) -> None:
    """Start ``afp serve`` in the background, ask ``afp health`` until it answers, stop it."""
    port = free_port()
    line = command.replace("agents.toml", "configs/demo.toml") + f" --port {port}"
    server = shell(root, line, background=True)
    try:
        for _ in range(200):
            ask = shell(root, f"afp health --api http://127.0.0.1:{port}")
            ask.communicate(timeout=60)
            if ask.returncode == 0:
                break
            assert server.poll() is None, server.communicate()
        else:
            raise AssertionError("afp health never answered")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.communicate(timeout=60)


@pytest.mark.timeout(120)
def test_the_readmes_commands_run_in_a_fresh_shell_after_the_demo(tmp_path: Path) -> None:
    """Every selected command exits 0 (see the module docstring for the rules)."""
    text = README.read_text()
    for name in ("scripts/demo", "scripts/_venv"):
        (tmp_path / "scripts").mkdir(exist_ok=True)
        shutil.copy2(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    shutil.copy2(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    scenarios = (REPO / "tests" / "scenarios").glob("*.json")
    scenario = sorted(p for p in scenarios if not p.name.endswith(".expected.json"))[0]
    shutil.copy2(scenario, tmp_path / "scenario.json")
    fake_venv(tmp_path)

    commands = sh_lines(text) + [span for span, _ in prose_spans(text)]
    assert "scripts/demo" in commands and "source .venv/bin/activate" in commands
    for _ in range(3):
        run(tmp_path, "scripts/demo")
    (tmp_path / "ten_lines.py").write_text(ten_line_program(text))
    assert "answered" in run(tmp_path, ".venv/bin/python ten_lines.py")
    folds = run(tmp_path, "afp folded demo --json")
    fold = re.findall(r'"summaryFingerprint": "(\w+)"', folds)[-1]

    ran: list[str] = []
    for span, paragraph in [(line, "") for line in sh_lines(text)] + prose_spans(text):
        if span in SKIPS.values() or "$AFP_DB" in span or span == "scripts/demo":
            continue
        if span.startswith("source "):
            run(tmp_path, span)
        elif span.startswith("afp serve "):
            serve_and_ask_health(tmp_path, concrete(span, paragraph, fold))
        elif re.fullmatch(r"(afp|\.venv/bin/afp)( \w+)?", span):
            run(tmp_path, f"{span} --help")
        else:
            run(tmp_path, concrete(span, paragraph, fold))
        ran.append(span)
    assert {"afp runs support", "afp served RUN 2", "afp call AGENT N"} <= set(ran)
