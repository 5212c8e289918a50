"""The time question: its shape, judging an answer, and recording it
(docs/time.md#the-time-question).

When a call waits on an open mention (``not-filled / open-reading``), the batch pauses and the
person is asked. ``time_question`` builds the question for one mention and the calls waiting on
it; ``check_time_answer`` judges a typed value; ``time_answer_row`` files the accepted answer, and
``decide_call`` gives every waiting call its second ``call-window`` row.

Readings settled here:

* ``TimeQuestion`` holds the time-specific fields; the host adds ``questionId``, ``agentId``,
  ``runId``, ``repeat``, ``askedAt``, ``status`` and ``refused`` (docs/host.md#question-kinds).
* ``zone`` on a ``time-range`` question is the readings' zone (the mention's zone; the first
  reading's when several), else the clock's zone; a ``zone`` question carries the clock's zone
  only when it is known.
* A ``zone`` question is asked when the mention's filed choice has the open question ``zone``
  (an unmapped abbreviation, an unresolved ``<Place> time``, an unknown clock zone). After the
  zone answer the host resolves the mention again and calls ``time_question`` with the new
  readings and ``needs_zone=False``.
* Labels show times as ``HH:MM`` (seconds, and a fraction, only when not zero), and the end as
  the range's exclusive end ("from 08:00 until 08:41").
* An answer "is one of the offered choices" when its range has the same instants as an offered
  reading; its text is kept as typed in the ``time-answer`` row.
* In ``check_time_answer`` a part that is an instant without a zone designator is
  ``no-offset``; anything else that is not a strict instant is ``not-an-instant``. A part names
  a skipped local time when its written local time falls in a gap of the person's zone and its
  written offset is one of the two offsets around that change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Final, Literal

import msgspec

from afp_runtime.errors import InvalidAnswer, InvalidValue, shown
from afp_runtime.time._convert import PeriodContext, Refusal
from afp_runtime.time._decide import CallToBind, convert_reading
from afp_runtime.time._facts import Facts, period_fact_problem
from afp_runtime.time._instants import Instant, dated_in_every_zone, parse_instant
from afp_runtime.time._ranges import TimeRange
from afp_runtime.time._rows import TimeAnswerRow
from afp_runtime.time._texts import ANSWER_REASON_TEXTS, weekday_date_time
from afp_runtime.time._windows import OpenMention, OpenReading
from afp_runtime.time._zones import NAIVE_EPOCH, WallGap, is_zone_name, read_wall, to_zone

QuestionFormat = Literal["zone", "time-range"]
"""What a time question asks for: a zone name, or a ``from/to`` range
(docs/time.md#question-shapes)."""

AnswerReason = Literal[
    "not-a-zone",
    "not-a-range",
    "no-offset",
    "not-an-instant",
    "out-of-order",
    "off-calendar",
    "dst-gap",
    "time-future",
    "time-past",
    "beyond-retention",
    "over-max-range",
]
"""Why a time answer was not accepted (docs/time.md#judging-answers), in the order the checks
run."""

ANSWER_LIMIT: Final = 4_096
"""The longest answer value accepted, in code points; longer is a 422, not an attempt."""

_EXAMPLE: Final = "2026-10-09T08:00:00-07:00/2026-10-09T09:00:00-07:00"
_NO_OFFSET = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?")


class TimeChoice(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One offered reading: wire ``{value, label}``.

    Attributes:
        value: the reading written ``from/to`` (as filed).
        label: the weekday, date and times in the reading's zone, the zone named.
    """

    value: str
    label: str


class TimeQuestion(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The time-specific part of a ``time`` question (docs/time.md#question-shapes).

    Wire: ``{kind: "time", format, turn, mention, quote, prompt, zone?, choices, freeEntry:
    true, toolCallIds}``; the host adds the common question fields.

    Attributes:
        kind: always ``"time"``.
        format: ``zone`` or ``time-range``.
        turn: the turn.
        mention: the mention asked about.
        quote: the person's words.
        prompt: the question, in afp_runtime's words.
        choices: the offered readings (none for a ``zone`` question).
        free_entry: always true (wire ``freeEntry``).
        tool_call_ids: the calls waiting on the answer (wire ``toolCallIds``).
        zone: the readings' zone (see the module docstring).
    """

    kind: Literal["time"]
    format: QuestionFormat
    turn: int
    mention: int
    quote: str
    prompt: str
    choices: tuple[TimeChoice, ...]
    free_entry: Literal[True]
    tool_call_ids: tuple[str, ...]
    zone: str | None = None


def choice_label(time_range: TimeRange, zone: str) -> str:
    """A reading's label: weekday, date and times in ``zone``, the zone named.

    ``Friday, 2026-10-09, from 08:00 until 08:41 (America/Los_Angeles)``; a range over several
    dates names both: ``from Thursday, 2026-10-08, 00:00 until Friday, 2026-10-09, 00:00 (…)``.
    """
    start, end = time_range.start_instant, time_range.end_instant
    if is_zone_name(zone):
        start, end = to_zone(start, zone), to_zone(end, zone)
    s_weekday, s_day, s_clock = weekday_date_time(start, seconds=True)
    e_weekday, e_day, e_clock = weekday_date_time(end, seconds=True)
    if s_day == e_day:
        return f"{s_weekday}, {s_day}, from {s_clock} until {e_clock} ({zone})"
    return f"from {s_weekday}, {s_day}, {s_clock} until {e_weekday}, {e_day}, {e_clock} ({zone})"


def zone_prompt(quote: str) -> str:
    """The prompt of a ``zone`` question (docs/time.md#question-shapes)."""
    return (
        f'Which time zone are you in? It is needed to know what "{quote}" means. Please answer '
        "with a zone name such as America/Los_Angeles, Europe/London or UTC."
    )


def range_prompt(quote: str, *, with_choices: bool) -> str:
    """The prompt of a ``time-range`` question (docs/time.md#question-shapes)."""
    typed = f"as start/end with UTC offsets, for example {_EXAMPLE}"
    if with_choices:
        return (
            f'Which time did you mean by "{quote}"? Choose one of the options, or type the '
            f"range you meant {typed}."
        )
    return f'What time did you mean by "{quote}"? Please type the range you meant {typed}.'


def offered_readings(
    mention: OpenMention, calls: Sequence[CallToBind], ctx: PeriodContext
) -> tuple[OpenReading, ...]:
    """The readings a question offers: those ``convert_for_tool`` accepts for every waiting
    call (docs/time.md#question-shapes)."""
    return tuple(
        reading
        for reading in mention.readings
        if not any(isinstance(convert_reading(call, reading, ctx), Refusal) for call in calls)
    )


def time_question(
    mention: OpenMention, calls: Sequence[CallToBind], ctx: PeriodContext, *, turn: int
) -> TimeQuestion:
    """The time question for one open mention and the calls waiting on it
    (docs/time.md#question-shapes).

    Args:
        mention: the open mention (``TurnWindows.open``), or the same mention resolved again
            after a zone answer.
        calls: the calls of the batch waiting on it.
        ctx: the turn's ``now``, the clock zone (None when unknown) and the agent's zone.
        turn: the turn.
    """
    format: QuestionFormat = "zone" if mention.needs_zone else "time-range"
    offered = () if mention.needs_zone else offered_readings(mention, calls, ctx)
    readings = offered or mention.readings
    zone = readings[0].zone if readings and not mention.needs_zone else ctx.zone
    if mention.needs_zone:
        prompt = zone_prompt(mention.quote)
    else:
        prompt = range_prompt(mention.quote, with_choices=bool(offered))
    return TimeQuestion(
        kind="time",
        format=format,
        turn=turn,
        mention=mention.mention,
        quote=mention.quote,
        prompt=prompt,
        choices=tuple(
            TimeChoice(value=r.range.interval(), label=choice_label(r.range, r.zone))
            for r in offered
        ),
        free_entry=True,
        tool_call_ids=tuple(call.tool_call_id for call in calls),
        zone=zone,
    )


class AnswerProblem(msgspec.Struct, frozen=True, kw_only=True):
    """Why an answer was not accepted (docs/time.md#judging-answers).

    Attributes:
        reason: the reason code.
        sentence: the authored sentence explaining it.
    """

    reason: AnswerReason
    sentence: str


def _problem(reason: AnswerReason) -> AnswerProblem:
    return AnswerProblem(reason=reason, sentence=ANSWER_REASON_TEXTS[reason])


def _part_problem(part: str) -> AnswerReason | None:
    try:
        parse_instant(part)
    except ValueError:
        return "no-offset" if _NO_OFFSET.fullmatch(part) else "not-an-instant"
    return None


def _names_gap(part: str, zone: str) -> bool:
    instant = parse_instant(part)
    # The local time as written: the instant moved by its own offset.
    local = NAIVE_EPOCH + timedelta(seconds=instant.seconds + instant.offset)
    reading = read_wall(local.replace(microsecond=instant.subsecond_ns // 1000), zone)
    if not isinstance(reading, WallGap):
        return False
    return instant.offset in (reading.earlier.offset, reading.later.offset)


def check_time_answer(
    format: QuestionFormat,
    value: object,
    zone: str | None = None,
    facts: Facts | Sequence[Facts] | None = None,
    *,
    now: Instant | None = None,
) -> AnswerProblem | None:
    """Judge an answer to a time question (docs/time.md#judging-answers); None when it is accepted.

    Checks, in order: ``zone`` — a valid zone name (``not-a-zone``). ``time-range`` — exactly
    one ``/`` (``not-a-range``); each part a strict instant with an offset (``no-offset``,
    ``not-an-instant``); the first part earlier (``out-of-order``); both from 0001-01-02 to
    9999-12-30 UTC, so the range has a date in every zone (``off-calendar``); when the person's
    zone is known, no part names a local time the zone skips, written with either offset around
    the change (``dst-gap``); the facts of every waiting tool (``time-future``, ``time-past``,
    ``beyond-retention``, ``over-max-range``).

    Args:
        format: the question's format.
        value: the answer.
        zone: the person's zone; None when it is not known (the ``dst-gap`` check is then off).
        facts: the judged facts of each waiting tool (``tool_facts(forms, facts)``).
        now: the turn's ``now``; required when ``facts`` are given.

    Raises:
        InvalidAnswer: the value is not a string (reason ``not-a-string``) or is longer than
            4,096 code points (``too-long``): a 422, not counted as an attempt.
        ValueError: ``facts`` are given without ``now``.
    """
    if not isinstance(value, str):
        raise InvalidAnswer("a time answer must be a string", reason="not-a-string")
    if len(value) > ANSWER_LIMIT:
        raise InvalidAnswer(
            f"a time answer holds at most {ANSWER_LIMIT} code points", reason="too-long"
        )
    if format == "zone":
        return None if is_zone_name(value) else _problem("not-a-zone")
    parts = value.split("/")
    if len(parts) != 2:
        return _problem("not-a-range")
    for part in parts:
        reason = _part_problem(part)
        if reason is not None:
            return _problem(reason)
    start, end = parse_instant(parts[0]), parse_instant(parts[1])
    if not start < end:
        return _problem("out-of-order")
    if not (dated_in_every_zone(start) and dated_in_every_zone(end)):
        return _problem("off-calendar")
    if zone is not None and is_zone_name(zone) and any(_names_gap(p, zone) for p in parts):
        return _problem("dst-gap")
    judged = (facts,) if isinstance(facts, Facts) else tuple(facts or ())
    if judged and now is None:
        raise ValueError("check_time_answer needs now to judge facts")
    answered = TimeRange(start=parts[0], end=parts[1])
    for declared in judged:
        assert now is not None
        problem = period_fact_problem(answered, declared, now)
        if problem is not None:
            return _problem(problem)  # type: ignore[arg-type]
    return None


def time_answer_row(
    question: TimeQuestion,
    value: str,
    *,
    iteration: int,
    typed_zone: str,
) -> TimeAnswerRow:
    """The ``time-answer`` row of an accepted ``time-range`` answer
    (docs/time.md#recording-an-accepted-answer).

    ``how`` is ``confirmed`` when the value is one of the question's choices (same instants)
    and ``edited`` otherwise; ``zone`` is the readings' zone (the question's ``zone``) for a
    chosen reading, or ``typed_zone`` for a typed range.

    Args:
        question: the question answered.
        value: the accepted answer, ``from/to`` (already judged by ``check_time_answer``).
        iteration: the paused batch's iteration.
        typed_zone: the zone a typed range is recorded in: the clock's zone.

    Raises:
        InvalidValue: ``value`` is not a strict ``from/to`` range.
    """
    parts = value.split("/")
    if len(parts) != 2:
        raise InvalidValue("a time answer is written from/to", value=shown(value))
    start, end = parts
    answered = TimeRange(start=start, end=end)
    chosen = any(_choice_range(choice) == answered for choice in question.choices)
    zone = question.zone if chosen and question.zone is not None else typed_zone
    return TimeAnswerRow(
        turn=question.turn,
        iteration=iteration,
        mention=question.mention,
        start=start,
        end=end,
        zone=zone,
        how="confirmed" if chosen else "edited",
    )


def _choice_range(choice: TimeChoice) -> TimeRange | None:
    start, _, end = choice.value.partition("/")
    try:
        return TimeRange(start=start, end=end)
    except ValueError:
        return None


def judge_answer(detail: Mapping[str, Any], value: str) -> AnswerProblem | None:
    """Judge an answer to a time question with what the question kept when it was asked (its
    shape, the waiting tools' facts, the turn's ``now`` and the person's zone;
    docs/time.md#judging-answers); None when it is accepted."""
    asked = msgspec.convert(detail["question"], TimeQuestion)
    facts = [msgspec.convert(f, Facts) for f in detail.get("facts", [])]
    now = parse_instant(detail["now"]) if isinstance(detail.get("now"), str) else None
    return check_time_answer(
        asked.format, value, zone=detail.get("personZone"), facts=facts, now=now
    )
