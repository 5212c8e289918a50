"""Import direction between layers (docs/architecture.md#allowed-imports), checked with ``ast``.

The allowed arrows are data below. Every ``.py`` under ``afp_runtime`` is parsed; every import
counts, including those inside functions and under ``TYPE_CHECKING``. A layer that does not
exist yet (window, findings, time, host, api) is checked as soon as its folder appears.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import afp_runtime

PACKAGE = "afp_runtime"
SOURCE_ROOT = Path(next(iter(afp_runtime.__path__))).resolve()

# The package's own __init__.py, as a node of the import graph.
INIT = "__init__"
ERRORS = "errors"
LOGGING = "_logging"
LAZY = "_lazy"
VERSION = "_version"
SECRETS = "_secrets"
# Modules that import nothing of ours (but the secrets leaf below errors and _logging, which
# redact with it) and that every layer may import.
SHARED = frozenset({ERRORS, LOGGING, LAZY, VERSION, SECRETS})
# Modules (and application-level packages, such as ``scenario`` and the embedded runtime
# ``_embed``) outside the layers that may import any layer and that no layer may import.
ENTRY_MODULES = frozenset({"cli", "testing", "demo", "scenario", "_embed", INIT})

PURE = frozenset(
    {"messages", "records", "window", "findings", "time", "served", "cost", "schedules"}
)

# docs/storage.md#the-store-port: these reach durable state through the port package
# ``afp_runtime.store`` only, never through a backend inside it.
PORT_USERS = frozenset({"host", "api", "app", "scenario", "cli", "_embed"})
BACKENDS = (f"{PACKAGE}.store.sqlite", f"{PACKAGE}.store.postgres")

# docs/architecture.md#decision-6-imports-between-layers-follow-fixed-arrows: layer -> the layers it
# may import (besides itself and errors). "messages <- everyone" is spelled out in every row.
ALLOWED: dict[str, frozenset[str]] = {
    "messages": frozenset(),
    "records": frozenset({"messages"}),
    "window": frozenset({"messages"}),
    "findings": frozenset({"messages", "records", "window", "extensions", "tools"}),
    "served": frozenset({"messages", "records"}),
    "models": frozenset({"messages"}),
    "cost": frozenset({"messages"}),
    "permissions": frozenset({"messages", "records", "tools", "extensions"}),
    "tools": frozenset({"messages"}),
    "extensions": frozenset({"messages", "records", "window", "tools"}),
    "time": frozenset({"messages", "records", "tools", "extensions"}),
    # docs/schedules.md: due instants read on the time layer's zones.
    "schedules": frozenset({"messages", "time"}),
    "store": frozenset({"messages", "records"}),
    "loop": frozenset({"messages", "records", "window", "served"})
    | {"models", "tools", "store", "extensions", "cost"},
    "mcp": frozenset({"tools", "records"}),
    "telemetry": frozenset({"loop", "records"}),
    "agents": PURE
    | {"models", "tools", "store", "extensions", "time", "loop", "mcp", "telemetry", "cost"}
    | {"permissions"},
    "host": frozenset(
        {"messages", "loop", "agents", "store", "models", "tools", "records", "telemetry"}
        | {"schedules"}
    ),
    # The application layer (docs/architecture.md#the-application-layer): use cases over the
    # store port, for the doors to call.
    "app": frozenset({"messages", "records", "window", "findings", "served", "store", "loop"})
    | {"models", "agents", "cost", "mcp", "schedules"},
    "api": frozenset({"messages", "host", "store", "records", "cost", "app"}),
}
LAYERS = frozenset(ALLOWED)
KNOWN = LAYERS | ENTRY_MODULES | SHARED

# docs/architecture.md#the-application-layer: the doors call the use cases of ``app`` and only
# render; they never reach these layers, nor a module below the store port package.
DOORS = frozenset({"_embed", "cli", "api", "scenario", "demo"})
DOOR_FORBIDDEN = frozenset({"loop", "served", "window"})
STORE_PORT = f"{PACKAGE}.store"
LAZY_LOADERS = frozenset({"import_module", "__import__", "load"})

IO_LIBRARIES = frozenset(
    {
        "aiosqlite",
        "sqlite3",
        "httpx",
        "anyio",
        "litestar",
        "uvicorn",
        "socket",
        "asyncio",
        "os",
        "pathlib",
        "subprocess",
        "time",
    }
)
# (object, attribute) pairs that read a clock; matched on the last two parts of a dotted name,
# so ``datetime.now`` and ``datetime.datetime.now`` are both caught.
CLOCK_READS = frozenset(
    {
        ("time", "time"),
        ("time", "time_ns"),
        ("time", "monotonic"),
        ("time", "perf_counter"),
        ("datetime", "now"),
        ("datetime", "utcnow"),
        ("datetime", "today"),
        ("date", "today"),
    }
)


@dataclass(frozen=True)
class Import:
    """One import statement's target, where it stands, and how it was written."""

    line: int
    module: str
    text: str
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Violation:
    """A broken rule, rendered as ``file:line: what``."""

    rule: str
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


@dataclass(frozen=True)
class Edge:
    """An import from one node of the graph (layer or top-level module) to another."""

    source: str
    target: str
    path: str
    line: int
    text: str


def node_of_path(path: str) -> str:
    """The graph node of a file path such as ``afp_runtime/loop/run.py``."""
    parts = path.split("/")
    if len(parts) == 2:
        return parts[1].removesuffix(".py")
    return parts[1]


def node_of_module(module: str) -> str | None:
    """The graph node of a dotted module name, or None when the module is not ours."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    return parts[1] if len(parts) > 1 else INIT


def _module_name(path: str) -> tuple[str, bool]:
    """The dotted module name of a file path, and whether it is a package ``__init__``."""
    dotted = path.removesuffix(".py").replace("/", ".")
    if dotted.endswith(".__init__"):
        return dotted.removesuffix(".__init__"), True
    return dotted, False


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attribute accesses on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _shorten(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def imports_of(path: str, tree: ast.Module) -> Iterator[Import]:
    """Every module a file imports, relative imports resolved, at any depth of the tree."""
    module, is_package = _module_name(path)
    package_parts = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(node.lineno, alias.name, _shorten(f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package_parts[: len(package_parts) - (node.level - 1)])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            text = _shorten(ast.unparse(node))
            if target == PACKAGE:
                # ``from afp_runtime import loop`` imports the layer, not the package init.
                for alias in node.names:
                    name = alias.name if alias.name in KNOWN - {INIT} else None
                    yield Import(node.lineno, f"{PACKAGE}.{name}" if name else PACKAGE, text)
            else:
                yield Import(node.lineno, target, text, tuple(a.name for a in node.names))
        elif isinstance(node, ast.Call):
            # importlib.import_module("afp_runtime.x") / __import__("afp_runtime.x") / the CLI's
            # load("afp_runtime.x")
            name = _dotted(node.func) or ""
            if (
                name.split(".")[-1] in LAZY_LOADERS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                yield Import(node.lineno, node.args[0].value, _shorten(ast.unparse(node)))


def clock_reads_of(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Every attribute access that reads a clock, as (line, dotted name)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted and tuple(dotted.split(".")[-2:]) in CLOCK_READS:
                yield node.lineno, dotted


def names_a_backend(item: Import) -> bool:
    """Whether an import reaches a store backend (``store.sqlite``) rather than the port."""
    modules = [item.module, *(f"{item.module}.{name}" for name in item.names)]
    return any(m == b or m.startswith(f"{b}.") for m in modules for b in BACKENDS)


def door_reach(path: str, item: Import) -> str | None:
    """What a door's import reaches that docs/architecture.md#the-application-layer keeps from
    doors (a forbidden layer, or a module below the store port), else None."""
    modules = [item.module, *(f"{item.module}.{name}" for name in item.names)]
    below = [m for m in modules if m.startswith(f"{STORE_PORT}.") and _is_module(m)]
    if below:
        return f"{below[0]}, a module below the store port {STORE_PORT}"
    target = node_of_module(item.module)
    if target in DOOR_FORBIDDEN:
        return f"the layer {target}"
    return None


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of ours (not a name inside one)."""
    relative = Path(*dotted.split(".")[1:])
    root = SOURCE_ROOT / relative
    return root.with_suffix(".py").exists() or (root / "__init__.py").exists()


def may_import(source: str, target: str) -> bool:
    """Whether docs/architecture.md#decision-6-imports-between-layers-follow-fixed-arrows (and the
    rules for errors and entry modules) allows source -> target."""
    if source == target:
        return True
    if source in SHARED:
        return target == SECRETS and source != SECRETS
    if source in ENTRY_MODULES:
        return True
    if target in SHARED:
        return True
    if target in ENTRY_MODULES:
        return False
    return target in ALLOWED.get(source, frozenset())


def _arrow_rule(source: str, target: str) -> str:
    if source in SHARED:
        return "errors"
    if target in ENTRY_MODULES:
        return "entry"
    return "arrow"


def _arrow_reason(source: str, target: str) -> str:
    if source in SHARED:
        return f"{source}.py imports nothing of ours"
    if target in ENTRY_MODULES:
        return (
            f"no layer imports {target} "
            "(only cli, testing, demo, scenario, _embed and __init__ sit above all)"
        )
    allowed = ", ".join(sorted(ALLOWED[source] | {ERRORS})) or "nothing"
    return (
        f"{source} -> {target} is not an allowed arrow "
        f"(docs/architecture.md#allowed-imports; {source} may import: {allowed})"
    )


def check_source(path: str, source: str) -> tuple[list[Violation], list[Edge]]:
    """Check one file's imports against the rules; return its violations and its graph edges.

    Args:
        path: the file's path relative to the repository, e.g. ``afp_runtime/loop/run.py``.
        source: the file's text.
    """
    tree = ast.parse(source, filename=path)
    here = node_of_path(path)
    violations: list[Violation] = []
    edges: list[Edge] = []
    if here not in KNOWN:
        violations.append(
            Violation("unknown", path, 1, f"{here!r} is not a known layer; add it to ALLOWED")
        )
    for item in imports_of(path, tree):
        top = item.module.split(".")[0]
        if here in PURE and top in IO_LIBRARIES:
            what = f"`{item.text}`: pure layer {here} imports the I/O library {top}"
            violations.append(Violation("io", path, item.line, what))
        if here in PORT_USERS and names_a_backend(item):
            what = f"`{item.text}`: {here} reaches the store through the port afp_runtime.store"
            violations.append(Violation("backend", path, item.line, what))
        if here in DOORS:
            reached = door_reach(path, item)
            if reached is not None:
                what = (
                    f"`{item.text}`: the door {here} reaches {reached}; call a use case of "
                    f"{PACKAGE}.app (docs/architecture.md#the-application-layer)"
                )
                violations.append(Violation("door", path, item.line, what))
        target = node_of_module(item.module)
        if target is None:
            continue
        if target not in KNOWN:
            what = f"`{item.text}`: {target!r} is not a known layer; add it to ALLOWED"
            violations.append(Violation("unknown", path, item.line, what))
            continue
        if target != here:
            edges.append(Edge(here, target, path, item.line, item.text))
        if here in KNOWN and not may_import(here, target):
            what = f"`{item.text}`: {_arrow_reason(here, target)}"
            violations.append(Violation(_arrow_rule(here, target), path, item.line, what))
        # Another layer's surface is its package, never a module inside it.
        deep = item.module != f"{PACKAGE}.{target}"
        if here in LAYERS and target in LAYERS and target != here and deep:
            what = f"`{item.text}`: import from the package {PACKAGE}.{target}, not a module"
            violations.append(Violation("surface", path, item.line, what))
    if here in PURE:
        for line, dotted in clock_reads_of(tree):
            what = f"`{dotted}`: pure layer {here} reads the clock; take an injected Clock"
            violations.append(Violation("clock", path, line, what))
    return violations, edges


def find_cycles(edges: Iterable[Edge]) -> list[list[Edge]]:
    """Cycles in the graph of ``edges``: at least one through every cyclic part (DFS back edges)."""
    graph: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
    cycles: list[list[Edge]] = []
    seen: set[frozenset[str]] = set()

    def visit(node: str, stack: list[str], done: set[str]) -> None:
        for target in sorted(graph.get(node, {})):
            if target in stack:
                members = [*stack[stack.index(target) :], target]
                key = frozenset(members)
                if key not in seen:
                    seen.add(key)
                    cycles.append([graph[a][b] for a, b in itertools.pairwise(members)])
            elif target not in done:
                visit(target, [*stack, target], done)
        done.add(node)

    done: set[str] = set()
    for start in sorted(graph):
        if start not in done:
            visit(start, [start], done)
    return cycles


def _render_cycle(cycle: list[Edge]) -> str:
    names = " -> ".join([cycle[0].source, *(edge.target for edge in cycle)])
    steps = "; ".join(f"{e.path}:{e.line}: `{e.text}`" for e in cycle)
    return f"import cycle {names}: {steps}"


def _scan_tree() -> tuple[list[Violation], list[Edge]]:
    violations: list[Violation] = []
    edges: list[Edge] = []
    for file in sorted(SOURCE_ROOT.rglob("*.py")):
        path = file.relative_to(SOURCE_ROOT.parent).as_posix()
        found, file_edges = check_source(path, file.read_text(encoding="utf-8"))
        violations += found
        edges += file_edges
    return violations, edges


@dataclass(frozen=True)
class Scan:
    """The violations and import edges of the whole ``afp_runtime`` tree."""

    violations: list[Violation]
    edges: list[Edge]

    def report(self, rule: str) -> list[str]:
        """The rendered violations of one rule."""
        return [str(v) for v in self.violations if v.rule == rule]


@pytest.fixture(scope="module", name="scan")
def fixture_scan() -> Scan:
    """Parse every module of the package once per test module."""
    return Scan(*_scan_tree())


def test_tree_is_scanned(scan: Scan) -> None:
    """The walk finds the package's modules and their imports, so the checks are not vacuous."""
    assert any(edge.target == "messages" for edge in scan.edges)
    assert {"messages", "records"} <= {edge.source for edge in scan.edges}


def test_imports_between_layers_follow_ruling_6(scan: Scan) -> None:
    """Every import from one layer into another is one of the allowed arrows."""
    found = scan.report("arrow")
    assert not found, "\n".join(found)


def test_errors_module_imports_nothing_of_ours(scan: Scan) -> None:
    """errors.py sits below every layer and imports no afp_runtime module but the _secrets
    leaf it redacts messages with."""
    found = scan.report("errors")
    assert not found, "\n".join(found)


def test_no_layer_imports_an_entry_module(scan: Scan) -> None:
    """No layer imports cli, testing, demo, scenario or the package __init__."""
    found = scan.report("entry")
    assert not found, "\n".join(found)


def test_pure_layers_import_no_io_library(scan: Scan) -> None:
    """messages, records, window, findings, time and served import no I/O library."""
    found = scan.report("io")
    assert not found, "\n".join(found)


def test_pure_layers_read_no_clock(scan: Scan) -> None:
    """No pure layer reads the wall clock (time.time, datetime.now, date.today...)."""
    found = scan.report("clock")
    assert not found, "\n".join(found)


def test_layers_import_each_other_only_through_the_package(scan: Scan) -> None:
    """A layer imports another layer from its package, never from a module inside it (P1)."""
    found = scan.report("surface")
    assert not found, "\n".join(found)


def test_doors_reach_the_store_only_through_its_port(scan: Scan) -> None:
    """host, api, scenario, cli and _embed import the port package, never store.sqlite."""
    found = scan.report("backend")
    assert not found, "\n".join(found)


def test_doors_reach_use_cases_not_layer_internals(scan: Scan) -> None:
    """_embed, cli, api, scenario and demo import no loop, served, window or module below the
    store port."""
    found = scan.report("door")
    assert not found, "\n".join(found)


def test_every_module_belongs_to_a_known_layer(scan: Scan) -> None:
    """Every file and every afp_runtime import lands in a layer or module this test knows."""
    found = scan.report("unknown")
    assert not found, "\n".join(found)


def test_no_import_cycle(scan: Scan) -> None:
    """The import graph between layers and top-level modules has no cycle."""
    found = [_render_cycle(cycle) for cycle in find_cycles(scan.edges)]
    assert not found, "\n".join(found)


def test_allowed_arrows_are_acyclic() -> None:
    """The arrows of docs/architecture.md#decision-6-imports-between-layers-follow-fixed-arrows
    themselves form no cycle, so obeying them can be possible."""
    edges = [
        Edge(source, target, "ALLOWED", 0, "")
        for source, targets in ALLOWED.items()
        for target in targets
    ]
    assert find_cycles(edges) == []


class TestCheckerSelf:
    """The checker reports what it should on synthetic sources, so it cannot pass vacuously."""

    @pytest.mark.parametrize(
        ("path", "source", "rule", "line", "needle"),
        [
            pytest.param(
                "afp_runtime/records/bundle.py",
                "import msgspec\nfrom afp_runtime.loop import Run\n",
                "arrow",
                2,
                "records -> loop",
                id="upward-import",
            ),
            pytest.param(
                "afp_runtime/window/plan.py",
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from afp_runtime.store import SqliteStore\n",
                "arrow",
                3,
                "window -> store",
                id="type-checking-import",
            ),
            pytest.param(
                "afp_runtime/served/view.py",
                "def f():\n    from ..models import Model\n    return Model\n",
                "arrow",
                2,
                "served -> models",
                id="relative-import-in-function",
            ),
            pytest.param(
                "afp_runtime/tools/dispatch.py",
                "from afp_runtime import store\n",
                "arrow",
                1,
                "tools -> store",
                id="from-package-import-layer",
            ),
            pytest.param(
                "afp_runtime/time/_forms.py",
                "import importlib\nimportlib.import_module('afp_runtime.host')\n",
                "arrow",
                2,
                "time -> host",
                id="import-module-call",
            ),
            pytest.param(
                "afp_runtime/errors.py",
                "from afp_runtime.messages import Message\n",
                "errors",
                1,
                "errors.py imports nothing",
                id="errors-imports-ours",
            ),
            pytest.param(
                "afp_runtime/loop/run.py",
                "from afp_runtime.testing import FakeClock\n",
                "entry",
                1,
                "no layer imports testing",
                id="layer-imports-testing",
            ),
            pytest.param(
                "afp_runtime/loop/agent.py",
                "from afp_runtime.scenario import run_scenario\n",
                "entry",
                1,
                "no layer imports scenario",
                id="layer-imports-scenario",
            ),
            pytest.param(
                "afp_runtime/host/host.py",
                "from afp_runtime import __version__\n",
                "entry",
                1,
                "no layer imports __init__",
                id="layer-imports-init",
            ),
            pytest.param(
                "afp_runtime/served/view.py",
                "def rebuild():\n    import sqlite3\n",
                "io",
                2,
                "I/O library sqlite3",
                id="io-in-pure-layer",
            ),
            pytest.param(
                "afp_runtime/messages/message.py",
                "import os.path\n",
                "io",
                1,
                "I/O library os",
                id="os-submodule",
            ),
            pytest.param(
                "afp_runtime/findings/ledger.py",
                "from datetime import datetime\n\nstamp = datetime.now()\n",
                "clock",
                3,
                "datetime.now",
                id="datetime-now",
            ),
            pytest.param(
                "afp_runtime/time/_forms.py",
                "import datetime\n\nday = datetime.date.today()\n",
                "clock",
                3,
                "datetime.date.today",
                id="date-today",
            ),
            pytest.param(
                "afp_runtime/loop/run.py",
                "from afp_runtime.store.sqlite.store import SqliteStore\n",
                "surface",
                1,
                "afp_runtime.store",
                id="deep-import",
            ),
            pytest.param(
                "afp_runtime/host/host.py",
                "from afp_runtime.store.sqlite import SqliteStore\n",
                "backend",
                1,
                "through the port",
                id="host-imports-the-sqlite-backend",
            ),
            pytest.param(
                "afp_runtime/cli/run.py",
                "def f():\n    from afp_runtime.store import sqlite\n",
                "backend",
                2,
                "cli reaches the store",
                id="cli-imports-the-backend-package",
            ),
            pytest.param(
                "afp_runtime/_embed/store.py",
                "import importlib\nimportlib.import_module('afp_runtime.store.sqlite.runlog')\n",
                "backend",
                2,
                "_embed reaches the store",
                id="embed-imports-a-backend-module",
            ),
            pytest.param(
                "afp_runtime/api/runs.py",
                "from afp_runtime.served import served_at\n",
                "door",
                1,
                "the door api reaches the layer served",
                id="api-imports-served",
            ),
            pytest.param(
                "afp_runtime/cli/reads.py",
                "async def f():\n    loop = await load('afp_runtime.loop')\n",
                "door",
                2,
                "the door cli reaches the layer loop",
                id="cli-loads-the-loop-lazily",
            ),
            pytest.param(
                "afp_runtime/_embed/store.py",
                "from afp_runtime.window import FoldedSpan\n",
                "door",
                1,
                "the door _embed reaches the layer window",
                id="embed-imports-window",
            ),
            pytest.param(
                "afp_runtime/scenario/runner.py",
                "from afp_runtime.store import rows\n",
                "door",
                1,
                "afp_runtime.store.rows, a module below the store port",
                id="scenario-imports-a-store-module",
            ),
            pytest.param(
                "afp_runtime/demo.py",
                "from afp_runtime.store.values import RunRow\n",
                "door",
                1,
                "below the store port",
                id="demo-imports-below-the-port",
            ),
            pytest.param(
                "afp_runtime/gateway/app.py",
                "from afp_runtime.messages import Message\n",
                "unknown",
                1,
                "'gateway' is not a known layer",
                id="unknown-layer",
            ),
        ],
    )
    def test_forbidden_import_is_reported_with_file_and_line(
        self, path: str, source: str, rule: str, line: int, needle: str
    ) -> None:
        """A synthetic source breaking one rule yields a violation naming file, line and import."""
        violations, _ = check_source(path, source)
        hits = [v for v in violations if v.rule == rule]
        assert hits, violations
        assert str(hits[0]).startswith(f"{path}:{line}: ")
        assert needle in str(hits[0])

    @pytest.mark.parametrize(
        ("path", "source"),
        [
            pytest.param(
                "afp_runtime/records/txn.py",
                "from afp_runtime.messages import Message\nfrom afp_runtime.errors import E\n",
                id="records-to-messages",
            ),
            pytest.param(
                "afp_runtime/loop/run.py",
                "import time\nfrom afp_runtime.window import plan\n"
                "from afp_runtime.store import S\n",
                id="loop-does-io",
            ),
            pytest.param(
                "afp_runtime/cli.py",
                "from afp_runtime.host import Host\nfrom afp_runtime.testing import FakeClock\n",
                id="cli-imports-anything",
            ),
            pytest.param(
                "afp_runtime/tools/dispatch.py",
                "from afp_runtime.tools import texts\nfrom . import _results\n",
                id="same-layer",
            ),
            pytest.param(
                "afp_runtime/api/app.py",
                "from afp_runtime.store import Store, open_store\n",
                id="api-imports-the-port",
            ),
            pytest.param(
                "afp_runtime/api/runs.py",
                "from afp_runtime.app import ServedView, conform\n"
                "from afp_runtime.records import RunLog\n",
                id="api-imports-the-application-layer",
            ),
            pytest.param(
                "afp_runtime/scenario/runner.py",
                "from afp_runtime.host import Host\nfrom afp_runtime.store import S\n"
                "from afp_runtime.testing import FakeClock\nfrom afp_runtime.app import w\n"
                "from afp_runtime.scenario._world import World\n",
                id="scenario-imports-anything",
            ),
            pytest.param(
                "afp_runtime/served/receipt.py",
                "from datetime import datetime\n\ndef f(d: datetime) -> int:\n    return d.year\n",
                id="datetime-type-is-not-a-clock-read",
            ),
        ],
    )
    def test_allowed_import_is_not_reported(self, path: str, source: str) -> None:
        """An import along an allowed arrow, or within one layer, yields no violation."""
        violations, _ = check_source(path, source)
        assert violations == []

    def test_cycle_is_reported_with_its_imports(self) -> None:
        """Two layers importing each other form a cycle reported with both files and lines."""
        _, first = check_source("afp_runtime/store/a.py", "from afp_runtime.loop import Run\n")
        _, second = check_source("afp_runtime/loop/b.py", "\nfrom afp_runtime.store import S\n")
        cycles = [_render_cycle(cycle) for cycle in find_cycles(first + second)]
        assert len(cycles) == 1
        assert "afp_runtime/store/a.py:1:" in cycles[0]
        assert "afp_runtime/loop/b.py:2:" in cycles[0]

    def test_acyclic_graph_has_no_cycle(self) -> None:
        """A chain of imports without a way back is not a cycle."""
        _, one = check_source("afp_runtime/loop/a.py", "from afp_runtime.store import S\n")
        _, two = check_source("afp_runtime/store/b.py", "from afp_runtime.records import R\n")
        assert find_cycles(one + two) == []


# --- docs/architecture.md says what this file holds ----------------------------------------

ARCH_PAGE = Path(__file__).resolve().parent.parent / "docs/architecture.md"


def _table_rows(heading: str) -> dict[str, str]:
    """The first table under ``## heading``: first cell's backticked name -> the other cells."""
    text = ARCH_PAGE.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = line.split(" | ", 1)
        name = re.fullmatch(r"\| `(\w+)`", cells[0].strip())
        if len(cells) == 2 and name:
            rows[name[1]] = cells[1]
    return rows


def test_the_layer_table_names_every_layer() -> None:
    """docs/architecture.md#layers has a row for each layer of ``ALLOWED``, and no other."""
    assert set(_table_rows("Layers")) == LAYERS


def test_the_allowed_imports_table_is_the_allowed_arrows() -> None:
    """docs/architecture.md#allowed-imports lists, per layer, exactly the arrows of ``ALLOWED``
    (the entry modules' row, several names in its first cell, says "anything")."""
    rows = _table_rows("Allowed imports")
    documented = {
        layer: frozenset(re.findall(r"`([\w]+)`", cells)) for layer, cells in rows.items()
    }
    assert documented == ALLOWED
