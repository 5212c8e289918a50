"""The extractive summarizer: an offline, deterministic Model adapter that digests a transcript."""

from __future__ import annotations

import math

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.messages import (
    Message,
    ModelReply,
    ModelRequest,
    ToolCall,
    Usage,
    canonical_json,
)
from afp_runtime.models import ExtractiveSummarizer, Model
from afp_runtime.window import summarize_oldest
from afp_runtime.window.folds import transcript
from afp_runtime.window.plan import Guards
from afp_runtime.window.strategies import summarizer_request
from afp_runtime.window.turns import window_chars
from afp_runtime.window.visit import MessageOrigin, WindowVisit


def incident_span() -> list[Message]:
    """A small span: an ask, a call, a result with identifiers, an answer."""
    return [
        Message(
            role="user",
            content="Why did order ORD-4471 fail on 2024-03-02? Check /var/log/pay.log please.",
        ),
        Message(
            role="assistant",
            tool_calls=(
                ToolCall(id="c1", name="grep_logs", args={"path": "/var/log/pay.log", "n": 3}),
            ),
        ),
        Message(
            role="tool",
            content="line 88: ORD-4471 declined code=51 gateway=stripe_eu amount=129.99\n"
            + "unrelated chatter " * 30,
            tool_call_id="c1",
            tool_name="grep_logs",
        ),
        Message(
            role="assistant",
            content="ORD-4471 was declined by the gateway with code 51; our code did not fail.",
        ),
    ]


async def digest_of(span: list[Message]) -> ModelReply:
    """The extractive reply to the summarizer request for ``span``."""
    request = summarizer_request(span, span, "extractive/1")
    return await ExtractiveSummarizer().send(request)


class TestPort:
    """It has the shape of every Model adapter."""

    def test_is_a_model(self) -> None:
        """It satisfies the Model port with its fixed provider, model and encoder names."""
        model = ExtractiveSummarizer()
        assert isinstance(model, Model)
        assert model.provider == "extractive"
        assert model.model == "extractive/1"
        assert model.encoder == "extractive/1"
        assert model.deterministic is True
        assert model.settings() == {}

    def test_encode_is_canonical_and_pure(self) -> None:
        """``encode`` gives the canonical JSON of the request, the same bytes every time."""
        request = summarizer_request(incident_span(), incident_span(), "m")
        model = ExtractiveSummarizer()
        assert model.encode(request).body == canonical_json(request)
        assert model.encode(request) == model.encode(request)

    async def test_encoded_and_plain_requests_answer_alike(self) -> None:
        """Sending the encoded request gives the same reply as sending the request."""
        request = summarizer_request(incident_span(), incident_span(), "m")
        model = ExtractiveSummarizer()
        assert await model.send(model.encode(request)) == await model.send(request)
        assert model.calls == 2

    async def test_on_delta_gets_the_text(self) -> None:
        """``on_delta`` receives the whole digest as one fragment."""
        seen: list[str] = []
        request = summarizer_request(incident_span(), incident_span(), "m")
        reply = await ExtractiveSummarizer().send(request, on_delta=lambda d: seen.append(d.text))
        assert seen == [reply.content]

    async def test_aclose_is_a_no_op(self) -> None:
        """Closing releases nothing and the model still answers afterwards."""
        model = ExtractiveSummarizer()
        await model.aclose()
        assert (await model.send(ModelRequest(model="m"))).content == ""


class TestDigest:
    """What the digest keeps, and its size and usage."""

    async def test_keeps_asks_calls_identifiers_and_answers(self) -> None:
        """The ask, the call as ``name(args)``, the result's ids and numbers, the answer stay."""
        reply = await digest_of(incident_span())
        text = reply.content
        assert "Why did order ORD-4471 fail" in text
        assert 'grep_logs({"path":"/var/log/pay.log","n":3})' in text
        for key in ("ORD-4471", "51", "stripe_eu", "129.99"):
            assert key in text
        assert "unrelated chatter" not in text
        assert "declined by the gateway" in text
        assert reply.stop_reason == "end"

    async def test_much_shorter_than_the_span(self) -> None:
        """For a long span the digest is at most half the span's chars."""
        span = incident_span()
        reply = await digest_of(span)
        assert len(reply.content) <= window_chars(span) // 2

    async def test_usage_is_a_quarter_of_the_chars(self) -> None:
        """Usage is ceil(chars / 4) of the request's text (input) and of the digest (output)."""
        request = summarizer_request(incident_span(), incident_span(), "m")
        reply = await ExtractiveSummarizer().send(request)
        sent = len(request.system) + sum(len(m.content) for m in request.messages)
        assert reply.usage == Usage(
            input=math.ceil(sent / 4), output=math.ceil(len(reply.content) / 4)
        )

    async def test_fences_are_not_content(self) -> None:
        """The fence lines are not digested as messages."""
        reply = await digest_of(incident_span())
        first_line = transcript(incident_span(), incident_span()).split("\n")[0]
        assert first_line not in reply.content
        assert reply.content.startswith("Digest of 4 messages")

    async def test_embedded_newlines_stay_with_their_message(self) -> None:
        """A message whose content holds newlines is one message of the digest."""
        span = [Message(role="user", content="first line\nsecond line with ID-77\nthird")]
        reply = await digest_of(span)
        assert reply.content.startswith("Digest of 1 messages")
        assert "ID-77" in reply.content

    async def test_plain_text_without_a_transcript(self) -> None:
        """A request with no transcript shape is digested as one text."""
        request = ModelRequest(model="m", messages=(Message(role="user", content="just notes"),))
        reply = await ExtractiveSummarizer().send(request)
        assert "just notes" in reply.content

    async def test_unnamed_and_keyless_results_are_clipped(self) -> None:
        """A result with no identifiers or numbers is quoted, clipped."""
        span = [
            Message(role="assistant", tool_calls=(ToolCall(id="c1", name="read"),)),
            Message(role="tool", content="all quiet " * 80, tool_call_id="c1"),
        ]
        reply = await digest_of(span)
        assert "read returned: all quiet" in reply.content
        assert len(reply.content) < window_chars(span)

    async def test_folds_through_summarize_oldest(self) -> None:
        """As the summarizer of summarize-oldest it folds a long span into a smaller summary."""
        history = [m for _ in range(4) for m in incident_span()]
        strategy = summarize_oldest(
            threshold_tokens=10,
            summarizer=ExtractiveSummarizer(),
            model="extractive/1",
            keep_recent_turns=2,
        )
        visit = WindowVisit(
            history=history,
            measured=Usage(input=500, output=1),
            iteration=2,
            run_id="run-1",
            agent_model="agent",
            provider_name="scripted",
            now_ms=10,
            guards=Guards(answered_call_ids=frozenset({"c1"})),
            origins=[MessageOrigin(stage_id="s", born_at_ms=0)] * len(history),
        )
        result = await strategy.plan(visit)
        assert result is not None
        assert result.record.removed_message_count > 0
        assert result.window is not msgspec.UNSET
        assert window_chars(result.window) < window_chars(history)
        assert "ORD-4471" in result.window[0].content


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20)
contents = st.text(max_size=400)
long_texts = st.text(min_size=401, max_size=1200)


@st.composite
def spans(draw: st.DrawFn) -> list[Message]:
    """Spans of person asks, assistant remarks and calls, and tool results."""
    out: list[Message] = []
    for index in range(draw(st.integers(min_value=1, max_value=10))):
        kind = draw(st.sampled_from(["user", "assistant", "call", "tool"]))
        if kind == "call":
            args = draw(st.dictionaries(names, st.integers() | names, max_size=3))
            call = ToolCall(id=f"c{index}", name=draw(names), args=args)
            out.append(Message(role="assistant", content=draw(contents), tool_calls=(call,)))
        elif kind == "tool":
            out.append(
                Message(
                    role="tool",
                    content=draw(contents),
                    tool_call_id=f"c{index}",
                    tool_name=draw(st.none() | names),
                )
            )
        else:
            out.append(
                Message(role="user" if kind == "user" else "assistant", content=draw(contents))
            )
    # One long message, anywhere, so that the span is always over 400 chars.
    bulk = Message(role="user" if draw(st.booleans()) else "assistant", content=draw(long_texts))
    out.insert(draw(st.integers(min_value=0, max_value=len(out))), bulk)
    return out


@settings(max_examples=150, deadline=None)
@given(span=spans())
async def test_digest_is_deterministic_and_shorter(span: list[Message]) -> None:
    """For spans over 400 chars the digest is deterministic and shorter than the span."""
    first = await digest_of(span)
    second = await digest_of(span)
    assert first == second
    assert len(first.content) < window_chars(span)
