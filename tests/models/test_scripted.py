"""The scripted model: replies from a list or a function, and what it records."""

from __future__ import annotations

import msgspec
import pytest

from afp_runtime.errors import ModelCallError
from afp_runtime.messages import ModelReply, ModelRequest, ToolCall, canonical_json, user
from afp_runtime.models import (
    Model,
    ReplyDelta,
    RetryPolicy,
    ScriptedModel,
    StreamedReply,
    send_with_retries,
)

FIRST = ModelRequest(model="scripted", messages=(user("one"),))
SECOND = ModelRequest(model="scripted", system="Be kind.", messages=(user("two"),))


async def test_replies_come_from_the_list_in_order() -> None:
    """Each call returns the next reply of the list."""
    call = ToolCall(id="c1", name="lookup", args={"q": "x"})
    model = ScriptedModel([ModelReply(content="a"), ModelReply(tool_calls=(call,))])

    first = await model.send(FIRST)
    second = await model.send(SECOND)

    assert first.content == "a"
    assert second.tool_calls == (call,)
    assert model.calls == 2


async def test_requests_and_bodies_are_recorded() -> None:
    """Every request is recorded, decoded and as the exact canonical bytes it was encoded to."""
    model = ScriptedModel([ModelReply(), ModelReply()])

    await model.send(FIRST)
    await model.send(model.encode(SECOND))

    assert list(model.requests) == [FIRST, SECOND]
    assert list(model.bodies) == [canonical_json(FIRST), canonical_json(SECOND)]
    assert model.encode(SECOND).body == canonical_json(SECOND)
    assert msgspec.json.decode(model.bodies[1], type=ModelRequest) == SECOND


async def test_an_error_entry_is_raised_for_its_call() -> None:
    """A ModelCallError in the list is raised by the call it stands for."""
    error = ModelCallError(
        "scripted outage", error_kind="server", provider="scripted", status=503, retryable=True
    )
    model = ScriptedModel([error, ModelReply(content="after")])

    with pytest.raises(ModelCallError) as caught:
        await model.send(FIRST)
    reply = await model.send(FIRST)

    assert caught.value is error
    assert reply.content == "after"


async def test_only_the_latest_requests_are_kept() -> None:
    """With ``keep`` set, only that many of the latest requests and bodies are kept."""
    model = ScriptedModel([ModelReply()] * 3, keep=2)

    await model.send(FIRST)
    await model.send(SECOND)
    await model.send(FIRST)

    assert model.calls == 3
    assert list(model.requests) == [SECOND, FIRST]
    assert list(model.bodies) == [canonical_json(SECOND), canonical_json(FIRST)]


async def test_a_sync_handler_gets_the_request_and_call_number() -> None:
    """A sync function is called with the decoded request and the 1-based call number."""
    seen: list[tuple[ModelRequest, int]] = []

    def handler(request: ModelRequest, number: int) -> ModelReply:
        seen.append((request, number))
        return ModelReply(content=f"reply {number} to {request.messages[-1].content}")

    model = ScriptedModel(handler)

    first = await model.send(FIRST)
    second = await model.send(SECOND)

    assert (first.content, second.content) == ("reply 1 to one", "reply 2 to two")
    assert seen == [(FIRST, 1), (SECOND, 2)]


async def test_an_async_handler_is_awaited() -> None:
    """An async function's reply is awaited, and an error it returns is raised."""

    async def handler(request: ModelRequest, number: int) -> ModelReply | ModelCallError:
        if number == 2:
            return ModelCallError("no more", error_kind="server", provider="scripted")
        return ModelReply(content="async " + request.messages[0].content)

    model = ScriptedModel(handler)

    reply = await model.send(FIRST)
    with pytest.raises(ModelCallError, match="no more"):
        await model.send(FIRST)

    assert reply.content == "async one"


async def test_an_exhausted_script_names_the_call_number() -> None:
    """Running past the list raises a non-retryable ``script-exhausted`` naming the call."""
    model = ScriptedModel([ModelReply(content="only")])
    await model.send(FIRST)

    with pytest.raises(ModelCallError) as caught:
        await model.send(SECOND)

    assert caught.value.error_kind == "script-exhausted"
    assert caught.value.retryable is False
    assert "call 2" in str(caught.value)
    assert "holds 1" in str(caught.value)


async def test_an_exhausted_script_is_not_retried() -> None:
    """The retry loop gives up on an exhausted script after one attempt."""
    model = ScriptedModel([])

    async def sleep(seconds: float) -> None:
        raise AssertionError("no wait expected")

    with pytest.raises(ModelCallError) as caught:
        await send_with_retries(
            model, model.encode(FIRST), sleep=sleep, random=lambda: 0.5, policy=RetryPolicy()
        )

    assert len(caught.value.attempts) == 1
    assert model.calls == 1


async def test_scripted_errors_are_retried_then_the_reply_arrives() -> None:
    """Retryable scripted errors go through the retry loop with jittered waits."""
    error = ModelCallError("busy", error_kind="rate-limited", provider="scripted", retryable=True)
    model = ScriptedModel([error, error, ModelReply(content="finally")])
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    reply, attempts = await send_with_retries(
        model, model.encode(FIRST), sleep=sleep, random=lambda: 0.25, policy=RetryPolicy()
    )

    assert reply.content == "finally"
    assert waits == [0.25, 0.5]
    assert len(attempts) == 2
    assert list(model.bodies) == [model.encode(FIRST).body] * 3


async def test_on_delta_receives_the_reply_text() -> None:
    """on_delta receives a reply's non-empty text once."""
    model = ScriptedModel([ModelReply(content="hello"), ModelReply()])
    tokens: list[str] = []

    await model.send(FIRST, on_delta=lambda d: tokens.append(d.text))
    await model.send(FIRST, on_delta=lambda d: tokens.append(d.text))

    assert tokens == ["hello"]


async def test_aclose_is_counted_and_the_port_is_satisfied() -> None:
    """The scripted model satisfies the Model port and counts aclose calls."""
    model = ScriptedModel([], model="demo")

    await model.aclose()

    assert isinstance(model, Model)
    assert model.closed == 1
    assert (model.provider, model.model, model.encoder, model.deterministic) == (
        "scripted",
        "demo",
        "scripted/1",
        True,
    )
    assert model.settings() == {}


async def test_a_streamed_entry_hands_its_fragments_over_in_order() -> None:
    """Text first, then each call's argument text, cut by ``sizes`` (the last one repeated, the
    cutting starting again for each piece); the call's id and name on its first fragment; a
    pause before each; the reply returned is the entry's."""
    reply = ModelReply(
        content="Hello!",
        tool_calls=(
            ToolCall(id="c1", name="lookup", args={"q": "x"}),
            ToolCall(id="c2", name="raw", args_text="{bad"),
            ToolCall(id="c3", name="empty"),
        ),
    )
    paused: list[int] = []

    async def pause(index: int) -> None:
        paused.append(index)

    heard: list[ReplyDelta] = []
    model = ScriptedModel([StreamedReply(reply=reply, sizes=(1, 4), pause=pause)])
    assert await model.send(FIRST, on_delta=heard.append) == reply
    assert heard == [
        ReplyDelta(text="H"),
        ReplyDelta(text="ello"),
        ReplyDelta(text="!"),
        ReplyDelta(tool_call_index=0, tool_call_id="c1", tool_name="lookup", arguments="{"),
        ReplyDelta(tool_call_index=0, arguments='"q":'),
        ReplyDelta(tool_call_index=0, arguments='"x"}'),
        ReplyDelta(tool_call_index=1, tool_call_id="c2", tool_name="raw", arguments="{"),
        ReplyDelta(tool_call_index=1, arguments="bad"),
        ReplyDelta(tool_call_index=2, tool_call_id="c3", tool_name="empty", arguments="{"),
        ReplyDelta(tool_call_index=2, arguments="}"),
    ]
    assert paused == list(range(len(heard)))
    # Without a listener the entry still pauses as scripted and returns the same reply.
    again = ScriptedModel([StreamedReply(reply=reply, sizes=(3,))])
    assert await again.send(FIRST) == reply


def test_a_streamed_entry_refuses_empty_or_zero_sizes() -> None:
    """Fragment lengths are at least 1, and there is at least one."""
    for sizes in ((), (2, 0)):
        with pytest.raises(ValueError, match="sizes"):
            StreamedReply(reply=ModelReply(content="x"), sizes=sizes)
