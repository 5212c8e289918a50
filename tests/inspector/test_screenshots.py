"""`scripts/inspector-screenshot` makes a picture of every page docs/inspector.md describes, and
docs/inspector.md shows them."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import chromium_path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/inspector.md"


def _pages_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split("\n## Pages\n", 1)[1].split("\n## ", 1)[0]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_every_page_section_shows_a_screenshot_that_is_in_the_repository() -> None:
    sections = re.split(r"\n### ", _pages_section())[1:]
    assert sections
    for section in sections:
        title = section.splitlines()[0]
        shots = re.findall(r"\]\((inspector/[a-z-]+\.png)\)", section)
        assert shots, f"the section {title!r} of docs/inspector.md shows no screenshot"
        for shot in shots:
            assert (DOC.parent / shot).is_file(), shot


@pytest.mark.timeout(120)
def test_the_script_makes_every_picture_the_page_shows(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(chromium_path()).parent}:{os.environ['PATH']}"}
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "inspector-screenshot"),
            "--out-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    shown = set(re.findall(r"\]\(inspector/([a-z-]+)\.png\)", DOC.read_text(encoding="utf-8")))
    made = {p.stem for p in tmp_path.glob("*.png")}
    assert shown <= made, shown - made
    for name in made:
        width, height = _png_size(tmp_path / f"{name}.png")
        # Whole pages are 1280 px wide; a part of a page (the chart, the schedules) is narrower.
        assert 600 <= width <= 1280 and height >= 100, (name, width, height)
