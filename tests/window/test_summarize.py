"""The summarize-oldest strategy (docs/window.md#summarize-oldest, docs/window.md#folding;
docs/window.md#how-this-is-tested cases 38-41, 43)."""

from __future__ import annotations

import asyncio
import math
from types import SimpleNamespace

import msgspec
import pytest

from afp_runtime.errors import CompactionUnmeasurableError, WindowConfigError
from afp_runtime.messages import Message, ModelReply, ModelRequest, Usage, fingerprint
from afp_runtime.models import ScriptedModel
from afp_runtime.window.folds import (
    FoldedSpan,
    build_summary_message,
    folded_span_for,
    transcript,
)
from afp_runtime.window.records import SummarizeOldestRecord
from afp_runtime.window.stage import visit_window
from afp_runtime.window.strategies import SummarizeOldest, summarize_oldest
from afp_runtime.window.texts import SUMMARIZER_INSTRUCTION, SUMMARY_PREFIX, build_summary_frame
from afp_runtime.window.visit import Billing, BudgetPressure, Eviction, Rebase, Spend
from tests.window._build import TASK, A, R, T, U, cr, ikw, oes, origins, rns, sf, visit, wire

OVER = Usage(input=900, output=5)


class FakeSummarizer:
    """A summarizer double: answers every request with one reply, or raises one error."""

    provider = "fake"

    def __init__(
        self, text: str = "S", usage: Usage | None = None, error: BaseException | None = None
    ) -> None:
        self.reply = ModelReply(content=text, usage=usage or Usage(input=7, output=3))
        self.error = error
        self.requests: list[ModelRequest] = []

    async def send(self, request: ModelRequest) -> ModelReply:
        """Record the request, then raise or reply."""
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return self.reply


def case_38_window() -> list[Message]:
    """``[U "go "*200, A[c1], T c1 "x"*600, A[c2], T c2 "y"*600, A[c3], T c3 "z"*600]``."""
    return [
        U("go " * 200),
        A(["c1"]),
        T("c1", "x" * 600),
        A(["c2"]),
        T("c2", "y" * 600),
        A(["c3"]),
        T("c3", "z" * 600),
    ]


def strategy_with(summarizer: FakeSummarizer, keep: int = 1, **kw: object) -> SummarizeOldest:
    """A summarize-oldest strategy over ``summarizer``, model ``cheap``, threshold 100."""
    return summarize_oldest(
        threshold_tokens=100,
        summarizer=summarizer,
        model="cheap",
        keep_recent_turns=keep,
        **kw,  # type: ignore[arg-type]
    )


def FR(n: int, i: int, model: str = "cheap", retain: str = "conversation") -> str:
    """The summary frame."""
    return build_summary_frame(n, i, model, retain)


class TestCase38:
    """Case 38: a successful fold of turns 0-2."""

    async def test_record(self) -> None:
        """Case 38: the record has the docs/window.md#summarize-oldest fields, values and order."""
        history = case_38_window()
        result = await strategy_with(FakeSummarizer()).plan(
            visit(history, measured=OVER, iteration=3, now_ms=1500)
        )
        assert result is not None
        summary_chars = len(FR(5, 3)) + 3
        data = wire(result.record)
        assert data == {
            "strategy": "summarize-oldest",
            "iteration": 3,
            "measuredTokens": 900,
            "thresholdTokens": 100,
            "overBudget": True,
            "windowCharsBefore": 2400,
            "removedStageIds": [f"writer#{k}" for k in range(5)],
            "removedMessageCount": 5,
            "windowCharsAfter": 600 + summary_chars,
            "summaryChars": summary_chars,
            "summarizerTokens": {"input": 7, "output": 3},
            "refusals": [{"reason": "inside-keep-window", "turnIndex": 3, "messageIndex": 5}],
        }
        assert result.record.refusals == (ikw(3, 5),)

    async def test_result(self) -> None:
        """Case 38: window, rebase, evictions, spend and budget pressure of the fold."""
        history = case_38_window()
        result = await strategy_with(FakeSummarizer()).plan(
            visit(history, measured=OVER, iteration=3, now_ms=1500)
        )
        assert result is not None
        summary = build_summary_message("S", 5, 3, "cheap", "conversation")
        assert summary.content == FR(5, 3) + "\n\nS"
        assert result.window == (summary, *history[5:])
        assert result.rebase == Rebase(head_count=0, kept_tail_count=2, inserted_at_ms=1500)
        assert result.evictions == tuple(Eviction(index=k, survival_ms=500) for k in range(5))
        assert result.spend == Spend(model="cheap", usage=Usage(input=7, output=3))
        assert result.budget_pressure == BudgetPressure(
            cap_tokens=100, projected_tokens=900, plan_action="summarize"
        )
        assert result.warning is None

    async def test_folded_span(self) -> None:
        """Case 38: one FoldedSpan naming the summary, run, instant, model and the 5 messages."""
        history = case_38_window()
        result = await strategy_with(FakeSummarizer()).plan(
            visit(history, measured=OVER, iteration=3, now_ms=1500)
        )
        assert result is not None and result.window is not msgspec.UNSET
        assert result.folded == (
            FoldedSpan(
                summary_fingerprint=fingerprint(result.window[0]),
                run_id="run-1",
                iteration=3,
                folded_at_ms=1500,
                model="cheap",
                message_count=5,
                removed_stage_ids=tuple(f"writer#{k}" for k in range(5)),
                retained="conversation",
                messages=tuple(history[0:5]),
            ),
        )

    async def test_summarizer_saw_the_transcript(self) -> None:
        """Case 38: the summarizer got one request: the instruction and the span's transcript."""
        history = case_38_window()
        summarizer = FakeSummarizer()
        await strategy_with(summarizer).plan(visit(history, measured=OVER, iteration=3))
        assert summarizer.requests == [
            ModelRequest(
                model="cheap",
                system=SUMMARIZER_INSTRUCTION,
                messages=(Message(role="user", content=transcript(history[0:5], history)),),
            )
        ]

    async def test_through_the_stage(self) -> None:
        """Case 38: the stage accepts the fold and stamps ``droppedObservations ["look"]``."""
        history = case_38_window()
        outcome = await visit_window(
            strategy_with(FakeSummarizer()),
            history=history,
            said="no such message",
            measured=OVER,
            iteration=3,
            run_id="run-1",
            agent_model="agent-model",
            provider_name="scripted",
            now_ms=1500,
            origins=origins(len(history)),
            prior=(),
            keep_last_tool_results=False,
        )
        assert outcome is not None
        # The person's message anchors through the stage, so turn 0 stays and turns 1-2 fold.
        assert outcome.record.refusals == (cr(0, 0), ikw(3, 5))
        assert outcome.record.dropped_observations == ("look",)
        assert len(outcome.folded) == 1

    async def test_discard_keeps_no_messages(self) -> None:
        """Under ``retain="discard"`` the span carries no ``messages`` key."""
        history = case_38_window()
        strategy = strategy_with(FakeSummarizer(), retain="discard")
        result = await strategy.plan(visit(history, measured=OVER, iteration=3))
        assert result is not None
        span = result.folded[0]
        assert span.retained == "discard"
        assert span.messages is msgspec.UNSET
        assert "messages" not in wire(span)  # type: ignore[operator]

    async def test_a_reply_without_usage_still_folds(self) -> None:
        """A reply that reports no usage folds, with no summarizerTokens and no spend."""
        summarizer = FakeSummarizer()
        summarizer.reply = ModelReply(content="S", usage=None)
        result = await strategy_with(summarizer).plan(visit(case_38_window(), measured=OVER))
        assert result is not None
        assert result.record.removed_message_count == 5
        assert result.record.summarizer_tokens is msgspec.UNSET  # type: ignore[union-attr]
        assert result.spend is None

    async def test_a_reply_with_non_text_content_fails(self) -> None:
        """A reply whose content is not a str counts as a failed summarizer call."""
        summarizer = FakeSummarizer()
        bad = SimpleNamespace(content=None, usage=Usage(input=1, output=1))
        summarizer.reply = bad  # type: ignore[assignment]
        result = await strategy_with(summarizer).plan(visit(case_38_window(), measured=OVER))
        assert result is not None
        assert result.record.refusals == (sf(0, 0), ikw(3, 5))

    async def test_any_model_adapter_serves(self) -> None:
        """A scripted Model adapter serves as the summarizer as it stands."""
        model = ScriptedModel([ModelReply(content="S", usage=Usage(input=7, output=3))])
        strategy = summarize_oldest(threshold_tokens=100, summarizer=model, model="cheap")
        history = [*case_38_window(), *R("c4"), *R("c5"), *R("c6"), *R("c7"), *R("c8")]
        result = await strategy.plan(visit(history, measured=OVER))
        assert result is not None
        assert result.record.removed_message_count == 5
        assert model.calls == 1


class TestCase39:
    """Case 39: no engagement, a failing summarizer, and the keep depth."""

    @pytest.mark.parametrize("measured", [None, Usage(input=100, output=5)])
    async def test_under_budget_does_not_engage(self, measured: Usage | None) -> None:
        """Case 39: measured None or ``{100, 5}`` returns None without a call."""
        summarizer = FakeSummarizer()
        result = await strategy_with(summarizer).plan(visit(case_38_window(), measured=measured))
        assert result is None
        assert summarizer.requests == []

    async def test_zero_reading_is_unmeasurable(self) -> None:
        """A ``{0, 0}`` reading raises CompactionUnmeasurableError naming the provider."""
        summarizer = FakeSummarizer()
        with pytest.raises(CompactionUnmeasurableError) as caught:
            await strategy_with(summarizer).plan(
                visit(case_38_window(), measured=Usage(input=0, output=0), provider_name="acme")
            )
        assert caught.value.provider == "acme"
        assert summarizer.requests == []

    async def test_summarizer_failure(self) -> None:
        """Case 39: a raising summarizer files ``sf`` first, folds nothing, warns, bills nothing."""
        summarizer = FakeSummarizer(error=RuntimeError("endpoint down"))
        result = await strategy_with(summarizer).plan(visit(case_38_window(), measured=OVER))
        assert result is not None
        record = result.record
        assert isinstance(record, SummarizeOldestRecord)
        assert record.removed_message_count == 0
        assert record.summary_chars == 0
        assert record.refusals == (sf(0, 0), ikw(3, 5))
        assert record.summarizer_tokens is msgspec.UNSET
        assert record.summarizer_skipped is msgspec.UNSET
        assert result.budget_pressure is not None
        assert result.budget_pressure.plan_action == "none"
        assert result.spend is None
        assert result.window is msgspec.UNSET
        assert result.folded == ()
        assert result.warning is not None
        assert "endpoint down" in result.warning
        assert "900" in result.warning and "100" in result.warning

    async def test_failure_is_not_latched(self) -> None:
        """Case 39: after a failure the next visit calls the summarizer again."""
        summarizer = FakeSummarizer(error=RuntimeError("endpoint down"))
        strategy = strategy_with(summarizer)
        await strategy.plan(visit(case_38_window(), measured=OVER))
        await strategy.plan(visit(case_38_window(), measured=OVER, iteration=5))
        assert len(summarizer.requests) == 2
        assert strategy.refused_spans == set()

    async def test_cancellation_propagates(self) -> None:
        """A cancelled summarizer call is not turned into ``summarizer-failed``."""
        summarizer = FakeSummarizer(error=asyncio.CancelledError())
        with pytest.raises(asyncio.CancelledError):
            await strategy_with(summarizer).plan(visit(case_38_window(), measured=OVER))

    async def test_keep_99(self) -> None:
        """Case 39: keep 99 files an over-budget record naming every turn, with no call."""
        summarizer = FakeSummarizer()
        result = await strategy_with(summarizer, keep=99).plan(
            visit(case_38_window(), measured=OVER)
        )
        assert result is not None
        assert result.record.over_budget is True  # type: ignore[union-attr]
        assert result.record.removed_message_count == 0
        assert result.record.refusals == (ikw(0, 0), ikw(1, 1), ikw(2, 3), ikw(3, 5))
        assert summarizer.requests == []


class TestCase40:
    """Case 40: the latch on a span whose summary was not smaller."""

    @staticmethod
    def window() -> list[Message]:
        """``[U go, A[c1], T c1 "x"*50, A[c2], T c2 "y"*50]``."""
        return [U("go"), A(["c1"]), T("c1", "x" * 50), A(["c2"]), T("c2", "y" * 50)]

    async def test_not_smaller_then_skipped_then_asked_again(self) -> None:
        """Case 40: refused and billed, then skipped without a call, then asked on growth."""
        summarizer = FakeSummarizer(text="S" * 5000)
        strategy = strategy_with(summarizer)
        history = self.window()

        first = await strategy.plan(visit(history, measured=OVER, iteration=2))
        assert first is not None
        record = first.record
        assert isinstance(record, SummarizeOldestRecord)
        assert record.removed_message_count == 0
        assert (record.window_chars_before, record.window_chars_after) == (102, 102)
        assert record.summary_chars == len(FR(3, 2)) + 5002
        assert record.summarizer_tokens == Usage(input=7, output=3)
        assert record.refusals == (rns(0, 0), ikw(2, 3))
        assert first.spend == Spend(model="cheap", usage=Usage(input=7, output=3))
        assert first.window is msgspec.UNSET

        second = await strategy.plan(visit(history, measured=OVER, iteration=3))
        assert second is not None
        record = second.record
        assert isinstance(record, SummarizeOldestRecord)
        assert record.summarizer_skipped is True
        assert record.summary_chars == 0
        assert record.summarizer_tokens is msgspec.UNSET
        assert record.refusals == (rns(0, 0), ikw(2, 3))
        assert second.spend is None
        assert len(summarizer.requests) == 1
        assert wire(record)["summarizerSkipped"] is True  # type: ignore[index]

        grown = [*history, A(["c3"]), T("c3", "z" * 50)]
        third = await strategy.plan(visit(grown, measured=OVER, iteration=4))
        assert third is not None
        assert len(summarizer.requests) == 2
        assert summarizer.requests[1].messages[0].content == transcript(grown[0:5], grown)


async def test_case_41_only_an_existing_summary() -> None:
    """Case 41: a span of one existing summary is refused ``oes`` without a call."""
    summary = Message(role="user", content=SUMMARY_PREFIX + " earlier")
    history = [U(TASK), summary, *R("c1")]
    summarizer = FakeSummarizer()
    result = await strategy_with(summarizer).plan(visit(history, anchor=0, measured=OVER))
    assert result is not None
    assert result.record.refusals == (cr(0, 0), oes(1, 1), ikw(2, 2))
    assert result.record.removed_message_count == 0
    assert summarizer.requests == []


async def test_case_43_fold_of_a_fold() -> None:
    """Case 43: a span holding an earlier summary folds; the old span still joins its summary."""
    sum1 = build_summary_message("earlier work", 4, 1, "cheap", "conversation")
    span1 = FoldedSpan(
        summary_fingerprint=fingerprint(sum1),
        run_id="run-0",
        iteration=1,
        folded_at_ms=500,
        model="cheap",
        message_count=4,
        removed_stage_ids=("writer#9",),
        retained="conversation",
        messages=(U("old"), A(["o1"]), T("o1"), A([], "done")),
    )
    history = [
        U(TASK),
        sum1,
        *R("c1", c="x" * 200),
        *R("c2", c="y" * 200),
        *R("c3", c="z" * 200),
    ]
    result = await strategy_with(FakeSummarizer()).plan(visit(history, anchor=0, measured=OVER))
    assert result is not None and result.window is not msgspec.UNSET
    assert result.record.removed_message_count == 5
    new_span = result.folded[0]
    assert new_span.messages is not msgspec.UNSET
    assert new_span.messages[0] == sum1
    conversation = {"folded": [span1, new_span]}
    assert folded_span_for(conversation, sum1) == span1
    assert folded_span_for(conversation, result.window[1]) == new_span


class TestFactory:
    """``summarize_oldest`` options (docs/window.md#built-in-strategies,
    docs/window.md#definition-time-validation)."""

    def test_defaults_and_billing(self) -> None:
        """Defaults are keep 6 and retain conversation; billing names the port and model."""
        summarizer = FakeSummarizer()
        strategy = summarize_oldest(threshold_tokens=10, summarizer=summarizer, model="cheap")
        assert strategy.name == "summarize-oldest"
        assert strategy.keep_recent_turns == 6
        assert strategy.retain == "conversation"
        assert strategy.billing == Billing(provider=summarizer, model="cheap")
        assert strategy.refused_spans == set()

    def test_a_plain_summarizer_object_is_accepted(self) -> None:
        """Case 45: an object with a str provider and an async send serves as summarizer."""

        class Plain:
            provider = "mine"

            async def send(self, request: ModelRequest) -> ModelReply:
                return ModelReply(content="x")

        assert summarize_oldest(threshold_tokens=10, summarizer=Plain(), model="m")

    @pytest.mark.parametrize(
        "summarizer",
        [None, "scripted", object(), FakeSummarizer, type("NoSend", (), {"provider": "p"})()],
    )
    def test_a_summarizer_without_send_is_refused(self, summarizer: object) -> None:
        """Case 45: a summarizer lacking a str provider or an async send names ``summarizer``."""
        options: dict[str, object] = {"threshold_tokens": 10, "summarizer": summarizer}
        with pytest.raises(WindowConfigError) as caught:
            summarize_oldest(model="m", **options)  # type: ignore[arg-type]
        assert caught.value.context["factory"] == "summarize_oldest"
        assert caught.value.context["option"] == "summarizer"

    def test_a_sync_send_is_refused(self) -> None:
        """A summarizer whose send is not async is refused."""

        class Sync:
            provider = "sync"

            def send(self, request: ModelRequest) -> ModelReply:
                return ModelReply()

        options: dict[str, object] = {"threshold_tokens": 10, "summarizer": Sync()}
        with pytest.raises(WindowConfigError):
            summarize_oldest(model="m", **options)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("options", "option"),
        [
            ({"summarizer": FakeSummarizer(), "model": "m"}, "threshold_tokens"),
            (
                {"threshold_tokens": math.nan, "summarizer": FakeSummarizer(), "model": "m"},
                "threshold_tokens",
            ),
            (
                {"threshold_tokens": 10**400, "summarizer": FakeSummarizer(), "model": "m"},
                "threshold_tokens",
            ),
            (
                {
                    "threshold_tokens": 10,
                    "summarizer": FakeSummarizer(),
                    "model": "m",
                    "keep_recent_turns": 2**53,
                },
                "keep_recent_turns",
            ),
            ({"threshold_tokens": 10, "model": "m"}, "summarizer"),
            ({"threshold_tokens": 10, "summarizer": FakeSummarizer()}, "model"),
            ({"threshold_tokens": 10, "summarizer": FakeSummarizer(), "model": ""}, "model"),
            ({"threshold_tokens": 10, "summarizer": FakeSummarizer(), "model": 3}, "model"),
            (
                {
                    "threshold_tokens": 10,
                    "summarizer": FakeSummarizer(),
                    "model": "m",
                    "retain": "keep",
                },
                "retain",
            ),
            (
                {
                    "threshold_tokens": 10,
                    "summarizer": FakeSummarizer(),
                    "model": "m",
                    "keep_recent_turns": True,
                },
                "keep_recent_turns",
            ),
        ],
    )
    def test_bad_options_are_refused(self, options: dict[str, object], option: str) -> None:
        """Each missing or invalid option is a WindowConfigError naming factory and option."""
        with pytest.raises(WindowConfigError) as caught:
            summarize_oldest(**options)  # type: ignore[arg-type]
        assert caught.value.context["factory"] == "summarize_oldest"
        assert caught.value.context["option"] == option
