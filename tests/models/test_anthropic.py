"""The Anthropic adapter against a real local HTTP server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from afp_runtime.errors import ConfigError, ModelCallError
from afp_runtime.messages import (
    Message,
    ModelParams,
    ModelRequest,
    ToolCall,
    ToolChoice,
    ToolSchema,
    Usage,
    assistant,
    tool_result,
    user,
)
from afp_runtime.models import AnthropicModel, Model, RetryPolicy, send_with_retries

WEATHER = ToolSchema(
    name="get_weather",
    description="Current weather of a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
REQUEST = ModelRequest(
    model="claude-test",
    system="You are terse.",
    messages=(user("Weather in Oslo?"),),
    tools=(WEATHER,),
)


def message_reply(
    *blocks: dict[str, Any],
    stop: str | None = "end_turn",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Messages API response body as Anthropic shapes it."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(blocks) or [{"type": "text", "text": "ok"}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 2},
    }


def text(value: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, args: Any) -> dict[str, Any]:
    """A tool_use content block."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def error_body(kind: str, message: str) -> dict[str, Any]:
    """An Anthropic error response body."""
    return {"type": "error", "error": {"type": kind, "message": message}}


async def no_sleep(seconds: float) -> None:
    """A sleep that must never be reached."""
    raise AssertionError(f"unexpected retry wait of {seconds} s")


def offline(**kwargs: Any) -> AnthropicModel:
    """An adapter for encode-only tests; it never sends."""
    return AnthropicModel(model="claude-test", api_key="k", base_url="http://127.0.0.1:9", **kwargs)


async def test_tool_call_round_trip(server, anthropic: AnthropicModel) -> None:
    """A tool call goes out as tool_use, decodes to a ToolCall, and its result goes back."""
    server.reply(
        json_body=message_reply(
            text("Let me look."),
            tool_use("toolu_1", "get_weather", {"city": "Oslo"}),
            stop="tool_use",
        )
    )
    server.reply(json_body=message_reply(text("It is 4 °C in Oslo.")))

    first = await anthropic.send(REQUEST)

    sent = server.received[0]
    assert sent.path == "/v1/messages"
    body = sent.json()
    assert body["model"] == "claude-test"
    assert body["system"] == "You are terse."
    assert body["max_tokens"] == 4096
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]}
    ]
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "input_schema": WEATHER.input_schema,
        }
    ]
    assert first.content == "Let me look."
    assert first.tool_calls == (ToolCall(id="toolu_1", name="get_weather", args={"city": "Oslo"}),)
    assert first.stop_reason == "tool-calls"

    second_request = ModelRequest(
        model="claude-test",
        system="You are terse.",
        messages=(
            *REQUEST.messages,
            first.as_message(),
            tool_result("toolu_1", "get_weather", "4 °C, cloudy"),
        ),
        tools=(WEATHER,),
    )
    second = await anthropic.send(second_request)

    messages = server.received[1].json()["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
        ],
    }
    assert messages[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "4 °C, cloudy"}],
    }
    assert second.content == "It is 4 °C in Oslo."
    assert second.stop_reason == "end"


async def test_body_received_is_byte_identical_to_encode(server, anthropic) -> None:
    """The server receives exactly the bytes ``encode`` produced."""
    server.reply(json_body=message_reply())
    encoded = anthropic.encode(REQUEST)

    await anthropic.send(encoded)

    assert server.received[0].body == encoded.body
    assert server.received[0].body == anthropic.encode(REQUEST).body


async def test_headers_carry_key_and_version(server, anthropic) -> None:
    """The key goes in ``x-api-key`` with the ``anthropic-version`` header, no Bearer."""
    server.reply(json_body=message_reply())

    await anthropic.send(REQUEST)

    headers = server.received[0].headers
    assert headers["x-api-key"] == "ak-test"
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"
    assert "authorization" not in headers


async def test_usage_is_mapped_with_cache_counts(server, anthropic) -> None:
    """Input counts every prompt token, with cache reads and writes also reported apart."""
    server.reply(
        json_body=message_reply(
            usage={
                "input_tokens": 20,
                "output_tokens": 7,
                "cache_read_input_tokens": 300,
                "cache_creation_input_tokens": 50,
            }
        )
    )

    reply = await anthropic.send(REQUEST)

    assert reply.usage == Usage(input=370, output=7, cache_read=300, cache_write=50)


async def test_usage_without_cache_counts(server, anthropic) -> None:
    """Absent or null cache counts stay None."""
    server.reply(
        json_body=message_reply(
            usage={"input_tokens": 20, "output_tokens": 7, "cache_read_input_tokens": None}
        )
    )

    reply = await anthropic.send(REQUEST)

    assert reply.usage == Usage(input=20, output=7)


@pytest.mark.parametrize(
    ("stop", "mapped"),
    [
        ("end_turn", "end"),
        ("tool_use", "tool-calls"),
        ("max_tokens", "max-tokens"),
        ("stop_sequence", "stop-sequence"),
        ("refusal", "other"),
        (None, "other"),
    ],
)
async def test_stop_reason_is_mapped(server, anthropic, stop, mapped) -> None:
    """Each Anthropic stop_reason maps to its stop reason, anything unknown to ``other``."""
    server.reply(json_body=message_reply(stop=stop))

    reply = await anthropic.send(REQUEST)

    assert reply.stop_reason == mapped


async def test_text_blocks_join_and_thinking_is_dropped(server, anthropic) -> None:
    """Text blocks join in order; thinking blocks are not part of the reply."""
    server.reply(
        json_body=message_reply(
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            text("Hello, "),
            text("world."),
        )
    )

    reply = await anthropic.send(REQUEST)

    assert reply.content == "Hello, world."


def test_system_messages_in_history_join_the_system_text() -> None:
    """In-history system messages are appended to the top-level system, in order."""
    request = ModelRequest(
        model="claude-test",
        system="Base rules.",
        messages=(user("hi"), Message(role="system", content="Imported note."), user("again")),
    )

    body = json.loads(offline().encode(request).body)

    assert body["system"] == "Base rules.\n\nImported note."
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "again"}],
        }
    ]


def test_consecutive_same_role_messages_are_merged() -> None:
    """Tool results and a following user line share one user message, results first."""
    calls = (
        ToolCall(id="a", name="get_weather", args={"city": "Oslo"}),
        ToolCall(id="b", name="get_weather", args={"city": "Rome"}),
    )
    request = ModelRequest(
        model="claude-test",
        messages=(
            user("weather?"),
            assistant(tool_calls=calls),
            tool_result("a", "get_weather", "4 °C"),
            tool_result("b", "get_weather", "20 °C"),
            user("[request-only line]"),
        ),
    )

    messages = json.loads(offline().encode(request).body)["messages"]

    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "4 °C"},
        {"type": "tool_result", "tool_use_id": "b", "content": "20 °C"},
        {"type": "text", "text": "[request-only line]"},
    ]


def test_dangling_call_gets_a_synthetic_tool_result() -> None:
    """A tool_use with no answering tool message is followed by a synthetic tool_result."""
    call = ToolCall(id="toolu_9", name="get_weather", args={"city": "Oslo"})
    request = ModelRequest(
        model="claude-test",
        messages=(user("weather?"), assistant("Checking.", tool_calls=(call,)), user("well?")),
    )

    messages = json.loads(offline().encode(request).body)["messages"]

    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    synthetic, follow = messages[2]["content"]
    assert synthetic["type"] == "tool_result"
    assert synthetic["tool_use_id"] == "toolu_9"
    assert "no result was recorded" in synthetic["content"]
    assert follow == {"type": "text", "text": "well?"}


def test_empty_messages_are_dropped_and_unparsed_args_send_an_empty_input() -> None:
    """Empty texts send no block, and a call kept as argsText sends ``input: {}``."""
    call = ToolCall(id="t1", name="get_weather", args={}, args_text="{oops")
    request = ModelRequest(
        model="claude-test",
        messages=(
            user("hi"),
            assistant(""),
            assistant(tool_calls=(call,)),
            tool_result("t1", "get_weather", ""),
        ),
    )

    messages = json.loads(offline().encode(request).body)["messages"]

    assert messages[1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}],
    }
    assert messages[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1"}],
    }


def test_params_and_forced_tool_are_encoded() -> None:
    """Params map to Anthropic's fields and a forced tool to ``{"type": "tool"}``."""
    request = ModelRequest(
        model="claude-test",
        messages=(user("hi"),),
        tools=(WEATHER,),
        forced="get_weather",
        params=ModelParams(temperature=0.3, top_p=0.8, max_tokens=99, stop=("END", "STOP")),
    )

    body = json.loads(offline().encode(request).body)

    assert body["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert body["temperature"] == 0.3
    assert body["top_p"] == 0.8
    assert body["max_tokens"] == 99
    assert body["stop_sequences"] == ["END", "STOP"]
    assert "system" not in body


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice(type="auto"), {"type": "auto"}),
        (ToolChoice(type="none"), {"type": "none"}),
        (ToolChoice(type="required"), {"type": "any"}),
        (ToolChoice(type="tool", name="get_weather"), {"type": "tool", "name": "get_weather"}),
    ],
)
def test_tool_choice_param_is_encoded(choice, wire) -> None:
    """``params.tool_choice`` maps onto Anthropic's tool_choice objects."""
    request = ModelRequest(
        model="claude-test",
        messages=(user("hi"),),
        tools=(WEATHER,),
        params=ModelParams(tool_choice=choice),
    )

    assert json.loads(offline().encode(request).body)["tool_choice"] == wire


def test_settings_hold_no_credentials_or_url() -> None:
    """settings() holds the body-shaping values only, never the key or the base URL."""
    model = offline(max_tokens=512, anthropic_version="2023-06-01")

    assert model.settings() == {"anthropicVersion": "2023-06-01", "maxTokens": 512}
    assert isinstance(model, Model)
    assert (model.provider, model.encoder, model.deterministic) == (
        "anthropic",
        "anthropic-messages/1",
        True,
    )


def test_key_defaults_to_the_anthropic_variable(monkeypatch) -> None:
    """Without api_key the key comes from ANTHROPIC_API_KEY, and its absence names it."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicModel(model="claude-test")


async def test_key_is_read_from_the_environment(server, monkeypatch) -> None:
    """The key in ANTHROPIC_API_KEY is sent as ``x-api-key``."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-env")
    model = AnthropicModel(model="claude-test", base_url=server.url)
    server.reply(json_body=message_reply())

    await model.send(REQUEST)
    await model.aclose()

    assert server.received[0].headers["x-api-key"] == "ak-env"


@pytest.mark.parametrize("max_tokens", [0, -1, None, True])
def test_max_tokens_must_be_positive(max_tokens) -> None:
    """max_tokens, which Anthropic requires, must be a positive int."""
    with pytest.raises(ConfigError, match="max_tokens"):
        offline(max_tokens=max_tokens)


@pytest.mark.parametrize(
    ("status", "kind", "error_type"),
    [
        (400, "bad-request", "invalid_request_error"),
        (401, "auth", "authentication_error"),
        (403, "auth", "permission_error"),
        (404, "bad-request", "not_found_error"),
        (413, "bad-request", "request_too_large"),
        (422, "bad-request", "invalid_request_error"),
    ],
)
async def test_client_errors_are_not_retried(server, anthropic, status, kind, error_type) -> None:
    """A 4xx other than 429 fails at once with its kind; the server sees one request."""
    server.reply(status, json_body=error_body(error_type, "refused for a reason"))

    with pytest.raises(ModelCallError) as caught:
        await send_with_retries(
            anthropic,
            anthropic.encode(REQUEST),
            sleep=no_sleep,
            random=lambda: 0.5,
            policy=RetryPolicy(),
        )

    assert caught.value.error_kind == kind
    assert caught.value.status == status
    assert caught.value.retryable is False
    assert "anthropic" in str(caught.value)
    assert "refused for a reason" in str(caught.value)
    assert len(server.received) == 1


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 208310 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000",
    ],
)
async def test_prompt_too_long_is_context_length(server, anthropic, message) -> None:
    """Anthropic's prompt-too-long error is ``context-length`` and is not retried."""
    server.reply(400, json_body=error_body("invalid_request_error", message))

    with pytest.raises(ModelCallError) as caught:
        await send_with_retries(
            anthropic,
            anthropic.encode(REQUEST),
            sleep=no_sleep,
            random=lambda: 0.5,
            policy=RetryPolicy(),
        )

    assert caught.value.error_kind == "context-length"
    assert caught.value.retryable is False
    assert len(server.received) == 1


@pytest.mark.parametrize("status", [529, 400])
async def test_overloaded_is_a_server_error(server, anthropic, status) -> None:
    """An overloaded_error is a retryable ``server`` error, whatever its status."""
    server.reply(status, json_body=error_body("overloaded_error", "Overloaded"))

    with pytest.raises(ModelCallError) as caught:
        await anthropic.send(REQUEST)

    assert caught.value.error_kind == "server"
    assert caught.value.retryable is True
    assert caught.value.status == status


async def test_malformed_json_is_a_bad_response(server, anthropic) -> None:
    """A 2xx body that is not JSON is a retryable ``bad-response`` naming the provider."""
    server.reply(200, body=b"<html>gateway</html>", headers={"Content-Type": "text/html"})

    with pytest.raises(ModelCallError) as caught:
        await anthropic.send(REQUEST)

    assert caught.value.error_kind == "bad-response"
    assert caught.value.retryable is True
    assert str(caught.value).startswith("anthropic: ")
    assert "not valid JSON" in str(caught.value)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"type": "message", "content": "hi"}, "content list"),
        ({"content": [{"type": "tool_use", "name": "x", "input": {}}]}, "id"),
        ({"content": [{"type": "text", "text": 3}]}, "text"),
        ({"content": [], "usage": {"input_tokens": "many"}}, "usage.input_tokens"),
        (error_body("api_error", "internal hiccup"), "internal hiccup"),
    ],
)
async def test_wrong_shape_is_a_bad_response(server, anthropic, body, says) -> None:
    """Valid JSON in the wrong shape is a ``bad-response`` saying what is wrong."""
    server.reply(json_body=body)

    with pytest.raises(ModelCallError) as caught:
        await anthropic.send(REQUEST)

    assert caught.value.error_kind == "bad-response"
    assert "anthropic" in str(caught.value)
    assert says in str(caught.value)


async def test_truncated_body_is_a_network_error(server, anthropic) -> None:
    """A body cut short of its Content-Length is a retryable ``network`` error."""
    server.reply(json_body=message_reply(text("cut")), truncated=True)

    with pytest.raises(ModelCallError) as caught:
        await anthropic.send(REQUEST)

    assert caught.value.error_kind == "network"
    assert caught.value.retryable is True
    assert "anthropic" in str(caught.value)
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)


async def test_read_timeout_is_a_network_error(server) -> None:
    """A server slower than the read timeout gives a retryable ``network`` error."""
    model = AnthropicModel(model="claude-test", api_key="k", base_url=server.url, timeout_s=0.2)
    server.reply(json_body=message_reply(), delay_s=5.0)

    with pytest.raises(ModelCallError) as caught:
        await model.send(REQUEST)
    await model.aclose()

    assert caught.value.error_kind == "network"
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)


async def test_surrogates_in_provider_text_become_replacement_chars(server, anthropic) -> None:
    """Lone surrogates in text and tool input become U+FFFD."""
    body = (
        b'{"type":"message","stop_reason":"tool_use","content":[{"type":"text","text":"x\\udc00"},'
        b'{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"\\ud801"}}]}'
    )
    server.reply(body=body, headers={"Content-Type": "application/json"})

    reply = await anthropic.send(REQUEST)

    assert reply.content == "x\ufffd"
    assert reply.tool_calls == (ToolCall(id="t1", name="get_weather", args={"city": "\ufffd"}),)


async def test_non_object_input_is_kept_as_text(server, anthropic) -> None:
    """A tool_use input that is not an object gives args {} and its JSON text in args_text."""
    server.reply(json_body=message_reply(tool_use("t1", "get_weather", ["Oslo"]), stop="tool_use"))

    reply = await anthropic.send(REQUEST)

    assert reply.tool_calls == (
        ToolCall(id="t1", name="get_weather", args={}, args_text='["Oslo"]'),
    )


async def test_borrowed_client_is_used_and_left_open(server) -> None:
    """A borrowed client carries the request and stays open after aclose."""
    async with httpx.AsyncClient() as client:
        model = AnthropicModel(model="claude-test", api_key="k", base_url=server.url, client=client)
        server.reply(json_body=message_reply(text("via borrowed client")))

        reply = await model.send(REQUEST)
        await model.aclose()

        assert reply.content == "via borrowed client"
        assert not client.is_closed
