"""The tools layer's surface and imports
(docs/architecture.md#decision-6-imports-between-layers-follow-fixed-arrows)."""

from __future__ import annotations

import ast
from pathlib import Path

import afp_runtime.tools

ALLOWED = {
    "afp_runtime.messages",
    "afp_runtime.errors",
    "afp_runtime._logging",
    "afp_runtime._secrets",
    "afp_runtime.time",
    "afp_runtime.tools",
}


def test_all_is_sorted_and_importable() -> None:
    """The package's __all__ is sorted and every name in it exists."""
    names = afp_runtime.tools.__all__
    assert names == sorted(names)
    assert all(hasattr(afp_runtime.tools, name) for name in names)


def test_imports_only_messages_errors_and_periods() -> None:
    """Modules of the tools layer import only messages, errors and the layer itself of ours."""
    package = Path(afp_runtime.tools.__file__).parent
    found: set[str] = set()
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    ours = {name for name in found if name.split(".")[0] == "afp_runtime"}
    assert {".".join(name.split(".")[:2]) for name in ours} <= ALLOWED
