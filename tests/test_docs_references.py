"""Every document a comment, docstring, config or doc cites is in the repository, at a heading
that exists: ``docs/loop.md#after-a-crash`` must name a file of ``docs/`` and one of its
headings. Citations of documents the repository does not hold (the section marks of outside
specs, their numbered rulings, style guides) fail, so a maintainer with only the repository can
follow every reference."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCES = [
    *sorted((REPO / "afp_runtime").rglob("*.py")),
    *sorted((REPO / "tests").rglob("*.py")),
    *sorted((REPO / "scripts").rglob("*.py")),
    *sorted((REPO / "examples").rglob("*.py")),
    *sorted((REPO / "configs").glob("*.toml")),
    *[REPO / "scripts" / name for name in ("demo", "test", "_venv")],
    REPO / "pyproject.toml",
    REPO / ".ci" / "run",
]
DOCS = sorted((REPO / "docs").rglob("*.md"))

# ``docs/x.md`` or ``docs/x.md#anchor``.
DOC_CITE = re.compile(r"(?<![\w/.-])(docs/[\w./-]+?\.md)(?:#([\w-]+))?")
# A ``name.md`` that is not part of a docs/ path or a URL.
ANY_MD = re.compile(r"(?<![\w/.#-])([\w-]+\.md)\b(?!#?[\w-]*\))")
# Markdown links inside docs: ``](target)``.
LINK = re.compile(r"\]\(([^)\s]+)\)")
# An outside specification is cited by name only: say which docs/ page settles it instead.
FOREIGN = re.compile(
    r"§|\bARCHITECTURE\b|\bSTYLE P\d|\bDEVELOPERS\b|\b[Rr]ulings? \d|\b[Tt]he spec\b"
)
# This file's own examples of what must fail are built from parts, so they are not cited here.
SELF = Path(__file__).resolve()


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    headings = [
        line.lstrip("#").strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"#{1,6} ", line)
    ]
    return {slug(h) for h in headings}


_ANCHORS: dict[Path, set[str]] = {}


def _anchors(path: Path) -> set[str]:
    if path not in _ANCHORS:
        _ANCHORS[path] = anchors_of(path)
    return _ANCHORS[path]


def problems_in(text: str, where: str, *, base: Path = REPO) -> list[str]:
    """Every broken or foreign citation in ``text`` (``where`` names the file in messages)."""
    found: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        at = f"{where}:{number}"
        if FOREIGN.search(line):
            found.append(f"{at}: cites a document the repository does not hold: {line.strip()}")
        for target, anchor in DOC_CITE.findall(line):
            path = REPO / target
            if not path.is_file():
                found.append(f"{at}: {target} does not exist")
            elif anchor and anchor not in _anchors(path):
                found.append(f"{at}: {target} has no heading #{anchor}")
        stripped = DOC_CITE.sub("", line)
        for name in ANY_MD.findall(stripped):
            if not (base / name).is_file() and not (REPO / name).is_file():
                found.append(f"{at}: {name} is not a file of the repository")
    return found


def link_problems(path: Path) -> list[str]:
    """Broken relative links of a docs page (file and heading)."""
    found: list[str] = []
    text = path.read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+://", target):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path
            if not resolved.exists():
                found.append(f"{path.relative_to(REPO)}:{number}: link to {target} is broken")
            elif anchor and resolved.is_file() and anchor not in _anchors(resolved):
                found.append(f"{path.relative_to(REPO)}:{number}: no heading #{anchor} in {target}")
    return found


def test_the_checks_find_what_they_look_for() -> None:
    """A missing file, a missing heading, a section mark, an unknown .md and an outside spec are
    all caught."""
    mark = "\u00a7"
    bad = "\n".join(
        [
            "# see docs/nowhere.md",
            "# see docs/loop.md#no-such-heading",
            f"# see host.md {mark}9.4",
            "# see window.md",
            "# per ARCHITECTURE " + "ruling 6",
            "# where " + "the spec" + " is silent",
        ]
    )
    found = problems_in(bad, "x.py")
    assert any("docs/nowhere.md does not exist" in p for p in found)
    assert any("has no heading #no-such-heading" in p for p in found)
    assert any(mark in p for p in found)
    assert any("window.md is not a file" in p for p in found)
    assert any("ARCHITECTURE" in p for p in found)
    assert any("where " + "the spec" in p for p in found)
    assert problems_in("# see docs/loop.md#after-a-crash and README.md", "ok.py") == []


def test_headings_are_unique_within_each_page() -> None:
    """An anchor names one place: no page has the same heading twice."""
    for path in DOCS:
        headings = [
            slug(line.lstrip("#"))
            for line in path.read_text(encoding="utf-8").splitlines()
            if re.match(r"#{1,6} ", line)
        ]
        twice = sorted({h for h in headings if headings.count(h) > 1})
        assert not twice, f"{path.relative_to(REPO)} repeats headings {twice}"


@pytest.mark.parametrize("path", [p for p in SOURCES if p.resolve() != SELF], ids=str)
def test_sources_cite_only_what_the_repository_has(path: Path) -> None:
    """Comments, docstrings and strings of the code cite docs/ pages and headings that exist."""
    relative = path.relative_to(REPO)
    assert problems_in(path.read_text(encoding="utf-8"), str(relative)) == []


@pytest.mark.parametrize("path", [*DOCS, REPO / "README.md"], ids=str)
def test_docs_cite_and_link_only_what_exists(path: Path) -> None:
    """The docs and the README link to files and headings that exist and cite nothing else."""
    text = path.read_text(encoding="utf-8")
    relative = str(path.relative_to(REPO))
    assert problems_in(text, relative, base=path.parent) + link_problems(path) == []
