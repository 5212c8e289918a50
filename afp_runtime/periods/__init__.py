"""Periods: the person's time and the periods tools declare (docs/time.md).

Instants, durations and ranges; zones and local times around clock changes; period
declarations and their checks; writing a window into a tool's forms, widening it, judging it
against the tool's facts, and reading sent values back. Pure: ``now`` is always a parameter,
and the only I/O is reading the zone database of the ``tzdata`` package (``zones``)."""

from afp_runtime.periods.clock import (
    MessageTime,
    TimeClock,
    clock_from_wire,
    clock_row,
    message_time_from_wire,
    turn_clock,
)
from afp_runtime.periods.config import (
    TimeConfig,
    time_config_from_wire,
    time_config_to_wire,
)
from afp_runtime.periods.convert import (
    PeriodContext,
    Refusal,
    convert_for_tool,
)
from afp_runtime.periods.decide import (
    TIME_QUOTE,
    TIME_QUOTE_DESCRIPTION,
    CallDecision,
    CallToBind,
    decide_call,
    without_time_quote,
)
from afp_runtime.periods.declare import (
    Period,
    assume,
    check_against_schema,
    facts_of,
    forms_of,
    period_from_wire,
)
from afp_runtime.periods.dispatch import (
    ToolTime,
    dispatch_call,
    tool_time,
)
from afp_runtime.periods.facts import (
    DEFAULT_GRANULARITY_MS,
    Facts,
    TimeRefusal,
    form_facts,
    tool_facts,
)
from afp_runtime.periods.instants import (
    Instant,
    parse_instant,
)
from afp_runtime.periods.parts import (
    Anchor,
    TimeParts,
)
from afp_runtime.periods.policy import (
    open_questions,
)
from afp_runtime.periods.question import (
    ANSWER_LIMIT,
    AnswerProblem,
    TimeQuestion,
    check_time_answer,
    time_answer_row,
    time_question,
)
from afp_runtime.periods.reader import (
    Reading,
)
from afp_runtime.periods.reading_rows import (
    read_message,
)
from afp_runtime.periods.resolve import (
    resolve,
)
from afp_runtime.periods.rows import (
    TIME_ROW_KINDS,
    CallWindowRow,
    call_window_of_call,
    validate_time_row,
)
from afp_runtime.periods.texts import (
    TIME_LINE_PREFIX,
    abandoned_observation,
    filled_note,
    refusal_observation,
    time_line,
    unsettled_observation,
)
from afp_runtime.periods.windows import (
    OpenMention,
    OpenReading,
    TurnWindows,
    turn_windows_of,
)
from afp_runtime.periods.zones import (
    is_zone_name,
    preload_zones,
)

__all__ = [
    "ANSWER_LIMIT",
    "Anchor",
    "AnswerProblem",
    "CallDecision",
    "CallToBind",
    "CallWindowRow",
    "DEFAULT_GRANULARITY_MS",
    "Facts",
    "Instant",
    "MessageTime",
    "OpenMention",
    "OpenReading",
    "Period",
    "PeriodContext",
    "Reading",
    "Refusal",
    "TIME_LINE_PREFIX",
    "TIME_QUOTE",
    "TIME_QUOTE_DESCRIPTION",
    "TIME_ROW_KINDS",
    "TimeClock",
    "TimeConfig",
    "TimeParts",
    "TimeQuestion",
    "TimeRefusal",
    "ToolTime",
    "TurnWindows",
    "abandoned_observation",
    "assume",
    "call_window_of_call",
    "check_against_schema",
    "check_time_answer",
    "clock_from_wire",
    "clock_row",
    "convert_for_tool",
    "decide_call",
    "dispatch_call",
    "facts_of",
    "filled_note",
    "form_facts",
    "forms_of",
    "is_zone_name",
    "message_time_from_wire",
    "open_questions",
    "parse_instant",
    "period_from_wire",
    "preload_zones",
    "read_message",
    "refusal_observation",
    "resolve",
    "time_answer_row",
    "time_config_from_wire",
    "time_config_to_wire",
    "time_line",
    "time_question",
    "tool_facts",
    "tool_time",
    "turn_clock",
    "turn_windows_of",
    "unsettled_observation",
    "validate_time_row",
    "without_time_quote",
]
