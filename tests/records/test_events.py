"""The event registry (docs/host.md#event-catalogue): one payload class per type string, and the
wire form of every event decodes to its class and encodes back to the same bytes.

``event_wire.jsonl`` holds one event of every payload shape the loop, the host and the lease
emitted across tests/loop, tests/host and tests/api before payloads were typed (their bytes as
they were sent), plus hand-written lines for shapes those tests do not reach (a dismissed turn,
``host.damaged``, ``tool.progress``, a truncated result).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import msgspec
import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.loop import Emitter, EventRecorder
from afp_runtime.messages import Usage
from afp_runtime.records import (
    EVENT_TYPES,
    Event,
    EventPayload,
    Payload,
    TurnEnded,
    TurnHeld,
    TurnStarted,
    decode_event,
)

WIRE = Path(__file__).with_name("event_wire.jsonl").read_bytes().splitlines()
DOCS = Path(__file__).parents[2] / "docs/host.md"


@pytest.mark.parametrize("line", WIRE, ids=lambda line: msgspec.json.decode(line)["type"])
def test_every_event_decodes_to_its_class_and_encodes_to_the_same_bytes(line: bytes) -> None:
    event = decode_event(line)
    assert type(event.payload) is EVENT_TYPES[event.type]
    assert msgspec.json.encode(event) == line


def test_the_wire_sample_covers_every_registered_type() -> None:
    seen = {msgspec.json.decode(line)["type"] for line in WIRE}
    assert seen == set(EVENT_TYPES)


def test_the_registry_holds_exactly_one_class_per_type() -> None:
    classes = get_args(EventPayload)
    assert len({cls.type for cls in classes}) == len(classes) == len(EVENT_TYPES)
    assert all(EVENT_TYPES[cls.type] is cls for cls in classes)

    def concrete(cls: type[Payload]) -> set[type[Payload]]:
        found = {cls} if "type" in vars(cls) else set()
        for sub in cls.__subclasses__():
            found |= concrete(sub)
        return found

    # A payload class defined but left out of the union would never decode.
    assert concrete(Payload) == set(classes)


def test_the_catalogue_in_the_docs_lists_the_registered_types() -> None:
    section = DOCS.read_text(encoding="utf-8").split("### Event catalogue", 1)[1]
    section = section.split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z-]+\.[a-z-]+)`", section, re.M))
    listed |= set(
        re.findall(r"^\| `host\.started`, `(host\.[a-z]+)`, `(host\.[a-z]+)`", section, re.M)[0]
    )
    assert listed - {"stream.gap"} == set(EVENT_TYPES)


def test_absent_keys_stay_absent_and_nulls_stay_null() -> None:
    """An optional key not given is left out; a key that is always sent goes as null."""
    held = TurnHeld(error_kind="crash-loop", message="three crashes", run_id=None)
    assert msgspec.json.encode(held) == (
        b'{"errorKind":"crash-loop","message":"three crashes","runId":null}'
    )
    ended = TurnEnded(
        turn=1,
        message_id="m",
        status="answered",
        runs=1,
        iterations=1,
        epochs=1,
        usage=Usage(),
        duration_ms=0,
        answer="hi",
    )
    assert b"errorKind" not in msgspec.json.encode(ended)


def test_the_envelope_type_is_the_payload_s() -> None:
    recorder = EventRecorder()
    Emitter([recorder]).emit(TurnStarted(turn=1, message_id="m"), at_ms=5, agent_id="ops")
    [event] = recorder.events
    assert event.type == "turn.started" and event.id == 1
    with pytest.raises(InvalidValue, match=r"turn\.started"):
        Event(
            id=1,
            type="turn.ended",
            at_ms=0,
            agent_id="",
            payload=TurnStarted(turn=1, message_id="m"),
        )


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        (b"[]", "not an event envelope"),
        (b'{"id":1,"type":"no.such","atMs":0,"agentId":"","payload":{}}', "no event type"),
        (
            b'{"id":1,"type":"turn.started","atMs":0,"agentId":"","payload":{"turn":"x"}}',
            "turn.started payload",
        ),
    ],
)
def test_a_bad_wire_event_is_refused_with_what_is_wrong(wire: bytes, problem: str) -> None:
    with pytest.raises(InvalidValue, match=problem):
        decode_event(wire)
