"""The summarize-oldest strategy: fold the oldest turns into one summary message written by a
summarizing model, when the last call's input went over a threshold
(docs/window.md#summarize-oldest, docs/window.md#folding).

The summarizer is anything satisfying the window's own ``Summarizer`` Protocol (a ``str``
``provider`` and an async ``send``), so this layer never imports ``models``. It is called at
most once per engaged visit: no retry, no fallback, no cache.

Details settled here, beyond what docs/window.md#summarize-oldest states:

* A reply that cannot stand as a summary — its ``content`` is not a ``str``, or its text is
  refused by ``Message`` (a surrogate code point) — counts as a failed call:
  ``summarizer-failed``, a warning, nothing folded.
* ``spend`` and ``summarizerTokens`` carry only the reply's ``input`` and ``output`` tokens.
  A reply without usage (``usage is None``: the provider reported none) still folds, but its
  record has no ``summarizerTokens`` and the result no ``spend``: an unknown count is left
  out rather than written as 0.
* Cancellation is never caught: only ``Exception`` is; ``BaseException``s that are not
  ``Exception`` (asyncio's ``CancelledError``, trio's ``Cancelled``, ``KeyboardInterrupt``)
  propagate untouched.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from afp_runtime.messages import Message, ModelRequest, Usage, fingerprint
from afp_runtime.window.folds import (
    FoldedSpan,
    Retain,
    build_summary_message,
    is_compacted_summary,
    span_key,
    transcript,
)
from afp_runtime.window.records import SummarizeOldestRecord
from afp_runtime.window.refusals import Refusal
from afp_runtime.window.strategies import _options
from afp_runtime.window.strategies.token_budget import over_budget
from afp_runtime.window.texts import SUMMARIZER_INSTRUCTION, summarizer_failed_warning
from afp_runtime.window.turns import Turn, window_chars
from afp_runtime.window.visit import (
    Billing,
    BudgetPressure,
    PlanAction,
    Rebase,
    Spend,
    Summarizer,
    WindowResult,
    WindowVisit,
)

NAME = "summarize-oldest"


def summarizer_request(
    span: Sequence[Message], context: Sequence[Message], model: str
) -> ModelRequest:
    """The one request a fold sends: the instruction as system text, the transcript as the only
    user message, the summarizer's model id, no tools (docs/window.md#summarize-oldest step 4,
    docs/window.md#the-summarizer-instruction).

    A pure function of the span, its context and the constants, so it can be rebuilt from the
    commit log.
    """
    return ModelRequest(
        model=model,
        system=SUMMARIZER_INSTRUCTION,
        messages=(Message(role="user", content=transcript(span, context)),),
    )


def is_existing_summary(turn: Turn) -> bool:
    """The summary predicate of the plan: the turn opens with a summary-looking message."""
    return is_compacted_summary(turn.messages[0])


class SummarizeOldest:
    """A built summarize-oldest strategy (make it with ``summarize_oldest``).

    Attributes:
        name: ``summarize-oldest``.
        billing: the summarizer port and model id its calls are billed to.
        threshold_tokens: the input-token budget; a reading above it engages.
        summarizer: the summarizing model port.
        model: the summarizer's model id.
        keep_recent_turns: how many recent turns always stay.
        retain: ``conversation`` (the folded messages travel with the span) or ``discard``.
        refused_spans: the latch: keys (``span_key``) of spans whose summary was not strictly
            smaller; never asked again while this object lives, never cleared, not persisted.
    """

    name = NAME

    def __init__(
        self,
        *,
        threshold_tokens: float,
        summarizer: Summarizer,
        model: str,
        keep_recent_turns: int,
        retain: Retain,
    ) -> None:
        self.threshold_tokens = threshold_tokens
        self.summarizer = summarizer
        self.model = model
        self.keep_recent_turns = keep_recent_turns
        self.retain: Retain = retain
        self.billing: Billing | None = Billing(provider=summarizer, model=model)
        self.refused_spans: set[str] = set()

    def __repr__(self) -> str:
        return (
            f"summarize_oldest(threshold_tokens={self.threshold_tokens!r}, "
            f"model={self.model!r}, keep_recent_turns={self.keep_recent_turns}, "
            f"retain={self.retain!r})"
        )

    async def plan(self, visit: WindowVisit) -> WindowResult | None:
        """Fold the oldest removable turns into one summary when over budget.

        Raises:
            CompactionUnmeasurableError: the last reading was 0 input and 0 output tokens.
        """
        measured = over_budget(visit, NAME, self.threshold_tokens)
        if measured is None:
            return None
        plan = visit.plan_removal(self.keep_recent_turns, is_existing_summary)
        if plan.span is None:
            return self._unchanged(visit, measured.input, plan.refusals)
        first, last = plan.span
        turns = visit.turns
        span_start = turns[first].start
        span_end = turns[last].start + turns[last].length
        span = visit.history[span_start:span_end]
        key = span_key(span)
        not_smaller = Refusal(
            reason="replacement-not-smaller", turn_index=first, message_index=span_start
        )
        if key in self.refused_spans:
            return self._unchanged(
                visit, measured.input, (not_smaller, *plan.refusals), skipped=True
            )
        try:
            summary, tokens = await self._summarize(visit, span)
        except Exception as exc:  # cancellation is a BaseException and passes through
            failed = Refusal(reason="summarizer-failed", turn_index=first, message_index=span_start)
            warning = summarizer_failed_warning(NAME, measured.input, self.threshold_tokens, exc)
            return self._unchanged(visit, measured.input, (failed, *plan.refusals), warning=warning)

        spend = None if tokens is None else Spend(model=self.model, usage=tokens)
        summary_chars = len(summary.content)
        if summary_chars >= window_chars(span):
            self.refused_spans.add(key)
            return self._unchanged(
                visit,
                measured.input,
                (not_smaller, *plan.refusals),
                summary_chars=summary_chars,
                tokens=tokens,
                spend=spend,
            )
        removed = range(span_start, span_end)
        return self._fold(visit, measured.input, removed, summary, tokens, spend, plan.refusals)

    async def _summarize(
        self, visit: WindowVisit, span: Sequence[Message]
    ) -> tuple[Message, Usage | None]:
        """The one summarizer call of a visit: the summary message and the reply's tokens (None
        when the provider reported none). Raises whatever makes the reply unusable."""
        reply = await self.summarizer.send(summarizer_request(span, visit.history, self.model))
        text = reply.content
        if not isinstance(text, str):
            raise TypeError(f"the reply's content is {type(text).__name__}, not str")
        usage = reply.usage
        tokens = None if usage is None else Usage(input=usage.input, output=usage.output)
        summary = build_summary_message(text, len(span), visit.iteration, self.model, self.retain)
        return summary, tokens

    def _unchanged(
        self,
        visit: WindowVisit,
        measured: int,
        refusals: tuple[Refusal, ...],
        *,
        summary_chars: int = 0,
        tokens: Usage | None = None,
        skipped: bool = False,
        spend: Spend | None = None,
        warning: str | None = None,
    ) -> WindowResult:
        """An engaged visit that folds nothing: its record, pressure, spend and warning."""
        chars_before = window_chars(visit.history)
        record = SummarizeOldestRecord(
            iteration=visit.iteration,
            measured_tokens=measured,
            threshold_tokens=self.threshold_tokens,
            over_budget=True,
            window_chars_before=chars_before,
            removed_stage_ids=(),
            removed_message_count=0,
            window_chars_after=chars_before,
            summary_chars=summary_chars,
            summarizer_tokens=msgspec.UNSET if tokens is None else tokens,
            summarizer_skipped=True if skipped else msgspec.UNSET,
            refusals=refusals,
        )
        return WindowResult(
            record=record,
            budget_pressure=self._pressure(measured, "none"),
            spend=spend,
            warning=warning,
        )

    def _fold(
        self,
        visit: WindowVisit,
        measured: int,
        removed: range,
        summary: Message,
        tokens: Usage | None,
        spend: Spend | None,
        refusals: tuple[Refusal, ...],
    ) -> WindowResult:
        """The new window with ``summary`` standing for the ``removed`` range of the history."""
        history = visit.history
        head, span = history[: removed.start], history[removed.start : removed.stop]
        tail = history[removed.stop :]
        t = visit.now()
        facts = visit.removal_facts(removed, t)
        window = (*head, summary, *tail)
        folded = FoldedSpan(
            summary_fingerprint=fingerprint(summary),
            run_id=visit.run_id,
            iteration=visit.iteration,
            folded_at_ms=t,
            model=self.model,
            message_count=len(span),
            removed_stage_ids=facts.removed_stage_ids,
            retained=self.retain,
            messages=tuple(span) if self.retain == "conversation" else msgspec.UNSET,
        )
        record = SummarizeOldestRecord(
            iteration=visit.iteration,
            measured_tokens=measured,
            threshold_tokens=self.threshold_tokens,
            over_budget=True,
            window_chars_before=window_chars(history),
            removed_stage_ids=facts.removed_stage_ids,
            removed_message_count=len(span),
            window_chars_after=window_chars(window),
            summary_chars=len(summary.content),
            refusals=refusals,
            summarizer_tokens=msgspec.UNSET if tokens is None else tokens,
        )
        return WindowResult(
            record=record,
            evictions=facts.evictions,
            window=window,
            rebase=Rebase(head_count=len(head), kept_tail_count=len(tail), inserted_at_ms=t),
            folded=(folded,),
            budget_pressure=self._pressure(measured, "summarize"),
            spend=spend,
        )

    def _pressure(self, projected: int, action: PlanAction) -> BudgetPressure:
        return BudgetPressure(
            cap_tokens=self.threshold_tokens, projected_tokens=projected, plan_action=action
        )


def summarize_oldest(
    *args: object,
    threshold_tokens: float = _options.MISSING,
    summarizer: Summarizer = _options.MISSING,
    model: str = _options.MISSING,
    keep_recent_turns: int = 6,
    retain: Retain = "conversation",
) -> SummarizeOldest:
    """A strategy that folds the oldest turns into one summary while over budget.

    Args:
        threshold_tokens: required; a finite number > 0 (floats allowed).
        summarizer: required; any object with a ``str`` ``provider`` and an async
            ``send(request)`` — every Model adapter qualifies.
        model: required; the summarizer's model id, a non-empty str.
        keep_recent_turns: an int >= 1; default 6.
        retain: ``"conversation"`` (default: the folded messages travel with the
            conversation) or ``"discard"``.

    Raises:
        WindowConfigError: an option is missing, positional or invalid (names the factory,
            option and value).
    """
    factory = "summarize_oldest"
    _options.refuse_positional(factory, args)
    return SummarizeOldest(
        threshold_tokens=_options.threshold(factory, threshold_tokens),
        summarizer=_options.summarizer(factory, summarizer),
        model=_options.model_id(factory, model),
        keep_recent_turns=_options.keep_turns(factory, keep_recent_turns),
        retain=_options.retain(factory, retain),
    )
