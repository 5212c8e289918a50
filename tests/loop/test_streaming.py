"""Streamed replies through the loop (docs/loop.md#streaming-replies): each fragment a
``model.delta`` event of its epoch and send, nothing of it committed, and a crash mid-stream
leaving no reply, so the recovery asks for it again."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from msgspec import UNSET

from afp_runtime.agents import Agent
from afp_runtime.errors import ModelCallError
from afp_runtime.loop import AgentDriver, Emitter, EventRecorder, SequentialIds
from afp_runtime.models import ScriptedModel, StreamedReply
from afp_runtime.records import ModelDelta, ModelEnded
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.testing import FakeClock, answer, call, tool_reply

from .conftest import Crash, Harness


def _writes(bundles: list[Any]) -> list[str]:
    return [write["key"] for bundle in bundles for write in bundle.writes]


async def test_each_fragment_is_an_event_of_its_epoch_and_attempt(harness: Harness) -> None:
    """A retried send's fragments count from index 0 again under attempt 2; text and tool-call
    fragments arrive in order, the call's id and name on its first; nothing but the assembled
    reply is committed."""
    outage = ModelCallError("down", error_kind="server", provider="scripted", retryable=True)

    async def fail_at_third(index: int) -> None:
        if index == 2:
            raise outage

    # The first send streams two fragments, then fails: a reader drops them when attempt 2
    # starts.
    script = [
        StreamedReply(reply=answer("lost reply"), sizes=(3,), pause=fail_at_third),
        StreamedReply(
            reply=tool_reply(call("c1", "alpha_tool", q="ab"), content="Look"), sizes=(2, 4)
        ),
        answer("Done."),
    ]
    driver = harness.driver(script)
    await driver.post("go")
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    deltas = [
        (
            p.epoch,
            p.attempt,
            p.index,
            p.text,
            p.tool_call_index,
            p.tool_call_id,
            p.tool_name,
            p.arguments,
        )
        for p in harness.recorder.payloads(ModelDelta)
    ]
    assert deltas == [
        (1, 1, 0, "los", UNSET, UNSET, UNSET, UNSET),
        (1, 1, 1, "t r", UNSET, UNSET, UNSET, UNSET),
        (1, 2, 0, "Lo", UNSET, UNSET, UNSET, UNSET),
        (1, 2, 1, "ok", UNSET, UNSET, UNSET, UNSET),
        (1, 2, 2, UNSET, 0, "c1", "alpha_tool", '{"'),
        (1, 2, 3, UNSET, 0, UNSET, UNSET, 'q":"'),
        (1, 2, 4, UNSET, 0, UNSET, UNSET, 'ab"}'),
        (2, 1, 0, "Done.", UNSET, UNSET, UNSET, UNSET),
    ]
    keys = _writes(await harness.store.bundles(outcome.run_id))
    assert keys.count("reply") == 2
    assert not any("delta" in key for key in keys)
    first, _ = harness.recorder.payloads(ModelEnded)
    assert (first.attempts, first.content_chars, first.tool_call_count) == (2, 4, 1)


async def _ids(path: Path, *, listening: bool) -> tuple[int, list[Any]]:
    recorder = EventRecorder()
    emitter = Emitter([recorder] if listening else [])
    store = await SqliteStore.open(path)
    try:
        model = ScriptedModel([StreamedReply(reply=answer("abcdef"), sizes=(2,))])
        agent = Agent("desk", model)
        driver = AgentDriver(store, agent, clock=FakeClock(), ids=SequentialIds(), emitter=emitter)
        await driver.post("go")
        await driver.work()
    finally:
        await store.aclose()
    return emitter._next_id, list(recorder.events)


async def test_unheard_fragments_are_numbered_but_never_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no sink no ``ModelDelta`` is built, yet each fragment is numbered: a sink added
    later sees the ids it would have seen (docs/loop.md#the-loops-own-overhead)."""
    heard, events = await _ids(tmp_path / "heard.db", listening=True)

    def unbuildable(**fields: Any) -> Any:
        raise AssertionError("a ModelDelta was built with nobody listening")

    stage = importlib.import_module("afp_runtime.loop.stages.call_model")
    monkeypatch.setattr(stage, "ModelDelta", unbuildable)
    unheard, none = await _ids(tmp_path / "unheard.db", listening=False)
    assert [e.id for e in events] == list(range(1, heard + 1))
    assert [e.payload.text for e in events if isinstance(e.payload, ModelDelta)] == [
        "ab",
        "cd",
        "ef",
    ]
    assert none == []
    assert unheard == heard


async def test_a_crash_mid_stream_asks_for_the_reply_again(harness: Harness) -> None:
    """A process dying after two fragments commits nothing of the reply: the recovery run sends
    the call again and commits one reply, and the crashed epoch reads as abandoned."""

    async def die_after_two(index: int) -> None:
        if index == 2:
            raise Crash

    driver = harness.driver(
        [StreamedReply(reply=answer("half of it"), sizes=(3,), pause=die_after_two)]
    )
    await driver.post("go")
    await harness.crash(driver)
    heard_before = len(harness.recorder.of_type(ModelDelta))
    await harness.restart()
    recorder = EventRecorder()
    driver = harness.driver([StreamedReply(reply=answer("whole of it"), sizes=(5,))])
    driver.emitter.add(recorder)
    [outcome] = await harness.work(driver)
    assert (outcome.kind, outcome.status, outcome.final_answer) == (
        "recovery",
        "answered",
        "whole of it",
    )
    assert heard_before == 2
    assert _writes(await harness.store.bundles("run-1")).count("reply") == 0
    assert _writes(await harness.store.bundles(outcome.run_id)).count("reply") == 1
    assert [p.text for p in recorder.payloads(ModelDelta)] == ["whole", " of i", "t"]
