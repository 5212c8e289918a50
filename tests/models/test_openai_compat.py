"""The OpenAI-compatible adapter against a real local HTTP server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from afp_runtime.errors import ConfigError, ModelCallError
from afp_runtime.messages import (
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
from afp_runtime.models import Model, OpenAICompatModel, RetryPolicy, send_with_retries

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
    model="gpt-test",
    system="You are terse.",
    messages=(user("Weather in Oslo?"),),
    tools=(WEATHER,),
)


def chat_reply(
    content: str | None = "ok",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str | None = "stop",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A chat-completions response body as OpenAI shapes it."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def wire_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One tool call of a chat-completions response."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


async def no_sleep(seconds: float) -> None:
    """A sleep that must never be reached."""
    raise AssertionError(f"unexpected retry wait of {seconds} s")


async def test_tool_call_round_trip(server, openai: OpenAICompatModel) -> None:
    """A tool call goes out in OpenAI's shape, decodes to a ToolCall, and its result goes back."""
    server.reply(
        json_body=chat_reply(
            None,
            tool_calls=[wire_call("call_1", "get_weather", '{"city": "Oslo"}')],
            finish="tool_calls",
        )
    )
    server.reply(json_body=chat_reply("It is 4 °C in Oslo."))

    first = await openai.send(REQUEST)

    sent = server.received[0]
    assert sent.method == "POST"
    assert sent.path == "/v1/chat/completions"
    body = sent.json()
    assert body["model"] == "gpt-test"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Oslo?"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather of a city.",
                "parameters": WEATHER.input_schema,
            },
        }
    ]
    assert "tool_choice" not in body
    assert first.tool_calls == (ToolCall(id="call_1", name="get_weather", args={"city": "Oslo"}),)
    assert first.stop_reason == "tool-calls"
    assert first.content == ""

    second_request = ModelRequest(
        model="gpt-test",
        system="You are terse.",
        messages=(
            *REQUEST.messages,
            first.as_message(),
            tool_result("call_1", "get_weather", "4 °C, cloudy"),
        ),
        tools=(WEATHER,),
    )
    second = await openai.send(second_request)

    messages = server.received[1].json()["messages"]
    assert messages[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
            }
        ],
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "4 °C, cloudy"}
    assert second.content == "It is 4 °C in Oslo."
    assert second.stop_reason == "end"


async def test_body_received_is_byte_identical_to_encode(server, openai) -> None:
    """The server receives exactly the bytes ``encode`` produced."""
    server.reply(json_body=chat_reply())
    encoded = openai.encode(REQUEST)

    await openai.send(encoded)

    assert server.received[0].body == encoded.body
    assert server.received[0].headers["content-type"] == "application/json"


async def test_send_encodes_a_model_request_first(server, openai) -> None:
    """Given a ModelRequest, ``send`` posts the same bytes as ``encode`` would."""
    server.reply(json_body=chat_reply())

    await openai.send(REQUEST)

    assert server.received[0].body == openai.encode(REQUEST).body


def test_encode_is_deterministic_canonical_json() -> None:
    """Encoding twice gives the same compact bytes with keys sorted at every depth."""
    model = OpenAICompatModel(base_url="http://127.0.0.1:9/v1", model="m")
    first = model.encode(REQUEST).body
    again = model.encode(REQUEST).body
    resorted = json.dumps(
        json.loads(first), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert first == again
    assert first == resorted.encode("utf-8")


async def test_usage_is_mapped(server, openai) -> None:
    """Prompt, completion, cached and reasoning token counts map onto Usage."""
    server.reply(
        json_body=chat_reply(
            usage={
                "prompt_tokens": 120,
                "completion_tokens": 30,
                "total_tokens": 150,
                "prompt_tokens_details": {"cached_tokens": 100},
                "completion_tokens_details": {"reasoning_tokens": 12},
            }
        )
    )

    reply = await openai.send(REQUEST)

    assert reply.usage == Usage(input=120, output=30, cache_read=100, reasoning=12)


async def test_missing_usage_is_none(server, openai) -> None:
    """A reply without usage (some local servers) reports no usage, not a zero reading."""
    server.reply(json_body=chat_reply())

    reply = await openai.send(REQUEST)

    assert reply.usage is None


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("stop", "end"),
        ("tool_calls", "tool-calls"),
        ("length", "max-tokens"),
        ("content_filter", "other"),
        (None, "other"),
    ],
)
async def test_finish_reason_maps_to_stop_reason(server, openai, finish, stop) -> None:
    """Each finish_reason maps to its stop reason, anything unknown to ``other``."""
    server.reply(json_body=chat_reply(finish=finish))

    reply = await openai.send(REQUEST)

    assert reply.stop_reason == stop


async def test_bearer_key_is_sent(server, openai) -> None:
    """The key goes in an ``Authorization: Bearer`` header."""
    server.reply(json_body=chat_reply())

    await openai.send(REQUEST)

    assert server.received[0].headers["authorization"] == "Bearer sk-test"


async def test_no_key_sends_no_authorization(server) -> None:
    """Without a key (Ollama, llama.cpp) no Authorization header is sent."""
    model = OpenAICompatModel(base_url=server.url + "/v1/", model="llama3")
    server.reply(json_body=chat_reply())

    await model.send(REQUEST)
    await model.aclose()

    assert "authorization" not in server.received[0].headers
    assert server.received[0].path == "/v1/chat/completions"


async def test_key_is_read_from_the_named_variable(server, monkeypatch) -> None:
    """``api_key_env`` names the variable the key is read from at construction."""
    monkeypatch.setenv("AFP_TEST_OPENAI_KEY", "sk-from-env")
    model = OpenAICompatModel(
        base_url=server.url + "/v1", model="m", api_key_env="AFP_TEST_OPENAI_KEY"
    )
    monkeypatch.delenv("AFP_TEST_OPENAI_KEY")
    server.reply(json_body=chat_reply())

    await model.send(REQUEST)
    await model.aclose()

    assert server.received[0].headers["authorization"] == "Bearer sk-from-env"


def test_missing_key_variable_is_a_config_error(monkeypatch) -> None:
    """A key variable that is not set is a ConfigError naming it."""
    monkeypatch.delenv("AFP_TEST_MISSING_KEY", raising=False)

    with pytest.raises(ConfigError, match="AFP_TEST_MISSING_KEY"):
        OpenAICompatModel(
            base_url="http://127.0.0.1:9/v1", model="m", api_key_env="AFP_TEST_MISSING_KEY"
        )


@pytest.mark.parametrize("base_url", ["not a url", "ftp://example.com/v1", "http://"])
def test_bad_base_url_is_a_config_error(base_url) -> None:
    """A base URL that is not http(s) with a host is refused at construction."""
    with pytest.raises(ConfigError, match="base_url"):
        OpenAICompatModel(base_url=base_url, model="m")


@pytest.mark.parametrize("arguments", ['{"city": "Os', "[1, 2]", '"Oslo"', ""])
async def test_unparsable_arguments_are_kept_as_text(server, openai, arguments) -> None:
    """Arguments that are not a JSON object give ``args`` {} and the raw text in args_text."""
    server.reply(
        json_body=chat_reply(
            None, tool_calls=[wire_call("c1", "get_weather", arguments)], finish="tool_calls"
        )
    )

    reply = await openai.send(REQUEST)

    assert reply.tool_calls == (
        ToolCall(id="c1", name="get_weather", args={}, args_text=arguments),
    )


def test_args_text_is_resent_verbatim() -> None:
    """A call kept with args_text goes back with exactly the text the model produced."""
    model = OpenAICompatModel(base_url="http://127.0.0.1:9/v1", model="m")
    call = ToolCall(id="c1", name="get_weather", args={}, args_text='{"city": "Os')
    request = ModelRequest(
        model="m",
        messages=(user("hi"), assistant(tool_calls=(call,)), tool_result("c1", "get_weather", "x")),
    )

    messages = json.loads(model.encode(request).body)["messages"]

    assert messages[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Os'


def test_dangling_call_gets_a_synthetic_answer() -> None:
    """An assistant call that no tool message answers is followed by a short synthetic answer."""
    model = OpenAICompatModel(base_url="http://127.0.0.1:9/v1", model="m")
    calls = (
        ToolCall(id="a", name="get_weather", args={"city": "Oslo"}),
        ToolCall(id="b", name="get_weather", args={"city": "Rome"}),
    )
    request = ModelRequest(
        model="m",
        messages=(
            user("weather?"),
            assistant(tool_calls=calls),
            tool_result("b", "get_weather", "20 °C"),
            user("and now?"),
        ),
    )

    messages = json.loads(model.encode(request).body)["messages"]

    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    assert messages[2]["tool_call_id"] == "a"
    assert "no result was recorded" in messages[2]["content"]
    assert messages[3] == {"role": "tool", "tool_call_id": "b", "content": "20 °C"}


def test_a_late_answer_is_moved_next_to_its_call() -> None:
    """An answer separated from its call by another message is sent right after the call."""
    model = OpenAICompatModel(base_url="http://127.0.0.1:9/v1", model="m")
    call = ToolCall(id="a", name="get_weather", args={})
    request = ModelRequest(
        model="m",
        messages=(
            assistant(tool_calls=(call,)),
            user("an interjection"),
            tool_result("a", "get_weather", "sunny"),
        ),
    )

    messages = json.loads(model.encode(request).body)["messages"]

    assert [(m["role"], m["content"]) for m in messages] == [
        ("assistant", None),
        ("tool", "sunny"),
        ("user", "an interjection"),
    ]


def test_params_and_forced_tool_are_encoded() -> None:
    """Sampling params map to their fields and a forced tool to a function tool_choice."""
    model = OpenAICompatModel(base_url="http://127.0.0.1:9/v1", model="m", max_tokens=256)
    request = ModelRequest(
        model="m",
        messages=(user("hi"),),
        tools=(WEATHER,),
        forced="get_weather",
        params=ModelParams(temperature=0.2, top_p=0.9, max_tokens=64, stop=("END",)),
    )

    body = json.loads(model.encode(request).body)

    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["temperature"] == 0.2
    assert body["top_p"] == 0.9
    assert body["max_tokens"] == 64
    assert body["stop"] == ["END"]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice(type="auto"), "auto"),
        (ToolChoice(type="none"), "none"),
        (ToolChoice(type="required"), "required"),
        (
            ToolChoice(type="tool", name="get_weather"),
            {"type": "function", "function": {"name": "get_weather"}},
        ),
    ],
)
def test_tool_choice_param_is_encoded(choice, wire) -> None:
    """``params.tool_choice`` maps onto OpenAI's tool_choice values."""
    model = OpenAICompatModel(base_url="http://127.0.0.1:9/v1", model="m")
    request = ModelRequest(
        model="m", messages=(user("hi"),), tools=(WEATHER,), params=ModelParams(tool_choice=choice)
    )

    assert json.loads(model.encode(request).body)["tool_choice"] == wire


def test_default_max_tokens_and_extra_body_shape_the_body() -> None:
    """The adapter's max_tokens and extra_body fill the body when the request sets neither."""
    model = OpenAICompatModel(
        base_url="http://127.0.0.1:9/v1",
        model="m",
        max_tokens=256,
        extra_body={"seed": 7, "temperature": 1.0},
    )
    plain = json.loads(model.encode(ModelRequest(model="m", messages=(user("hi"),))).body)
    tuned = ModelRequest(model="m", messages=(user("hi"),), params=ModelParams(temperature=0.0))

    assert plain["max_tokens"] == 256
    assert plain["seed"] == 7
    assert plain["temperature"] == 1.0
    assert json.loads(model.encode(tuned).body)["temperature"] == 0.0
    assert "tools" not in plain


@pytest.mark.parametrize("key", ["messages", "model", "stream", "tools", "tool_choice"])
def test_extra_body_may_not_set_reserved_keys(key) -> None:
    """extra_body keys the adapter writes itself are refused at construction."""
    with pytest.raises(ConfigError, match=key):
        OpenAICompatModel(base_url="http://127.0.0.1:9/v1", model="m", extra_body={key: 1})


def test_extra_body_must_encode_as_json() -> None:
    """An extra_body value JSON cannot carry is refused at construction."""
    with pytest.raises(ConfigError, match="extra_body"):
        OpenAICompatModel(base_url="http://127.0.0.1:9/v1", model="m", extra_body={"x": object()})


def test_settings_hold_no_credentials_or_url() -> None:
    """settings() holds the body-shaping values only, never the key or the base URL."""
    model = OpenAICompatModel(
        base_url="http://secret-host:1/v1",
        model="m",
        api_key="sk-secret",
        max_tokens=100,
        extra_body={"seed": 1},
    )

    settings = model.settings()

    assert settings == {"maxTokens": 100, "extraBody": {"seed": 1}}
    assert "sk-secret" not in repr(model)
    assert isinstance(model, Model)
    assert (model.provider, model.encoder, model.deterministic) == (
        "openai-compatible",
        "openai-chat/1",
        True,
    )


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "bad-request"),
        (401, "auth"),
        (403, "auth"),
        (404, "bad-request"),
        (408, "bad-request"),
        (409, "bad-request"),
        (413, "bad-request"),
        (422, "bad-request"),
    ],
)
async def test_client_errors_are_not_retried(server, openai, status, kind) -> None:
    """A 4xx other than 429 fails at once with its kind; the server sees one request."""
    server.reply(
        status,
        json_body={"error": {"message": "nope", "type": "invalid_request_error", "code": None}},
    )

    with pytest.raises(ModelCallError) as caught:
        await send_with_retries(
            openai,
            openai.encode(REQUEST),
            sleep=no_sleep,
            random=lambda: 0.5,
            policy=RetryPolicy(),
        )

    assert caught.value.error_kind == kind
    assert caught.value.status == status
    assert caught.value.retryable is False
    assert "openai-compatible" in str(caught.value)
    assert "nope" in str(caught.value)
    assert len(server.received) == 1


@pytest.mark.parametrize(
    "error_body",
    [
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you "
            "requested 5000 tokens.",
            "type": "BadRequestError",
            "code": 400,
        },
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size",
                "type": "exceed_context_size_error",
            }
        },
    ],
    ids=["openai", "vllm", "llama.cpp"],
)
async def test_context_overflow_is_context_length(server, openai, error_body) -> None:
    """A vendor's context-overflow error is ``context-length`` and is not retried."""
    server.reply(400, json_body=error_body)

    with pytest.raises(ModelCallError) as caught:
        await send_with_retries(
            openai,
            openai.encode(REQUEST),
            sleep=no_sleep,
            random=lambda: 0.5,
            policy=RetryPolicy(),
        )

    assert caught.value.error_kind == "context-length"
    assert caught.value.retryable is False
    assert len(server.received) == 1


async def test_malformed_json_is_a_bad_response(server, openai) -> None:
    """A 2xx body that is not JSON is a retryable ``bad-response`` naming the provider."""
    server.reply(200, body=b'{"choices": [', headers={"Content-Type": "application/json"})

    with pytest.raises(ModelCallError) as caught:
        await openai.send(REQUEST)

    assert caught.value.error_kind == "bad-response"
    assert caught.value.retryable is True
    assert caught.value.status == 200
    assert str(caught.value).startswith("openai-compatible: ")
    assert "not valid JSON" in str(caught.value)


async def test_absurdly_nested_json_is_a_bad_response(server, openai) -> None:
    """A body nested beyond the decoder's depth is a ``bad-response``, not a crash."""
    server.reply(200, body=b"[" * 50_000 + b"]" * 50_000)

    with pytest.raises(ModelCallError, match="nested too deeply") as caught:
        await openai.send(REQUEST)

    assert caught.value.error_kind == "bad-response"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"choices": []}, "choices[0]"),
        ([1, 2], "not a JSON object"),
        ({"choices": [{"message": {"content": 5}}]}, "content"),
        ({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}, "name"),
        ({"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": -1}}, "usage"),
        pytest.param(
            {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 10**20}},
            "usage.prompt_tokens",
            id="count-beyond-2**53",
        ),
    ],
)
async def test_wrong_shape_is_a_bad_response(server, openai, body, says) -> None:
    """Valid JSON in the wrong shape is a ``bad-response`` saying what is wrong."""
    server.reply(json_body=body)

    with pytest.raises(ModelCallError) as caught:
        await openai.send(REQUEST)

    assert caught.value.error_kind == "bad-response"
    assert "openai-compatible" in str(caught.value)
    assert says in str(caught.value)


async def test_error_body_with_2xx_is_a_bad_response_quoting_it(server, openai) -> None:
    """A 2xx carrying an error object is a ``bad-response`` that quotes the vendor's message."""
    server.reply(json_body={"error": {"message": "upstream exploded"}})

    with pytest.raises(ModelCallError, match="upstream exploded") as caught:
        await openai.send(REQUEST)

    assert caught.value.error_kind == "bad-response"


async def test_truncated_body_is_a_network_error(server, openai) -> None:
    """A body cut short of its Content-Length is a retryable ``network`` error."""
    server.reply(json_body=chat_reply("this reply is cut"), truncated=True)

    with pytest.raises(ModelCallError) as caught:
        await openai.send(REQUEST)

    assert caught.value.error_kind == "network"
    assert caught.value.retryable is True
    assert "openai-compatible" in str(caught.value)
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)


async def test_read_timeout_is_a_network_error(server) -> None:
    """A server slower than the read timeout gives a retryable ``network`` error."""
    model = OpenAICompatModel(base_url=server.url + "/v1", model="m", timeout_s=0.2)
    server.reply(json_body=chat_reply(), delay_s=5.0)

    with pytest.raises(ModelCallError) as caught:
        await model.send(REQUEST)
    await model.aclose()

    assert caught.value.error_kind == "network"
    assert caught.value.retryable is True
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)


async def test_refused_connection_is_a_network_error() -> None:
    """Nothing listening on the port gives a retryable ``network`` error."""
    model = OpenAICompatModel(base_url="http://127.0.0.1:1/v1", model="m")

    with pytest.raises(ModelCallError) as caught:
        await model.send(REQUEST)
    await model.aclose()

    assert caught.value.error_kind == "network"
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


async def test_redirect_is_a_bad_request(server, openai) -> None:
    """A redirect (a wrong base URL) is not followed and fails as ``bad-request``."""
    server.reply(307, headers={"Location": "https://elsewhere.example/v1/chat/completions"})

    with pytest.raises(ModelCallError, match="elsewhere") as caught:
        await openai.send(REQUEST)

    assert caught.value.error_kind == "bad-request"
    assert caught.value.retryable is False


async def test_surrogates_in_provider_text_become_replacement_chars(server, openai) -> None:
    """Lone surrogates in the reply text, call name and arguments become U+FFFD."""
    body = (
        b'{"choices":[{"finish_reason":"tool_calls","message":{"content":"a\\ud800b",'
        b'"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather",'
        b'"arguments":"{\\"city\\": \\"O\\\\udfffslo\\"}"}}]}}]}'
    )
    server.reply(body=body, headers={"Content-Type": "application/json"})

    reply = await openai.send(REQUEST)

    assert reply.content == "a\ufffdb"
    assert reply.tool_calls[0].args == {"city": "O\ufffdslo"}
    assert reply.as_message().content == "a\ufffdb"


async def test_invalid_utf8_in_provider_text_becomes_replacement_chars(server, openai) -> None:
    """Bytes that are not UTF-8 (an encoded surrogate) decode to U+FFFD, not an error."""
    body = b'{"choices":[{"finish_reason":"stop","message":{"content":"a\xed\xa0\x80b"}}]}'
    server.reply(body=body, headers={"Content-Type": "application/json"})

    reply = await openai.send(REQUEST)

    assert reply.content.startswith("a\ufffd")
    assert reply.content.endswith("b")
    assert not any("\ud800" <= ch <= "\udfff" for ch in reply.content)


async def test_on_delta_receives_the_reply_text(server, openai) -> None:
    """Without streaming, on_delta receives the whole reply text once."""
    server.reply(json_body=chat_reply("hello there"))
    tokens: list[str] = []

    await openai.send(REQUEST, on_delta=lambda d: tokens.append(d.text))

    assert tokens == ["hello there"]


async def test_aclose_closes_only_an_owned_client(server) -> None:
    """aclose leaves a borrowed client open; an adapter closed after its own client's use
    sends again with a new one (an agent reused by a later ``afp.open`` block)."""
    server.reply(json_body=chat_reply("one"))
    server.reply(json_body=chat_reply("two"))
    owned = OpenAICompatModel(base_url=server.url + "/v1", model="m")
    borrowed_client = httpx.AsyncClient()
    borrowed = OpenAICompatModel(base_url=server.url + "/v1", model="m", client=borrowed_client)

    assert (await owned.send(REQUEST)).content == "one"
    await owned.aclose()
    await borrowed.aclose()

    assert not borrowed_client.is_closed
    assert (await owned.send(REQUEST)).content == "two"
    await owned.aclose()
    await borrowed_client.aclose()


async def test_client_and_transport_together_are_refused() -> None:
    """Giving both a client and a transport is a ConfigError."""
    async with httpx.AsyncClient() as client:
        with pytest.raises(ConfigError, match="not both"):
            OpenAICompatModel(
                base_url="http://127.0.0.1:9/v1",
                model="m",
                client=client,
                transport=httpx.MockTransport(lambda request: httpx.Response(200)),
            )
