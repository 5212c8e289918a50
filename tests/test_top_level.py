"""``import afp_runtime as afp``: the exact public surface, its docstrings, and that importing it
loads neither the HTTP stack nor the model adapters."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import afp_runtime as afp

SURFACE = [
    "AfpError",
    "Agent",
    "AnthropicModel",
    "ConformanceReport",
    "EpochEntry",
    "Event",
    "ExtractiveSummarizer",
    "FindingsConfig",
    "FoldedSpan",
    "Host",
    "Message",
    "Model",
    "ModelParams",
    "ModelReply",
    "ModelRequest",
    "OpenAICompatModel",
    "Period",
    "QuestionRow",
    "RetryPolicy",
    "RunRow",
    "ScriptedModel",
    "ServedView",
    "Store",
    "TimeConfig",
    "Tool",
    "ToolCall",
    "ToolContext",
    "TurnEvents",
    "TurnResult",
    "Usage",
    "ViewDiff",
    "__version__",
    "cost",
    "load_agents",
    "mcp",
    "open",
    "permissions",
    "run",
    "schedule",
    "sliding_window",
    "summarize_oldest",
    "token_budget",
    "tool",
]


def test_the_surface_is_exactly_these_names() -> None:
    """``__all__`` is pinned: a name is added or removed on purpose, here."""
    assert afp.__all__ == SURFACE
    # Two submodules (afp.cost, afp.permissions) joined in issue 19, afp.run (the loop a served
    # host runs on) in issue 36, afp.schedule (an agent's declared wake-ups) in issue 37; the cap
    # stays tight.
    assert 20 <= len(SURFACE) <= 43


def test_the_architecture_page_counts_the_surface_right() -> None:
    """docs/architecture.md#layers gives the number of public names and which are subpackages,
    as the package has them (it once said 39 names, one of them a subpackage)."""
    page = Path(__file__).resolve().parent.parent / "docs/architecture.md"
    row = next(
        line
        for line in page.read_text(encoding="utf-8").splitlines()
        if "| `__init__.py` |" in line
    )
    found = re.search(r"(\d+) names \((\d+) of them subpackages: ([^)]*)\) and `__version__`", row)
    assert found, row
    names = [n for n in SURFACE if n != "__version__"]
    subpackages = sorted(n for n in names if isinstance(getattr(afp, n), ModuleType))
    assert int(found[1]) == len(names)
    assert int(found[2]) == len(subpackages)
    assert re.findall(r"`(\w+)`", found[3]) == subpackages


@pytest.mark.parametrize("name", [n for n in SURFACE if not n.startswith("__")])
def test_every_name_resolves_and_has_a_docstring(name: str) -> None:
    """Each public name is importable from the package and documented."""
    value = getattr(afp, name)
    doc = inspect.getdoc(value)
    assert doc and len(doc.strip()) > 10, f"afp.{name} has no docstring"


def test_dir_lists_the_surface_and_unknown_names_fail() -> None:
    """``dir(afp)`` shows the surface; a name that is not there is an AttributeError."""
    assert set(SURFACE) <= set(dir(afp))
    with pytest.raises(AttributeError, match="no attribute 'Agnet'"):
        _ = afp.Agnet  # type: ignore[attr-defined]


def test_the_package_is_typed() -> None:
    """The package ships its ``py.typed`` marker (PEP 561)."""
    assert importlib.resources.files("afp_runtime").joinpath("py.typed").is_file()


HEAVY = ("litestar", "uvicorn", "httpx", "aiosqlite", "afp_runtime.api", "afp_runtime.loop")


def _loaded_after(code: str) -> list[str]:
    probe = (
        f"import sys\n{code}\n"
        f"import json; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_importing_the_package_loads_nothing_heavy() -> None:
    """``import afp_runtime`` alone loads no layer, no HTTP client, no server."""
    assert _loaded_after("import afp_runtime") == []


def test_defining_an_agent_does_not_load_the_http_stack() -> None:
    """Tools, agents and the store load the loop; the SQLite backend comes only with an open
    store, the API server only with ``Store.serve`` and the HTTP client only with an HTTP model
    adapter."""
    loaded = _loaded_after(
        "import afp_runtime as afp\n"
        "afp.Agent, afp.tool, afp.open, afp.Store, afp.ScriptedModel, afp.sliding_window"
    )
    assert "afp_runtime.loop" in loaded
    assert not {"litestar", "uvicorn", "afp_runtime.api", "httpx", "aiosqlite"} & set(loaded)
    assert "httpx" in _loaded_after("import afp_runtime as afp\nafp.OpenAICompatModel")


def test_the_release_is_written_in_one_place() -> None:
    """``afp.__version__`` is the installed distribution's version, and no other module of the
    package spells the release out: what the MCP handshake, the API's health and ``afp
    --version`` report cannot drift apart."""
    assert afp.__version__ == importlib.metadata.version("afp-runtime")
    root = importlib.resources.files("afp_runtime")
    spelled = [
        str(path)
        for path in _python_files(root)
        if path.name != "_version.py" and f'"{afp.__version__}"' in path.read_text("utf-8")
    ]
    assert spelled == []


def _python_files(folder: Any) -> list[Any]:
    found = []
    for entry in folder.iterdir():
        if entry.is_dir():
            found.extend(_python_files(entry))
        elif entry.name.endswith(".py"):
            found.append(entry)
    return found
