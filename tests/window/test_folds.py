"""Folding values: the summary message, the transcript, the latch key and the joins (docs/window.md
docs/window.md#folding; docs/window.md#how-this-is-tested cases 42 and 44)."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import msgspec

from afp_runtime.messages import Message, ToolCall, fingerprint
from afp_runtime.window.folds import (
    FoldedSpan,
    build_summary_message,
    folded_messages,
    folded_span_for,
    is_compacted_summary,
    is_foreign,
    span_key,
    transcript,
)
from afp_runtime.window.texts import (
    SUMMARY_PREFIX,
    TRANSCRIPT_BEGIN,
    TRANSCRIPT_END,
    TRANSCRIPT_UNNAMED_TOOL,
    build_summary_frame,
)
from tests.window._build import TASK, A, R, T, U


def span_of(summary: Message, held: tuple[Message, ...], **kw: object) -> FoldedSpan:
    """A retained span whose summary is ``summary``, holding ``held``."""
    fields: dict[str, object] = {
        "summary_fingerprint": fingerprint(summary),
        "run_id": "run-1",
        "iteration": 2,
        "folded_at_ms": 1500,
        "model": "cheap",
        "message_count": len(held),
        "removed_stage_ids": ("writer#0",),
        "retained": "conversation",
        "messages": held,
    }
    fields.update(kw)
    return FoldedSpan(**fields)  # type: ignore[arg-type]


class TestSummaryMessage:
    """The summary message and its look (docs/window.md#the-summary-message)."""

    def test_frame_blank_line_then_text_verbatim(self) -> None:
        """The content is the frame, a blank line, then the text exactly as given."""
        text = "  keeps  spacing\nand lines  "
        message = build_summary_message(text, 3, 2, "m", "discard")
        assert message.role == "user"
        assert message.content == build_summary_frame(3, 2, "m", "discard") + "\n\n" + text

    def test_looks_like_a_summary(self) -> None:
        """Only a user message opening with the summary prefix looks like a summary."""
        message = build_summary_message("t", 3, 2, "m", "conversation")
        assert is_compacted_summary(message)
        assert not is_compacted_summary(U(TASK))
        assert not is_compacted_summary(A([], SUMMARY_PREFIX))


class TestTranscript:
    """Case 42 (transcript part): fences, one line per span message, compact JSON args."""

    def test_structure(self) -> None:
        """Case 42: fences first and last, one line per span message, no kept turn."""
        kept = U("KEPT-TURN-MARKER")
        call = Message(
            role="assistant",
            content="checking",
            tool_calls=(ToolCall(id="c1", name="look", args={"q": "ä b", "n": [1, 2]}),),
        )
        span = [U("first ask"), call, T("c1", "found 42")]
        history = [*span, kept]
        text = transcript(span, history)
        lines = text.split("\n")
        assert lines[0] == TRANSCRIPT_BEGIN
        assert lines[-1] == TRANSCRIPT_END
        assert len(lines) == len(span) + 2
        assert "KEPT-TURN-MARKER" not in text
        assert 'look({"q":"ä b","n":[1,2]})' in lines[2]
        assert lines[2].endswith("checking")
        assert lines[1].endswith("first ask")
        assert "look" in lines[3] and lines[3].endswith("found 42")

    def test_content_is_verbatim_with_its_newlines(self) -> None:
        """A message's embedded newlines are kept in its transcript line."""
        span = [U("line one\nline two")]
        text = transcript(span, span)
        assert "line one\nline two" in text
        assert text.count("\n") == 3

    def test_tool_names_come_from_the_context(self) -> None:
        """A result without ``tool_name`` is labelled with its call's name from the context."""
        call = A(["c7"], names=["fetch"])
        span = [T("c7", "ok", name=None)]
        assert "fetch" in transcript(span, [call, *span])
        assert TRANSCRIPT_UNNAMED_TOOL in transcript(span, span)

    def test_roles_are_labelled(self) -> None:
        """Each message line names its role, so lines of person and assistant differ."""
        span = [U("same"), A([], "same")]
        lines = transcript(span, span).split("\n")
        assert lines[1] != lines[2]
        assert "user" in lines[1] and "assistant" in lines[2]


class TestSpanKey:
    """The latch key (docs/window.md#the-latch)."""

    def test_definition(self) -> None:
        """The key is SHA-256 over the members' fingerprints joined by newlines."""
        span = [U("a"), *R("c1")]
        joined = "\n".join(fingerprint(m) for m in span)
        assert span_key(span) == hashlib.sha256(joined.encode("ascii")).hexdigest()

    def test_any_change_is_a_new_key(self) -> None:
        """A span that grew, shrank or changed in one message has another key."""
        span = [U("a"), *R("c1")]
        assert span_key(span) != span_key([*span, U("b")])
        assert span_key(span) != span_key(span[:2])
        assert span_key(span) != span_key([U("a "), *R("c1")])
        assert span_key(span) == span_key(list(span))

    def test_markers_do_not_change_the_key(self) -> None:
        """Markers are not part of a fingerprint, so they do not change the key."""
        plain = [T("c1", "ok")]
        marked = [
            Message(
                role="tool", content="ok", tool_call_id="c1", tool_name="look", not_dispatched=True
            )
        ]
        assert span_key(plain) == span_key(marked)


class TestJoins:
    """Case 44: ``folded_span_for`` and ``folded_messages``."""

    @staticmethod
    def conversation(*, foreign_first: bool = False) -> tuple[object, list[Message]]:
        """A conversation with two afp folds (and optionally a foreign span first)."""
        sum_a = build_summary_message("alpha", 2, 2, "cheap", "conversation")
        sum_b = build_summary_message("beta", 3, 5, "cheap", "discard")
        spans = [
            span_of(sum_a, (U("a1"), A([], "a2"))),
            span_of(sum_b, (), retained="discard", messages=msgspec.UNSET, message_count=3),
        ]
        if foreign_first:
            foreign = span_of(
                sum_a,
                tuple(U(f"f{k}") for k in range(6)),
                summary_fingerprint="d0472e28",
            )
            spans.insert(0, foreign)
        return SimpleNamespace(folded=spans), [sum_a, sum_b]

    def check_joins(self, conversation: object, summaries: list[Message]) -> None:
        """Every summary finds its afp span; look-alikes and ordinary messages find nothing."""
        sum_a, sum_b = summaries
        found_a = folded_span_for(conversation, sum_a)
        found_b = folded_span_for(conversation, sum_b)
        assert found_a is not None and found_a.summary_fingerprint == fingerprint(sum_a)
        assert found_b is not None and found_b.summary_fingerprint == fingerprint(sum_b)
        assert not is_foreign(found_a) and not is_foreign(found_b)
        assert folded_span_for(conversation, U(TASK)) is None
        other_body = build_summary_message("gamma", 2, 2, "cheap", "conversation")
        assert folded_span_for(conversation, other_body) is None
        padded = Message(role="user", content=sum_a.content + " ")
        assert folded_span_for(conversation, padded) is None

    def test_every_summary_joins_its_span(self) -> None:
        """Case 44: each summary joins its span; other messages join nothing."""
        conversation, summaries = self.conversation()
        self.check_joins(conversation, summaries)

    def test_identical_summaries_join_the_newest_fold(self) -> None:
        """Two folds that wrote byte-identical summaries (in two runs) share a fingerprint: the
        summary joins the newer span, whose originals are the ones it stands for."""
        summary = build_summary_message("same words", 2, 2, "cheap", "conversation")
        older = span_of(summary, (U("april 1"), A([], "april 2")))
        newer = span_of(summary, (U("july 1"), A([], "july 2")))
        found = folded_span_for(SimpleNamespace(folded=[older, newer]), summary)
        assert found is newer

    def test_no_folded_means_no_join(self) -> None:
        """Case 44: a conversation with no ``folded`` joins nothing and has no folded messages."""
        summary = build_summary_message("alpha", 2, 2, "cheap", "conversation")
        conversations: tuple[object, ...] = (
            SimpleNamespace(),
            SimpleNamespace(folded=None),
            SimpleNamespace(folded=msgspec.UNSET),
            SimpleNamespace(folded=[]),
            {},
            {"folded": []},
        )
        for conversation in conversations:
            assert folded_span_for(conversation, summary) is None
            assert folded_messages(conversation) == ()

    def test_folded_messages_oldest_first_discard_adds_nothing(self) -> None:
        """``folded_messages`` concatenates retained spans; a discarded span adds nothing."""
        conversation, _ = self.conversation()
        assert folded_messages(conversation) == (U("a1"), A([], "a2"))

    def test_foreign_span_first(self) -> None:
        """Case 44: a foreign span first changes no join and leads ``folded_messages``."""
        conversation, summaries = self.conversation(foreign_first=True)
        self.check_joins(conversation, summaries)
        found = folded_span_for(conversation, summaries[0])
        assert found is not None and found.summary_fingerprint != "d0472e28"
        messages = folded_messages(conversation)
        assert messages[:6] == tuple(U(f"f{k}") for k in range(6))
        assert messages[6:] == (U("a1"), A([], "a2"))

    def test_mapping_conversations_join_too(self) -> None:
        """A mapping with a ``folded`` key joins like an object with that attribute."""
        conversation, summaries = self.conversation()
        as_mapping = {"folded": conversation.folded}  # type: ignore[attr-defined]
        self.check_joins(as_mapping, summaries)


def test_foreign_is_anything_but_64_lower_case_hex() -> None:
    """A span is foreign unless its summary fingerprint is exactly 64 lower-case hex digits."""
    summary = U("x")
    assert not is_foreign(span_of(summary, ()))
    for other in ("d0472e28", "A" * 64, "a" * 63, "a" * 65, "g" * 64, " " + "a" * 63):
        assert is_foreign(span_of(summary, (), summary_fingerprint=other))
