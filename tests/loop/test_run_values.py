"""A run passes values (docs/loop.md#what-a-run-carries): the definition is never written by a
run, and each field of the run's one state is written only by the owner ``OWNERS`` names.

The owner rule is held as data: every write to ``RunState`` in ``afp_runtime/loop`` (an
assignment, an augmented or item assignment, a ``del``, a mutating method call on
``<…>.state.<field>`` or on a local bound to it, or the field handed to one of ``FILLERS``) is
found with ``ast`` and checked against ``OWNERS``, both ways: no write by another, no owner
that writes nothing.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from afp_runtime.loop.state import OWNERS, RunState
from afp_runtime.messages import Usage
from afp_runtime.testing import answer, call, tool_reply
from afp_runtime.window import token_budget

from .conftest import Harness

LOOP = Path(__file__).resolve().parents[2] / "afp_runtime" / "loop"

# Functions of other layers that fill a container they are handed (a cache, a set of used ids).
FILLERS = frozenset({"unique_call_ids", "new_entries", "body_hash"})

# Where the state is made (restored from the open turn): every field may be set there.
MAKER = "state.start_state"

# Methods that change the container they are called on.
MUTATORS = frozenset(
    {"append", "extend", "add", "update", "pop", "clear", "remove", "discard", "insert"}
    | {"setdefault", "popitem", "sort", "reverse"}
)


def _snapshot(definition: Any) -> dict[str, Any]:
    """The definition's attributes: containers copied (compared by value), the rest by identity."""
    taken: dict[str, Any] = {}
    for name, value in vars(definition).items():
        if isinstance(value, (set, list, dict)):
            taken[name] = ("value", type(value)(value))
        else:
            taken[name] = ("identity", id(value))
    return taken


async def test_a_run_leaves_its_definition_as_it_was(harness: Harness, logs: list) -> None:
    """Six iterations under token-budget with the provider falling silent on usage: the window
    warns (stale usage), and the definition holds exactly what it held before the run."""
    script = [tool_reply(call("r0", "alpha_tool"), usage=Usage(input=99_999, output=10))]
    script += [tool_reply(call(f"r{i}", "alpha_tool")) for i in range(1, 6)] + [answer("done")]
    driver = harness.driver(script, window=token_budget(threshold_tokens=1000, keep_recent_turns=1))
    before = _snapshot(driver.definition)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered" and outcome.iteration == 7
    assert [e for e in logs if "stopped reporting" in e["event"]]
    assert _snapshot(driver.definition) == before


def _owner(module: str, scope: list[str]) -> set[str]:
    """The names a write in ``module`` within ``scope`` (class, function…) may be owned by."""
    names = {module}
    for depth in range(1, len(scope) + 1):
        names.add(".".join([module, *scope[:depth]]))
    return names


def _state_field(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """``x.state.<field>`` (or ``state.<field>`` on a local bound to the run's state, or a local
    bound to a field) → field."""
    if isinstance(node, ast.Subscript):
        return _state_field(node.value, aliases)
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if not isinstance(node, ast.Attribute):
        return None
    owner = node.value
    if isinstance(owner, ast.Attribute) and owner.attr == "state":
        return node.attr
    if isinstance(owner, ast.Name) and owner.id == "state" and node.attr in OWNERS:
        return node.attr
    return None


def _targets(node: ast.AST) -> list[ast.expr]:
    """What ``node`` writes: assignment targets, the object of a mutating method call, and the
    arguments of a function that fills one."""
    if isinstance(node, (ast.Assign, ast.Delete)):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if not isinstance(node, ast.Call):
        return []
    if isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        return [node.func.value]
    if isinstance(node.func, ast.Name) and node.func.id in FILLERS:
        return [*node.args, *(k.value for k in node.keywords)]
    return []


def _writes(
    tree: ast.AST, scope: list[str], aliases: dict[str, str]
) -> Iterator[tuple[str, list[str], int]]:
    """(field, scope, line) of every write to the run's state under ``tree``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _writes(node, [*scope, node.name], {})
            continue
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            # ``hashes = run.state.body_hashes``: what is done to ``hashes`` is done to the field.
            field = _state_field(node.value, {})
            if field is not None:
                aliases[node.targets[0].id] = field
                yield from _writes(node, scope, aliases)
                continue
        for target in _targets(node):
            field = _state_field(target, aliases)
            if field is not None:
                yield field, scope, node.lineno
        yield from _writes(node, scope, aliases)


def _all_writes() -> list[tuple[str, str, list[str], int]]:
    found = []
    for path in sorted(LOOP.rglob("*.py")):
        module = ".".join(path.relative_to(LOOP).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for field, scope, line in _writes(tree, [], {}):
            found.append((field, module, scope, line))
    return found


def test_owners_name_every_field_of_the_run_state() -> None:
    assert set(OWNERS) == {f.name for f in dataclasses.fields(RunState)}


def test_each_state_field_is_written_by_its_owner_only() -> None:
    writes = _all_writes()
    # The scan sees writes at all (a scanner that finds nothing would hold any rule).
    assert {field for field, *_ in writes} >= {"iteration", "conv", "epochs", "warned"}
    strays = [
        f"loop/{module.replace('.', '/')}.py:{line}: {field} written by {'.'.join(scope)}"
        for field, module, scope, line in writes
        if not _owner(module, scope) & {*OWNERS[field], MAKER}
    ]
    assert strays == []


def test_every_owner_named_writes_its_field() -> None:
    """No stale owner: each (field, owner) of ``OWNERS`` is a write the scan finds."""
    seen = {
        (field, owner)
        for field, module, scope, _ in _all_writes()
        for owner in _owner(module, scope) & set(OWNERS[field])
    }
    unseen = [(f, o) for f, owners in OWNERS.items() for o in owners if (f, o) not in seen]
    assert unseen == []


def _definition_writes(tree: ast.AST) -> Iterator[int]:
    """Lines that write to ``<…>.d.<…>`` or ``definition.<…>`` (the run's definition)."""

    def on_definition(node: ast.expr) -> bool:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            inner = node.value
            if isinstance(inner, ast.Attribute) and inner.attr in ("d", "definition"):
                return True
            if isinstance(inner, ast.Name) and inner.id == "definition":
                return True
            node = inner
        return False

    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
        ):
            targets = [node.func.value]
        if any(on_definition(t) for t in targets):
            yield node.lineno


def test_no_loop_module_writes_the_definition() -> None:
    strays = [
        f"{path.relative_to(LOOP)}:{line}"
        for path in sorted(LOOP.rglob("*.py"))
        for line in _definition_writes(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert strays == []
