"""MemoryRunLog: an in-memory RunLog whose answers equal a full replay of the log."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.messages import Message, fingerprint, message_body, user
from afp_runtime.records import (
    UNKNOWN,
    Anchor,
    HistoryWrite,
    MessageRef,
    RunLog,
    SystemPiecesWrite,
    Verb,
    Write,
    write_of,
)
from afp_runtime.served.memory import MemoryRunLog

KEYS = ("finalValue", "definition", "history")
VERBS: tuple[Verb, ...] = ("set", "append", "delete")

_values = st.one_of(
    st.integers(0, 9),
    st.lists(st.integers(0, 9), max_size=3),
    st.dictionaries(st.sampled_from("xy"), st.integers(0, 9), max_size=2),
)
_refs = st.lists(st.builds(MessageRef, fingerprint=st.sampled_from(["f1", "f2", "f3"])), max_size=3)


@st.composite
def _writes(draw: st.DrawFn) -> Write:
    key = draw(st.sampled_from(KEYS))
    verb = draw(st.sampled_from(VERBS))
    if verb == "delete":
        return write_of(key, "delete")
    value = draw(_refs) if key == "history" else draw(_values)
    return write_of(key, verb, value)


def _replay(bundles: list[list[Write]], key: str, seq: int) -> Any:
    """The naive definition: fold every write of ``key`` in bundles 0..seq."""
    value: Any = UNKNOWN
    for writes in bundles[: seq + 1]:
        for write in writes:
            if write.key != key:
                continue
            if write.verb == "set":
                value = list(write.value) if isinstance(write.value, list) else write.value
            elif write.verb == "delete":
                value = UNKNOWN
            else:
                base = list(value) if isinstance(value, list | tuple) else []
                items = write.value if isinstance(write.value, list) else [write.value]
                value = base + list(items)
    if key == "history" and isinstance(value, list):
        return tuple(value)
    return value


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_writes(), max_size=3), max_size=8))
def test_value_at_equals_a_full_replay(bundles: list[list[Write]]) -> None:
    """docs/served.md#the-runlog-interface: every key's value at every seq equals the fold of its
    writes up to that seq."""
    log = MemoryRunLog("run-1")
    for writes in bundles:
        log.append("window", writes, iteration=1)
    for seq in range(len(bundles)):
        for key in KEYS:
            assert log.value_at(key, seq) == _replay(bundles, key, seq), (key, seq)


def test_values_are_fresh_copies() -> None:
    """docs/served.md#a-view-is-a-value: changing what a read returned never changes the log."""
    log = MemoryRunLog("run-1")
    log.append("seed", [SystemPiecesWrite(verb="set", value=[{"text": "t"}])], iteration=1)
    first = log.value_at("systemPieces", 0)
    first[0]["text"] = "changed"
    first.append("more")
    assert log.value_at("systemPieces", 0) == [{"text": "t"}]
    bundle = log.bundle(0)
    assert bundle is not None
    bundle.writes[0].value.clear()
    assert log.value_at("systemPieces", 0) == [{"text": "t"}]


def test_messages_become_references() -> None:
    """docs/served.md#the-runlog-interface: message lists keep references with markers; bodies go to
    the body store."""
    marked = Message(role="user", content="note", injected_by="window")
    log = MemoryRunLog("run-1")
    log.append("seed", [HistoryWrite(verb="set", value=[user("go"), marked])], iteration=1)
    refs = log.value_at("history", 0)
    assert refs == (
        MessageRef(fingerprint=fingerprint(user("go"))),
        MessageRef(fingerprint=fingerprint(marked), injected_by="window"),
    )
    assert log.body(fingerprint(marked)) == message_body(marked)
    assert b"window" not in (log.body(fingerprint(marked)) or b"")


def test_fold_base_and_anchors() -> None:
    """docs/served.md#the-fold-base: the base is seq 0's seed bundle; anchors list receipts and
    calls in order."""
    log = MemoryRunLog("run-1")
    assert not log.has_base
    log.append("seed", [], iteration=1)
    log.append("receipt", [], iteration=1)
    log.append("call-model", [], iteration=1)
    log.append("final", [], iteration=1)
    assert log.has_base
    assert log.anchors() == (
        Anchor(seq=1, stage="receipt", iteration=1),
        Anchor(seq=2, stage="call-model", iteration=1),
    )
    assert [b.seq for b in log.bundles(2)] == [2, 3]
    assert log.bundle(9) is None
    partial = MemoryRunLog("run-1", list(log.bundles(1)))
    assert not partial.has_base
    forced = MemoryRunLog("run-1", list(log.bundles()), has_base=False)
    assert not forced.has_base


def test_it_is_a_run_log() -> None:
    """docs/architecture.md#decision-3-served-views-read-an-index-not-a-replay: MemoryRunLog
    satisfies the RunLog read interface."""
    log: RunLog = MemoryRunLog("run-1")
    assert log.value_at("anything", 0) is UNKNOWN
    assert log.body("f" * 64) is None
