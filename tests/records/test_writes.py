"""Commit writes are one tagged union with one registry and one decoder
(docs/loop.md#commit-bundles): the wire form is the untyped ``{key, verb, value}`` map."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.messages import Usage
from afp_runtime.records import (
    WRITE_TYPES,
    CommitBundle,
    FinalAnswerWrite,
    HistoryWrite,
    ListRef,
    PendingBatchWrite,
    RunUsageWrite,
    write_of,
    writes_from_wire,
)

LOOP_DOC = Path(__file__).resolve().parents[2] / "docs/loop.md"


def test_every_class_is_registered_under_its_key() -> None:
    """The registry maps each key to the class whose tag it is, and the class names its key."""
    assert WRITE_TYPES
    for key, cls in WRITE_TYPES.items():
        assert cls.__struct_config__.tag == key
        assert cls.__struct_config__.tag_field == "key"


def test_the_registry_covers_the_documented_keys() -> None:
    """Every key of docs/loop.md's run state table has its class, and no class is undocumented
    (``forcedTool`` is the served view's run constant, docs/served.md#rebuild-order)."""
    text = LOOP_DOC.read_text()
    table = text[text.index("## Run state keys") : text.index("## Commit bundles")]
    documented = {
        key
        for line in table.splitlines()
        if line.startswith("| `")
        for key in re.findall(r"`(\w+)`", line.split("|")[1])
    }
    assert documented | {"forcedTool"} == set(WRITE_TYPES)


@pytest.mark.parametrize(
    ("write", "wire"),
    [
        (FinalAnswerWrite(value="done"), {"key": "finalAnswer", "verb": "set", "value": "done"}),
        (
            HistoryWrite(verb="append", value=ListRef(ranges=((0, 2),))),
            {"key": "history", "verb": "append", "value": {"ranges": [[0, 2]]}},
        ),
        (
            PendingBatchWrite(verb="delete"),
            {"key": "pendingBatch", "verb": "delete", "value": None},
        ),
        (
            RunUsageWrite(value=Usage(input=3, output=4)),
            {
                "key": "runUsage",
                "verb": "set",
                "value": msgspec.to_builtins(Usage(input=3, output=4)),
            },
        ),
    ],
)
def test_a_typed_write_encodes_as_its_untyped_map(write: Any, wire: dict[str, Any]) -> None:
    """The typed write's bytes are the untyped map's, and they decode back to the typed write."""
    assert msgspec.msgpack.encode(write) == msgspec.msgpack.encode(wire)
    assert msgspec.json.encode(write) == msgspec.json.encode(wire)
    assert writes_from_wire([wire]) == (write,)
    assert write_of(wire["key"], wire["verb"], write.value) == write


def test_a_decoded_bundle_holds_typed_writes() -> None:
    """A bundle decoded from JSON (an export) gets each write as its key's class."""
    raw = {
        "runId": "r",
        "seq": 0,
        "stage": "final",
        "runtimeStageId": "final#0",
        "iteration": 1,
        "writes": [{"key": "finalAnswer", "verb": "set", "value": "hi"}],
        "committedAtMs": 1,
    }
    bundle = msgspec.convert(raw, CommitBundle)
    assert bundle.writes == (FinalAnswerWrite(value="hi"),)
    assert msgspec.json.decode(msgspec.json.encode(bundle)) == raw


@pytest.mark.parametrize(
    ("tree", "named"),
    [
        ([{"key": "scratch", "verb": "set", "value": 1}], "'scratch'"),
        ([{"key": "finalAnswer", "verb": "set", "value": 5}], "Expected `str`, got `int`"),
        ([{"key": "finalAnswer", "verb": "append", "value": "x"}], "'append'"),
        ([{"verb": "set", "value": 1}], "missing required field `key`"),
        ({"key": "finalAnswer"}, "Expected `array`"),
    ],
)
def test_what_is_not_a_write_is_refused_by_name(tree: Any, named: str) -> None:
    """An unknown key, a value of the wrong type, a verb the key does not take: InvalidValue
    naming it."""
    with pytest.raises(InvalidValue, match="not a list of commit writes") as caught:
        writes_from_wire(tree)
    assert named in str(caught.value)


def test_write_of_an_unknown_key_is_refused() -> None:
    with pytest.raises(InvalidValue, match="no commit write has the key 'scratch'"):
        write_of("scratch", "set", 1)
