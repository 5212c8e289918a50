"""Time (docs/time.md): the person's words read for time, the turn's clock, and the periods
tools declare, filled, bound or refused before a call runs — a loop extension over a pure core
(instants, zones, ranges, the English reader, call decisions, time rows and texts), all in
private modules behind these names."""

from afp_runtime.time._clock import MessageTime, message_time_from_wire
from afp_runtime.time._config import TimeConfig, time_config_from_wire
from afp_runtime.time._declare import Assume, Period, period_from_wire
from afp_runtime.time._forms import (
    Bound,
    BoundsForm,
    DayForm,
    JoinedForm,
    LookbackForm,
    ObjectForm,
    ObjectKeys,
    ZoneArgument,
)
from afp_runtime.time._instants import parse_instant
from afp_runtime.time._loop import TimeExtension
from afp_runtime.time._policy import TimePolicy
from afp_runtime.time._question import AnswerProblem, judge_answer
from afp_runtime.time._reader import TimeReader
from afp_runtime.time._rows import TIME_ROW_KINDS, TIME_ROW_TYPES, validate_time_row
from afp_runtime.time._zones import (
    WallGap,
    WallOverlap,
    WallUnique,
    is_zone_name,
    load_zone,
    read_wall,
)

__all__ = [
    "AnswerProblem",
    "Assume",
    "Bound",
    "BoundsForm",
    "DayForm",
    "JoinedForm",
    "LookbackForm",
    "MessageTime",
    "ObjectForm",
    "ObjectKeys",
    "Period",
    "TIME_ROW_KINDS",
    "TIME_ROW_TYPES",
    "TimeConfig",
    "TimeExtension",
    "TimePolicy",
    "TimeReader",
    "WallGap",
    "WallOverlap",
    "WallUnique",
    "ZoneArgument",
    "is_zone_name",
    "judge_answer",
    "load_zone",
    "message_time_from_wire",
    "parse_instant",
    "period_from_wire",
    "read_wall",
    "time_config_from_wire",
    "validate_time_row",
]
