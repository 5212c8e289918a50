"""Properties of whole turns over random scripts: pairing, order, and an append-only log."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_runtime.messages import Message, ToolCall
from afp_runtime.testing import FakeClock, answer, tool_reply

from .conftest import Harness

TOOL_NAMES = ("alpha_tool", "beta_tool", "idem_tool", "gamma")

calls = st.lists(st.sampled_from(TOOL_NAMES), min_size=1, max_size=4)
turn_scripts = st.lists(st.lists(calls, max_size=3), min_size=1, max_size=3)


def check_pairing(history: tuple[Message, ...]) -> None:
    """Every call is followed at once by its results, in call order, and nothing else."""
    index = 0
    while index < len(history):
        message = history[index]
        if message.role == "assistant" and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            results = history[index + 1 : index + 1 + len(ids)]
            assert [m.role for m in results] == ["tool"] * len(ids)
            assert [m.tool_call_id for m in results] == ids
            index += 1 + len(ids)
        else:
            assert message.role != "tool", f"orphan tool message at {index}"
            index += 1


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=turn_scripts)
async def test_turns_keep_calls_with_results_and_never_edit_the_log(
    tmp_path_factory: object, script: list[list[list[str]]]
) -> None:
    """Over random scripts: calls pair with results in order and committed bundles never change."""
    folder = await anyio.to_thread.run_sync(tmp_path_factory.mktemp, "prop")  # type: ignore[attr-defined]
    harness = Harness(Path(folder) / "afp.db", FakeClock())
    await harness.open()
    try:
        replies = []
        for t, turn in enumerate(script):
            for i, names in enumerate(turn):
                replies.append(tool_reply(*(ToolCall(id=f"c{i}", name=n) for n in names)))
            replies.append(answer(f"answer {t}"))
        driver = harness.driver(replies, max_iterations=10)
        snapshots: dict[str, bytes] = {}
        for t in range(len(script)):
            await driver.post(f"message {t}")
            [outcome] = await harness.work(driver)
            assert outcome.status == "answered"
            for run in await harness.store.runs("ops"):
                encoded = msgspec.json.encode(await harness.store.bundles(run.run_id))
                assert snapshots.setdefault(run.run_id, encoded) == encoded
        history = (await harness.store.load_conversation("ops")).history
        check_pairing(history)
        ids = [c.id for m in history for c in m.tool_calls]
        assert len(ids) == len(set(ids))
        assert [m.content for m in history if m.role == "user"] == [
            f"message {t}" for t in range(len(script))
        ]
        results = {m.tool_call_id: m for m in history if m.role == "tool"}
        for message in history:
            for c in message.tool_calls:
                assert results[c.id].not_dispatched == (c.name == "gamma")
    finally:
        await harness.close()
