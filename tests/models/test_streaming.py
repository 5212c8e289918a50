"""Streamed replies of both HTTP adapters against a local server speaking each provider's
server-sent events: the request as sent, the fragments as they arrive, and a reply equal to the
one the same answer gives unstreamed, whatever the chunk boundaries (hypothesis)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_runtime.agents import load_agents
from afp_runtime.errors import ConfigError
from afp_runtime.messages import ModelReply, ModelRequest, ToolCall, Usage, user
from afp_runtime.models import AnthropicModel, OpenAICompatModel, ReplyDelta, encoder_for
from afp_runtime.models._http import HttpModel
from afp_runtime.models._http_reading import scrub
from tests.models._sse_wire import Split, anthropic_events, cut, openai_events, sse

REQUEST = ModelRequest(model="m", system="Be brief.", messages=(user("Weather in Oslo?"),))


def streamed_openai(url: str, *, stream: bool = True, **kw: Any) -> OpenAICompatModel:
    return OpenAICompatModel(base_url=url + "/v1", model="m", api_key="k", stream=stream, **kw)


def streamed_anthropic(url: str, *, stream: bool = True, **kw: Any) -> AnthropicModel:
    return AnthropicModel(model="m", api_key="k", base_url=url, stream=stream, **kw)


def openai_body(
    content: str | None,
    calls: list[dict[str, Any]] | None = None,
    finish: str | None = "stop",
    usage: dict[str, Any] | None = None,
    refusal: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    if refusal is not None:
        message["refusal"] = refusal
    body: dict[str, Any] = {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return body


async def both_ways(
    server: Any,
    make: Callable[..., HttpModel],
    body: dict[str, Any],
    chunks: list[bytes],
    client: httpx.AsyncClient | None = None,
) -> tuple[ModelReply, ModelReply, list[ReplyDelta]]:
    """The reply unstreamed (``body`` as JSON) and streamed (``chunks``), and the fragments
    (through ``client`` when given: a new client costs more than the calls)."""
    plain = make(server.url, stream=False, client=client)
    streamed = make(server.url, client=client)
    deltas: list[ReplyDelta] = []
    try:
        server.reply(json_body=body)
        server.stream(chunks)
        whole = await plain.send(REQUEST)
        assembled = await streamed.send(REQUEST, on_delta=deltas.append)
    finally:
        await plain.aclose()
        await streamed.aclose()
    return whole, assembled, deltas


def joined_arguments(deltas: list[ReplyDelta], index: int) -> str:
    return "".join(d.arguments for d in deltas if d.tool_call_index == index)


# --- what is sent ------------------------------------------------------------------------------


async def test_openai_streamed_request_asks_for_a_stream_with_usage(server) -> None:
    """The body says ``stream: true`` with ``stream_options.include_usage``; the bytes received
    are exactly ``encode``'s; settings and encoder name the streaming."""
    model = streamed_openai(server.url)
    server.stream([sse(openai_events(openai_body("hi")))])
    encoded = model.encode(REQUEST)
    try:
        await model.send(encoded)
    finally:
        await model.aclose()
    [sent] = server.received
    assert sent.body == encoded.body
    assert sent.json()["stream"] is True
    assert sent.json()["stream_options"] == {"include_usage": True}
    assert sent.headers["accept"] == "text/event-stream"
    assert model.settings() == {"stream": True}
    assert model.encoder == "openai-chat-stream/1"
    plain = OpenAICompatModel(base_url=server.url, model="m")
    assert "stream" not in json.loads(plain.encode(REQUEST).body)
    assert (plain.settings(), plain.encoder) == ({}, "openai-chat/1")


async def test_anthropic_streamed_request_asks_for_a_stream(server) -> None:
    model = streamed_anthropic(server.url)
    encoded = model.encode(REQUEST)
    server.stream([sse(anthropic_events({"content": [{"type": "text", "text": "hi"}]}))])
    try:
        reply = await model.send(encoded)
    finally:
        await model.aclose()
    assert reply.content == "hi"
    [sent] = server.received
    assert sent.body == encoded.body and sent.json()["stream"] is True
    assert model.settings() == {"anthropicVersion": "2023-06-01", "maxTokens": 4096, "stream": True}
    assert model.encoder == "anthropic-messages-stream/1"
    plain = AnthropicModel(model="m", api_key="k")
    assert "stream" not in json.loads(plain.encode(REQUEST).body)
    assert plain.settings() == {"anthropicVersion": "2023-06-01", "maxTokens": 4096}


def test_builtin_encoders_reencode_a_streamed_request_byte_for_byte() -> None:
    """The adapter a conformance check builds for a streamed encoder gives the same bytes and
    the same settings as the streaming adapter that sent them."""
    for sent in (streamed_openai("http://h"), streamed_anthropic("http://h")):
        assert sent.encoder is not None
        again = encoder_for(sent.encoder, "m")
        assert again is not None and again.encoder == sent.encoder
        assert again.settings() == sent.settings()
        assert again.encode(REQUEST).body == sent.encode(REQUEST).body


def test_the_toml_model_table_sets_stream(tmp_path: Path, monkeypatch) -> None:
    """``stream = true`` in an agents file's model table builds a streaming adapter; left out,
    it does not; a value that is not a boolean is refused naming its key."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    path = tmp_path / "agents.toml"
    for provider in ("openai-compatible", "anthropic"):
        built = []
        for line in ("stream = true", ""):
            path.write_text(
                f'[[agents]]\nid = "ops"\n[agents.model]\nprovider = "{provider}"\n'
                f'model = "m"\nbaseUrl = "http://127.0.0.1:9/v1"\n{line}\n'
            )
            [agent] = load_agents(path)
            built.append(agent.model)
        on, off = built
        assert isinstance(on, HttpModel) and isinstance(off, HttpModel)
        assert (on.stream, off.stream) == (True, False)
        assert json.loads(on.encode(REQUEST).body)["stream"] is True
        path.write_text(
            f'[[agents]]\nid = "ops"\n[agents.model]\nprovider = "{provider}"\n'
            'model = "m"\nbaseUrl = "http://127.0.0.1:9/v1"\nstream = "yes"\n'
        )
        with pytest.raises(ConfigError, match=r"stream"):
            load_agents(path)


# --- fragments ---------------------------------------------------------------------------------


async def test_openai_fragments_arrive_text_then_calls(server) -> None:
    """Text fragments in order, then each call's first fragment with its id and name and its
    argument pieces; the reply is the assembled whole."""
    body = openai_body(
        "Let me look.",
        [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "w", "arguments": '{"c": 1}'},
            },
            {"id": "call_b", "type": "function", "function": {"name": "x", "arguments": "{}"}},
        ],
        finish="tool_calls",
        usage={"prompt_tokens": 9, "completion_tokens": 4},
    )
    whole, reply, deltas = await both_ways(
        server, streamed_openai, body, [sse(openai_events(body))]
    )
    assert reply == whole
    assert "".join(d.text for d in deltas) == "Let me look." and len(deltas) > 3
    firsts = [d for d in deltas if d.tool_call_id is not None]
    assert [(d.tool_call_index, d.tool_call_id, d.tool_name) for d in firsts] == [
        (0, "call_a", "w"),
        (1, "call_b", "x"),
    ]
    assert joined_arguments(deltas, 0) == '{"c": 1}' and joined_arguments(deltas, 1) == "{}"
    assert reply.tool_calls[0] == ToolCall(id="call_a", name="w", args={"c": 1})
    assert reply.usage == Usage(input=9, output=4) and reply.stop_reason == "tool-calls"


async def test_openai_call_without_id_gets_one_id_for_fragments_and_reply(server) -> None:
    """A call streamed without an id gets a fresh ``call_`` id on its first fragment, and the
    reply's call has that same id."""
    events = [
        (None, json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"name": "w", "arguments": '{"a"'}}]}}]})),
        (None, json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": ": 2}"}}]}, "finish_reason": "tool_calls"}]})),
        (None, "[DONE]"),
    ]  # fmt: skip
    model = streamed_openai(server.url)
    deltas: list[ReplyDelta] = []
    server.stream([sse(events)])
    try:
        reply = await model.send(REQUEST, on_delta=deltas.append)
    finally:
        await model.aclose()
    [call] = reply.tool_calls
    assert call.id.startswith("call_") and call.args == {"a": 2}
    assert deltas[0].tool_call_id == call.id and deltas[0].tool_name == "w"


async def test_openai_fragments_without_index_are_told_apart_by_id(server) -> None:
    """A server that numbers no fragment: a fragment with a new id starts the next call, one
    without an id continues the last."""

    def chunk(call: dict[str, Any]) -> tuple[None, str]:
        return None, json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})

    events = [
        chunk({"id": "a", "function": {"name": "w", "arguments": '{"x":'}}),
        chunk({"function": {"arguments": " 1}"}}),
        chunk({"id": "b", "function": {"name": "v", "arguments": "{}"}}),
        (None, "[DONE]"),
    ]
    model = streamed_openai(server.url)
    server.stream([sse(events)])
    try:
        reply = await model.send(REQUEST)
    finally:
        await model.aclose()
    assert reply.tool_calls == (
        ToolCall(id="a", name="w", args={"x": 1}),
        ToolCall(id="b", name="v", args={}),
    )


async def test_anthropic_input_cut_short_is_kept_as_args_text(server) -> None:
    """A tool input whose JSON pieces do not parse (the reply hit max_tokens mid-call) stays on
    the reply as ``argsText``, as unparsable OpenAI arguments do, instead of failing the call."""

    def event(name: str, **data: Any) -> tuple[str, str]:
        return name, json.dumps({"type": name, **data})

    head = {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}
    partial = {"type": "input_json_delta", "partial_json": '{"city": "Os'}
    events = [
        event("message_start", message={"content": [], "usage": {"input_tokens": 3}}),
        event("content_block_start", index=0, content_block=head),
        event("content_block_delta", index=0, delta=partial),
        event("content_block_stop", index=0),
        event("message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": 5}),
        event("message_stop"),
    ]
    model = streamed_anthropic(server.url)
    server.stream([sse(events)])
    try:
        reply = await model.send(REQUEST)
    finally:
        await model.aclose()
    assert reply.tool_calls == (
        ToolCall(id="toolu_1", name="w", args={}, args_text='{"city": "Os'),
    )
    assert reply.stop_reason == "max-tokens" and reply.usage == Usage(input=3, output=5)


async def test_anthropic_fragments_arrive_text_then_calls(server) -> None:
    body = {
        "type": "message",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Checking the weather."},
            {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Oslo"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 7},
    }
    whole, reply, deltas = await both_ways(
        server, streamed_anthropic, body, [sse(anthropic_events(body))]
    )
    assert reply == whole
    assert reply.usage == Usage(input=15, output=7, cache_read=5, cache_write=None)
    assert "".join(d.text for d in deltas) == "Checking the weather."
    [first] = [d for d in deltas if d.tool_call_id is not None]
    assert (first.tool_call_index, first.tool_call_id, first.tool_name) == (0, "toolu_1", "w")
    assert json.loads(joined_arguments(deltas, 0)) == {"city": "Oslo"}


async def test_a_json_answer_to_a_streamed_request_is_read_whole(server) -> None:
    """A server that ignores ``stream`` and answers ``application/json`` gives its reply as
    unstreamed, the whole text as one fragment."""
    model = streamed_openai(server.url)
    deltas: list[ReplyDelta] = []
    server.reply(json_body=openai_body("all at once"))
    try:
        reply = await model.send(REQUEST, on_delta=deltas.append)
    finally:
        await model.aclose()
    assert reply.content == "all at once" and deltas == [ReplyDelta(text="all at once")]


# --- any chunking, any reply (hypothesis) -------------------------------------------------------

# Text with multi-byte characters, and lone surrogates (sent as JSON escapes, read as U+FFFD).
TEXT = st.text(
    st.one_of(st.characters(codec="utf-8"), st.sampled_from(["é", "日", "😀", "\ud800", "\n"])),
    max_size=12,
)
KEYS = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=5)
ARGS = st.dictionaries(KEYS, st.one_of(st.integers(), KEYS, st.booleans()), max_size=3)
USAGE_COUNT = st.integers(min_value=0, max_value=10_000)


def interesting_cuts(data: bytes) -> list[int]:
    """Offsets inside a multi-byte UTF-8 character or between ``\\r`` and ``\\n``."""
    inside = [i for i, b in enumerate(data) if 0x80 <= b < 0xC0]
    crlf = [i + 1 for i in range(len(data) - 1) if data[i : i + 2] == b"\r\n"]
    return inside + crlf or [1]


def splitter(draw: Any) -> Split:
    def split(text: str) -> list[str]:
        if not text:
            return [""]
        points = draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=3))
        bounds = [0, *sorted(set(points)), len(text)]
        return [text[a:b] for a, b in itertools.pairwise(bounds) if a < b] or [text]

    return split


def chunked(draw: Any, events: list[tuple[str | None, str]]) -> list[bytes]:
    """The events' bytes with line endings and cut points chosen by hypothesis."""
    eol = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1, max_size=3))
    data = sse(events, eol=eol)
    special = interesting_cuts(data)
    offsets = draw(
        st.lists(
            st.one_of(st.integers(1, max(1, len(data) - 1)), st.sampled_from(special)),
            max_size=12,
        )
    )
    return cut(data, offsets)


@st.composite
def openai_case(draw: Any) -> tuple[dict[str, Any], list[bytes]]:
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": draw(st.sampled_from(["w", "lookup_order", "x-y"])),
                "arguments": draw(st.one_of(ARGS.map(json.dumps), TEXT)),
            },
        }
        for i in range(draw(st.integers(0, 2)))
    ]
    usage = draw(
        st.one_of(
            st.none(),
            st.fixed_dictionaries({"prompt_tokens": USAGE_COUNT, "completion_tokens": USAGE_COUNT}),
        )
    )
    body = openai_body(
        draw(st.one_of(st.none(), TEXT)),
        calls,
        finish=draw(st.sampled_from(["stop", "tool_calls", "length", "content_filter", None])),
        usage=usage,
        refusal=draw(st.one_of(st.none(), TEXT)),
    )
    return body, chunked(draw, openai_events(body, splitter(draw)))


@st.composite
def anthropic_case(draw: Any) -> tuple[dict[str, Any], list[bytes]]:
    blocks: list[dict[str, Any]] = []
    for i in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            blocks.append({"type": "text", "text": draw(TEXT)})
        else:
            raw = draw(st.one_of(ARGS, st.lists(st.integers(), max_size=2)))
            blocks.append({"type": "tool_use", "id": f"toolu_{i}", "name": "w", "input": raw})
    usage = draw(
        st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"input_tokens": USAGE_COUNT, "output_tokens": USAGE_COUNT},
                optional={"cache_read_input_tokens": USAGE_COUNT},
            ),
        )
    )
    body: dict[str, Any] = {
        "type": "message",
        "content": blocks,
        "stop_reason": draw(st.sampled_from(["end_turn", "tool_use", "max_tokens", None])),
    }
    if usage is not None:
        body["usage"] = usage
    return body, chunked(draw, anthropic_events(body, splitter(draw)))


@pytest.fixture(name="client")
async def fixture_client() -> AsyncIterator[httpx.AsyncClient]:
    """One client for all of a property's examples."""
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


PROPERTY = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@PROPERTY
@given(case=openai_case())
async def test_openai_streamed_reply_equals_the_unstreamed_one(server, client, case) -> None:
    """Whatever the reply and wherever the byte stream is cut, the assembled reply equals the
    unstreamed one and the fragments join to its text and arguments."""
    body, chunks = case
    whole, reply, deltas = await both_ways(server, streamed_openai, body, chunks, client)
    assert reply == whole
    assert "".join(d.text for d in deltas) == reply.content
    for index, call in enumerate(body["choices"][0]["message"].get("tool_calls") or ()):
        sent = call["function"]["arguments"]
        assert joined_arguments(deltas, index) == scrub(sent)


@PROPERTY
@given(case=anthropic_case())
async def test_anthropic_streamed_reply_equals_the_unstreamed_one(server, client, case) -> None:
    body, chunks = case
    whole, reply, deltas = await both_ways(server, streamed_anthropic, body, chunks, client)
    assert reply == whole
    assert "".join(d.text for d in deltas) == reply.content
    calls = [b for b in body["content"] if b["type"] == "tool_use"]
    assert [d.tool_call_id for d in deltas if d.tool_call_id] == [c["id"] for c in calls]
