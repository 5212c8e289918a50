"""Model call failures: retried in-stage on the injected clock, then stalled or held."""

from __future__ import annotations

import errno
import os
from typing import Any

import pytest

from afp_runtime.errors import ModelCallError, RunNotResumable
from afp_runtime.models import ScriptedModel
from afp_runtime.records import ModelEnded, ModelRetry, ReceiptMinted, TurnHeld
from afp_runtime.testing import answer

from .conftest import Harness


def error(kind: str, status: int | None, *, retryable: bool, after: float | None = None):
    return ModelCallError(
        f"scripted {kind}",
        error_kind=kind,
        provider="scripted",
        status=status,
        retryable=retryable,
        retry_after_s=after,
    )


async def test_retry_after_is_honoured_exactly(harness: Harness) -> None:
    """A 429 with Retry-After 2 waits exactly 2 s of virtual time and resends the same bytes."""
    driver = harness.driver([error("rate-limited", 429, retryable=True, after=2), answer("ok")])
    await driver.post("go")
    start = harness.clock.now_ms()
    [outcome] = await harness.work(driver)
    assert outcome.status == "answered"
    assert harness.recorder.payloads(ModelRetry) == [
        ModelRetry(epoch=1, attempt=1, error_kind="rate-limited", status=429, wait_ms=2000)
    ]
    assert harness.clock.now_ms() - start == 2000
    assert harness.model.bodies[0] == harness.model.bodies[1]
    assert len(harness.recorder.of_type(ReceiptMinted)) == 1
    [ended] = harness.recorder.payloads(ModelEnded)
    assert ended.attempts == 2


async def test_exhausted_retries_stall_then_a_retry_run_answers(harness: Harness) -> None:
    """Five 503s stall the turn for 60 s; once due, a retry run composes the call again."""
    script = [error("server", 503, retryable=True) for _ in range(5)] + [answer("back")]
    driver = harness.driver(script)
    await driver.post("go")
    [stalled] = await harness.work(driver)
    assert stalled.status == "stalled" and stalled.error_kind == "server"
    state = await harness.store.conversation_state("ops")
    assert state.open_turn.status == "stalled"
    assert state.open_turn.retry_at_ms == harness.clock.now_ms() + 60_000
    assert await harness.work(driver) == []  # not due yet
    harness.clock.advance(60)
    [retried] = await harness.work(driver)
    assert (retried.kind, retried.status, retried.final_answer) == ("retry", "answered", "back")


async def test_auth_error_holds_the_turn_and_later_messages_wait(harness: Harness) -> None:
    """A 401 is not retried: the turn is held with its reason and the next message waits."""
    driver = harness.driver([error("auth", 401, retryable=False)])
    await driver.post("go")
    await driver.post("next")
    [held] = await harness.work(driver)
    assert (held.status, held.error_kind) == ("held", "auth")
    assert harness.model.calls == 1
    assert [r.status for r in await harness.store.inbox("ops")] == ["held", "queued"]
    [event] = harness.recorder.payloads(TurnHeld)
    assert event.error_kind == "auth"
    run = (await harness.store.runs("ops"))[0]
    assert run.status == "held"


async def test_a_long_retry_after_stalls_at_once(harness: Harness) -> None:
    """A Retry-After beyond the cap stalls immediately with retryAt = now + Retry-After."""
    driver = harness.driver([error("rate-limited", 429, retryable=True, after=900)])
    await driver.post("go")
    start = harness.clock.now_ms()
    [stalled] = await harness.work(driver)
    assert stalled.status == "stalled" and harness.model.calls == 1
    state = await harness.store.conversation_state("ops")
    assert state.open_turn.retry_at_ms == start + 900_000


async def test_script_exhausted_names_the_call_number(harness: Harness) -> None:
    """A scripted model that runs out holds the turn with an error naming the call number."""
    driver = harness.driver([])
    await driver.post("go")
    [held] = await harness.work(driver)
    assert held.status == "held" and held.error_kind == "script-exhausted"
    assert "call 1" in (held.error or "")


@pytest.mark.parametrize(
    ("handler", "named"),
    [
        pytest.param(lambda request, n: "hi", "returned str, not a ModelReply", id="not-a-reply"),
        pytest.param(lambda request, n: 1 / 0, "raised ZeroDivisionError", id="raises"),
    ],
)
async def test_a_broken_adapter_holds_the_turn_naming_what_it_did(
    harness: Harness, handler: Any, named: str
) -> None:
    """A model that returns something other than a reply, or raises an exception of its own, is
    not retried: the turn is held under ``adapter`` with the error naming what it did, and the
    run returns instead of raising out of the loop."""
    driver = harness.driver(ScriptedModel(handler))
    await driver.post("go")
    [held] = await harness.work(driver)
    assert held.status == "held" and held.error_kind == "adapter"
    assert named in (held.error or "")
    assert [r.status for r in await harness.store.inbox("ops")] == ["held"]


async def test_operator_resume_after_fixing_credentials(harness: Harness) -> None:
    """A turn held on 401 is resumed by an operator with the current definition and answers;
    then the queued message runs."""
    driver = harness.driver([error("auth", 401, retryable=False)])
    await driver.post("go")
    await driver.post("next")
    [held] = await harness.work(driver)
    assert held.status == "held"
    fixed = harness.driver([answer("now it works"), answer("and the next")])
    async with harness.clock.autojump():
        outcomes = await fixed.resume()
    assert [(o.kind, o.status) for o in outcomes] == [
        ("operator", "answered"),
        ("initial", "answered"),
    ]
    assert [r.status for r in await harness.store.inbox("ops")] == ["answered", "answered"]


async def test_resume_without_a_held_turn_is_refused(harness: Harness) -> None:
    """Resuming an agent whose turns are all answered is refused, naming the state."""
    driver = harness.driver([answer("ok")])
    await driver.post("go")
    await harness.work(driver)
    with pytest.raises(RunNotResumable, match="idle"):
        await driver.resume()


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENOMEM, errno.ENOSPC])
async def test_an_adapter_out_of_a_resource_stalls_and_the_retry_answers(
    harness: Harness, code: int
) -> None:
    """An adapter failing with an ``OSError`` of a resource shortage is retried in-stage, then
    stalls the turn under ``resource`` with a retry scheduled; once the shortage is over the
    retry run answers. It is never held."""
    short = True

    def handler(request: Any, n: int) -> Any:
        if short:
            raise OSError(code, os.strerror(code))
        return answer("back")

    driver = harness.driver(ScriptedModel(handler))
    await driver.post("go")
    [stalled] = await harness.work(driver)
    assert (stalled.status, stalled.error_kind) == ("stalled", "resource")
    assert os.strerror(code) in (stalled.error or "")
    state = await harness.store.conversation_state("ops")
    assert state.open_turn.retry_at_ms == harness.clock.now_ms() + 60_000
    assert len(harness.recorder.of_type(ModelRetry)) == 4
    short = False
    harness.clock.advance(60)
    [retried] = await harness.work(driver)
    assert (retried.kind, retried.status, retried.final_answer) == ("retry", "answered", "back")
