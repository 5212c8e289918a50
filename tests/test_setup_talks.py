"""The first ``scripts/demo`` says what it does while it sets up (issue 38, item 1;
README.md): ``scripts/_venv`` names each step and each package pip fetches, and shows the end
of pip's log when the install fails.

A real first install needs the registries and a minute, so the interpreter is a stand-in:
``PYTHON`` names a script that makes ``.venv`` the way ``python -m venv`` lays it out, with a
``bin/python`` that answers ``-m pip install`` in pip's own output format (``Collecting NAME``
lines, then ``Successfully installed``) and a ``bin/afp`` that says it ran.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_PYTHON = """#!/usr/bin/env bash
# A stand-in for python3: only "-m venv DIR" is asked of it.
[ "$1 $2" = "-m venv" ] || exit 9
mkdir -p "$3/bin"
cp "$STAND_IN/venv-python" "$3/bin/python"
cp "$STAND_IN/venv-afp" "$3/bin/afp"
"""

_VENV_PYTHON = """#!/usr/bin/env bash
# A stand-in for .venv/bin/python: pip install prints what pip prints.
[ "$1 $2 $3" = "-m pip install" ] || exit 9
echo "Obtaining file:///project"
echo "Collecting msgspec<0.20,>=0.18 (from afp-runtime==0.1.0)"
echo "  Downloading msgspec-0.19.0-cp311-cp311-manylinux_2_17_x86_64.whl (210 kB)"
echo "Collecting anyio>=4.4; python_version >= '3.11' (from afp-runtime==0.1.0)"
if [ -n "${PIP_FAILS:-}" ]; then
  echo "ERROR: Could not find a version that satisfies the requirement cronsim<3,>=2.6"
  exit 1
fi
echo "Successfully installed afp-runtime-0.1.0 anyio-4.6.0 msgspec-0.19.0"
"""

_VENV_AFP = """#!/usr/bin/env bash
echo "afp ran: $*"
"""


def _project(tmp_path: Path) -> dict[str, str]:
    """A copy of what scripts/demo reads, and the stand-in interpreter; the environment."""
    for name in ("scripts/demo", "scripts/_venv", "pyproject.toml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, tmp_path / name)
    stand_in = tmp_path / "stand-in"
    stand_in.mkdir()
    for name, text in (("python", _PYTHON), ("venv-python", _VENV_PYTHON), ("venv-afp", _VENV_AFP)):
        path = stand_in / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return {
        "PATH": os.environ["PATH"],
        "PYTHON": str(stand_in / "python"),
        "STAND_IN": str(stand_in),
    }


def _demo(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(tmp_path / "scripts" / "demo"), "--turns", "1"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )


def test_the_first_demo_names_each_step_and_each_package_it_fetches(tmp_path: Path) -> None:
    env = _project(tmp_path)
    first = _demo(tmp_path, env)
    assert first.returncode == 0, first.stderr
    said = first.stderr.splitlines()
    assert said[0].startswith("setting up: creating .venv")
    assert "setting up: installing afp-runtime and its dependencies into .venv" in said
    assert "  fetching msgspec<0.20,>=0.18" in said
    assert "  fetching anyio>=4.4" in said
    assert said[-1] == "setting up: .venv is ready (the afp command is .venv/bin/afp)"
    assert first.stdout == "afp ran: demo --turns 1\n"
    log = (tmp_path / ".venv" / ".afp-install.log").read_text()
    assert "Successfully installed" in log

    again = _demo(tmp_path, env)
    assert again.returncode == 0 and again.stderr == "", again.stderr


def test_a_failed_install_shows_the_end_of_pips_log_and_stops(tmp_path: Path) -> None:
    env = _project(tmp_path)
    failed = _demo(tmp_path, {**env, "PIP_FAILS": "1"})
    assert failed.returncode == 1
    assert "setting up: the install failed; the end of pip's output" in failed.stderr
    assert "Could not find a version that satisfies the requirement cronsim" in failed.stderr
    assert "afp ran" not in failed.stdout
    # Nothing is marked installed, so the next run tries again.
    assert not (tmp_path / ".venv" / ".afp-installed").exists()
