"""Sizes (docs/architecture.md#other-principles): no module of ``afp_runtime`` over 500 lines and
no function over 80, but the exceptions named below with their reason, checked with ``ast``.

An exception whose module or function is no longer over its limit (or no longer exists) fails
too, so the tables stay true as code shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import afp_runtime

SOURCE_ROOT = Path(next(iter(afp_runtime.__path__))).resolve()
MODULE_LIMIT = 500
FUNCTION_LIMIT = 80

# Over the limit on purpose: module path or ``path::Qualified.name`` -> why.
EXCEPTIONS: dict[str, str] = {}


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """Every function under ``node`` (methods and nested ones too) as (qualified name, lines)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + child.name
            assert child.end_lineno is not None
            yield name, child.end_lineno - child.lineno + 1
            yield from _functions(child, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, prefix + child.name + ".")
        else:
            yield from _functions(child, prefix)


def oversized(root: Path) -> dict[str, int]:
    """Every module over MODULE_LIMIT lines and function over FUNCTION_LIMIT lines below
    ``root``, named as in EXCEPTIONS, with its length."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MODULE_LIMIT:
            found[relative] = lines
        for name, length in _functions(ast.parse(text, filename=str(path))):
            if length > FUNCTION_LIMIT:
                found[f"{relative}::{name}"] = length
    return found


def test_no_module_or_function_is_over_its_limit_without_a_named_reason() -> None:
    unexplained = {name: n for name, n in oversized(SOURCE_ROOT).items() if name not in EXCEPTIONS}
    assert unexplained == {}, (
        f"over {MODULE_LIMIT} lines a module or {FUNCTION_LIMIT} a function: split it "
        f"(docs/architecture.md#other-principles) or name it in EXCEPTIONS with its reason: "
        f"{unexplained}"
    )


def test_every_exception_is_still_over_its_limit() -> None:
    found = oversized(SOURCE_ROOT)
    stale = sorted(name for name in EXCEPTIONS if name not in found)
    assert stale == [], "no longer over the limit (or gone): remove from the tables"


def test_every_exception_gives_a_reason() -> None:
    assert all(reason.strip() for reason in EXCEPTIONS.values())


def test_the_walk_finds_long_modules_and_functions_at_any_depth(tmp_path: Path) -> None:
    """The finder itself: a long method in a class, a long nested function and a long module are
    named; a function of exactly the limit is not."""
    lines = [f"x{i} = {i}" for i in range(FUNCTION_LIMIT)]
    body = "".join(f"        {line}\n" for line in lines)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(
        f"class C:\n    def m(self):\n{body}\ndef f():\n    def g():\n{body}    return g\n"
        f"def fits():\n{''.join(f'    {line}{chr(10)}' for line in lines[1:])}",
        encoding="utf-8",
    )
    (tmp_path / "long.py").write_text("x = 1\n" * (MODULE_LIMIT + 1), encoding="utf-8")
    assert oversized(tmp_path) == {
        "pkg/a.py::C.m": FUNCTION_LIMIT + 1,
        "pkg/a.py::f": FUNCTION_LIMIT + 3,
        "pkg/a.py::f.g": FUNCTION_LIMIT + 1,
        "long.py": MODULE_LIMIT + 1,
    }
