"""Result validation of every strategy result (docs/window.md#result-validation;
docs/window.md#how-this-is-tested case 45)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from afp_runtime.errors import WindowStrategyError
from afp_runtime.messages import Message, fingerprint
from afp_runtime.window import (
    CustomRecord,
    Eviction,
    FoldedSpan,
    Rebase,
    Summarizer,
    WindowResult,
    WindowVisit,
)
from afp_runtime.window.refusals import Refusal
from afp_runtime.window.validate import validate_result
from tests.window._build import TASK, Dropper, R, U, run_stage, unset_free, visit

HISTORY = [U(TASK), *R("c1"), *R("c2"), *R("c3")]
NAME = "dropper"


async def dropped(v: WindowVisit) -> WindowResult:
    """The valid result of the dropper (keep 2) for ``v``: turn 1 (messages 1-2) leaves."""
    return await Dropper(keep=2, name=NAME).plan(v)


def replace(result: WindowResult, **changes: Any) -> WindowResult:
    """``result`` with some fields changed."""
    return msgspec.structs.replace(result, **changes)


def rerecord(result: WindowResult, **changes: Any) -> WindowResult:
    """``result`` with some record fields changed."""
    return replace(result, record=msgspec.structs.replace(result.record, **changes))


def field_of(v: WindowVisit, result: object) -> str:
    """The field named by the validation error ``result`` raises (fails if it passes)."""
    with pytest.raises(WindowStrategyError) as caught:
        validate_result(NAME, v, result)
    assert caught.value.strategy == NAME
    assert caught.value.field in str(caught.value)
    return caught.value.field


async def test_case_45_dropper_removing_exactly_the_plan_span_is_accepted() -> None:
    """Case 45: a dropper removing exactly the plan span passes every check."""
    v = visit(HISTORY, anchor=0)
    result = await dropped(v)
    validate_result(NAME, v, result)
    assert unset_free(result.window) == (HISTORY[0], *HISTORY[3:])


async def test_case_45_window_without_rebase() -> None:
    """Case 45: a new window without a rebase is refused naming rebase."""
    v = visit(HISTORY, anchor=0)
    result = replace(await dropped(v), rebase=msgspec.UNSET)
    assert field_of(v, result) == "rebase"


async def test_case_45_removing_the_anchor_turn_is_outside_the_plan() -> None:
    """Case 45: removing the request's turn lies outside the plan span."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    result = WindowResult(
        record=msgspec.structs.replace(
            good.record,
            removed_message_count=3,
            removed_stage_ids=("writer#0", "writer#1", "writer#2"),
            window_chars_after=4,
        ),
        evictions=tuple(Eviction(index=i, survival_ms=1000) for i in range(3)),
        window=tuple(HISTORY[3:]),
        rebase=Rebase(head_count=0, kept_tail_count=4),
    )
    assert field_of(v, result) == "window"


async def test_case_45_record_strategy_must_be_the_name() -> None:
    """Case 45: a record filed under another strategy name is refused."""
    v = visit(HISTORY, anchor=0)
    result = rerecord(await dropped(v), strategy="someone-else")
    assert field_of(v, result) == "record.strategy"


async def test_case_45_wrong_window_chars_after() -> None:
    """Case 45: windowCharsAfter must equal the new window's chars."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    result = rerecord(good, window_chars_after=good.record.window_chars_after + 1)
    assert field_of(v, result) == "record.windowCharsAfter"


def test_case_45_unarmed_visit_has_no_turn_standing() -> None:
    """Case 45: on an unarmed agent the visit carries no standing callable."""
    assert visit(HISTORY).turn_standing is None


class PlainSummarizer:
    """A summarizer with nothing but a provider name and an async send."""

    provider = "plain"

    async def send(self, request: object) -> object:
        """Never called here."""
        raise AssertionError("not called")


class NoSend:
    """Something with a provider name but no send."""

    provider = "plain"


def test_case_45_plain_summarizer_satisfies_the_protocol() -> None:
    """Case 45: a plain object with a str provider and an async send is a Summarizer."""
    assert isinstance(PlainSummarizer(), Summarizer)
    assert not isinstance(NoSend(), Summarizer)


def test_case_45_summarize_oldest_accepts_plain_and_refuses_no_send() -> None:
    """Case 45: summarize_oldest accepts a plain summarizer and refuses one without send."""
    strategies = pytest.importorskip("afp_runtime.window.strategies")
    factory = getattr(strategies, "summarize_oldest", None)
    if factory is None:
        pytest.skip("summarize_oldest is not exported yet")
    from afp_runtime.errors import WindowConfigError

    factory(threshold_tokens=100, summarizer=PlainSummarizer(), model="cheap")
    with pytest.raises(WindowConfigError) as caught:
        factory(threshold_tokens=100, summarizer=NoSend(), model="cheap")
    assert "summarizer" in str(caught.value)


# --- before the checks ---------------------------------------------------------------------


def test_result_must_be_a_window_result() -> None:
    """Anything but a WindowResult is refused naming result."""
    assert field_of(visit(HISTORY), {"record": {}}) == "result"


async def test_custom_extra_keys_may_not_shadow_common_fields() -> None:
    """A custom record's extra may not reuse a common field's wire name."""
    v = visit(HISTORY, anchor=0)
    result = rerecord(await dropped(v), extra={"iteration": 9})
    assert field_of(v, result) == "record.extra"


# --- checks 1-9 ----------------------------------------------------------------------------


async def test_check_1_iteration() -> None:
    """Check 1: the record's iteration is the visit's."""
    v = visit(HISTORY, anchor=0)
    assert field_of(v, rerecord(await dropped(v), iteration=5)) == "record.iteration"


async def test_check_2_rebase_without_window() -> None:
    """Check 2: a rebase without a window is refused naming window."""
    v = visit(HISTORY, anchor=0)
    base = CustomRecord(
        strategy=NAME,
        iteration=4,
        removed_stage_ids=(),
        removed_message_count=0,
        window_chars_before=137,
        window_chars_after=137,
        refusals=(),
    )
    result = WindowResult(record=base, rebase=Rebase(head_count=1, kept_tail_count=4))
    assert field_of(v, result) == "window"


async def test_check_3_the_new_window_must_remove_something() -> None:
    """Check 3: head + tail must leave at least one message out."""
    v = visit(HISTORY, anchor=0)
    result = replace(
        await dropped(v),
        window=tuple(HISTORY),
        rebase=Rebase(head_count=3, kept_tail_count=4),
    )
    assert field_of(v, result) == "rebase"


async def test_check_3_counts_and_insertion_must_agree() -> None:
    """Check 3: the new window's length is head + inserted + tail, insertedAtMs decides."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    stamped = replace(good, rebase=Rebase(head_count=1, kept_tail_count=4, inserted_at_ms=2000))
    assert field_of(v, stamped) == "window"
    window = unset_free(good.window)
    extra = replace(good, window=(window[0], U("added"), *window[1:]))
    assert field_of(v, extra) == "window"


async def test_check_3_head_and_tail_must_be_unchanged() -> None:
    """Check 3: kept messages equal the old ones by fingerprint."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    window = unset_free(good.window)
    edited_head = replace(good, window=(U(TASK + "!"), *window[1:]))
    assert field_of(v, edited_head) == "window"
    edited_tail = replace(good, window=(*window[:-1], U("ok")))
    assert field_of(v, edited_tail) == "window"


async def test_check_3_inserted_message_must_be_user() -> None:
    """Check 3: an inserted message must have role user."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    window = unset_free(good.window)
    inserted = Message(role="assistant", content="x")
    result = replace(
        good,
        window=(window[0], inserted, *window[1:]),
        rebase=Rebase(head_count=1, kept_tail_count=4, inserted_at_ms=2000),
    )
    assert field_of(v, result) == "window"


async def test_check_4_no_plan_no_removal() -> None:
    """Check 4: without a plan obtained this visit nothing may be removed."""
    planned = visit(HISTORY, anchor=0)
    result = await dropped(planned)
    fresh = visit(HISTORY, anchor=0)
    assert field_of(fresh, result) == "window"


async def test_check_4_whole_turns_only() -> None:
    """Check 4: removing half a turn (a call without its result) is refused."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    result = WindowResult(
        record=msgspec.structs.replace(
            good.record,
            removed_message_count=1,
            removed_stage_ids=("writer#1",),
            window_chars_after=good.record.window_chars_before,
        ),
        evictions=(Eviction(index=1, survival_ms=1000),),
        window=(HISTORY[0], *HISTORY[2:]),
        rebase=Rebase(head_count=1, kept_tail_count=5),
    )
    assert field_of(v, result) == "window"


async def test_check_5_counts() -> None:
    """Check 5: removed count, chars before and stage ids must be exact."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    assert field_of(v, rerecord(good, removed_message_count=3)) == "record.removedMessageCount"
    assert field_of(v, rerecord(good, window_chars_before=1)) == "record.windowCharsBefore"
    assert field_of(v, rerecord(good, removed_stage_ids=("writer#2",))) == (
        "record.removedStageIds"
    )


async def test_check_5_unchanged_window_reports_zero() -> None:
    """Check 5: without a window the record removed nothing and chars stay equal."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    unchanged = replace(good, window=msgspec.UNSET, rebase=msgspec.UNSET, evictions=())
    assert field_of(v, unchanged) == "record.removedMessageCount"


async def test_check_6_evictions() -> None:
    """Check 6: evictions are exactly the removed indexes, ascending."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    backwards = replace(good, evictions=tuple(reversed(good.evictions)))
    assert field_of(v, backwards) == "evictions"
    assert field_of(v, replace(good, evictions=good.evictions[:1])) == "evictions"


async def test_check_7_folded_spans() -> None:
    """Check 7: folded spans need an inserted message standing for the removed range."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    summary = U("[summary] of two")
    span = FoldedSpan(
        summary_fingerprint=fingerprint(summary),
        run_id="run-1",
        iteration=4,
        folded_at_ms=2000,
        model="cheap",
        message_count=2,
        removed_stage_ids=("writer#1", "writer#2"),
        retained="conversation",
        messages=tuple(HISTORY[1:3]),
    )
    assert field_of(v, replace(good, folded=(span,))) == "folded"
    window = unset_free(good.window)
    folded = replace(
        good,
        window=(window[0], summary, *window[1:]),
        rebase=Rebase(head_count=1, kept_tail_count=4, inserted_at_ms=2000),
        record=msgspec.structs.replace(
            good.record, window_chars_after=good.record.window_chars_after + len(summary.content)
        ),
        folded=(span,),
    )
    validate_result(NAME, v, folded)
    wrong_fp = msgspec.structs.replace(span, summary_fingerprint="0" * 64)
    assert field_of(v, replace(folded, folded=(wrong_fp,))) == "folded.summaryFingerprint"
    wrong_count = msgspec.structs.replace(span, message_count=3)
    assert field_of(v, replace(folded, folded=(wrong_count,))) == "folded.messageCount"
    wrong_messages = msgspec.structs.replace(span, messages=tuple(HISTORY[2:4]))
    assert field_of(v, replace(folded, folded=(wrong_messages,))) == "folded.messages"
    discarded = msgspec.structs.replace(span, retained="discard", messages=msgspec.UNSET)
    validate_result(NAME, v, replace(folded, folded=(discarded,)))


async def test_check_8_refusals() -> None:
    """Check 8: refusal reasons come from the closed set and point at real turns."""
    v = visit(HISTORY, anchor=0)
    good = await dropped(v)
    legacy = Refusal(reason="summary-not-smaller", turn_index=0, message_index=0)  # type: ignore[arg-type]
    assert field_of(v, rerecord(good, refusals=(legacy,))) == "record.refusals"
    beyond = Refusal(reason="inside-keep-window", turn_index=9, message_index=0)
    assert field_of(v, rerecord(good, refusals=(beyond,))) == "record.refusals"
    skewed = Refusal(reason="inside-keep-window", turn_index=2, message_index=4)
    assert field_of(v, rerecord(good, refusals=(skewed,))) == "record.refusals"
    # The plan's own refusals are taken as made over these turns; any other is still checked.
    plan = v.latest_plan
    assert plan is not None and plan.refusals
    assert field_of(v, rerecord(good, refusals=(skewed, *plan.refusals))) == "record.refusals"
    validate_result(NAME, v, rerecord(good, refusals=plan.refusals))


async def test_check_9_window_must_still_open_with_a_user_message() -> None:
    """Check 9: a window that opened with a user message may not open with anything else."""
    history = [U("go"), *R("c1"), *R("c2"), *R("c3")]
    v = visit(history)
    plan = v.plan_removal(2)
    assert plan.span == (0, 1)
    facts = v.removal_facts(range(3), 2000)
    window = tuple(history[3:])
    record = CustomRecord(
        strategy=NAME,
        iteration=4,
        removed_stage_ids=facts.removed_stage_ids,
        removed_message_count=3,
        window_chars_before=8,
        window_chars_after=4,
        refusals=plan.refusals,
    )
    result = WindowResult(
        record=record,
        evictions=facts.evictions,
        window=window,
        rebase=Rebase(head_count=0, kept_tail_count=4),
    )
    assert field_of(v, result) == "window"


async def test_stage_raises_and_returns_nothing_on_violation() -> None:
    """The stage validates built results and lets the error through with nothing filed."""

    class Liar:
        name = NAME

        async def plan(self, v: WindowVisit) -> WindowResult:
            good = await dropped(v)
            return rerecord(good, window_chars_after=0)

    with pytest.raises(WindowStrategyError) as caught:
        await run_stage(Liar(), HISTORY, said=TASK)
    assert caught.value.field == "record.windowCharsAfter"
    assert caught.value.strategy == NAME
