"""``TimeConfig``: enabling the time layer for an agent (docs/time.md#the-rule-in-brief,
docs/time.md#readers, docs/time.md#the-time-policy, docs/time.md#judging-answers).

``TimeConfig`` is the value given as ``time=`` on an agent definition, and the same struct
decodes the ``time`` table of a TOML or JSON config: camelCase keys there
(``time = {zone = "America/Los_Angeles", maxAnswerRepeats = 3, policy = {dateOrder = "MDY"}}``),
snake_case keyword arguments in Python (``TimeConfig(zone=..., max_answer_repeats=3,
policy=TimePolicy(date_order="MDY"))``). Unknown keys are refused with their path.

Wire shape: ``TimeConfig {zone?, maxAnswerRepeats = 3, policy = {}, reader?}``.

Readings settled here:

* ``reader`` selects the time reader. In Python it is any object with the ``TimeReader``
  shape (``id``, ``version``, ``locale``, ``kind`` and ``read(text)``) — a model-kind reader,
  say. In TOML or JSON it can only name the built-in English reader, ``reader =
  "afp/english"``, which is also what an absent ``reader`` means: a reader is code, and a
  config file does not load code. A reader object is not encoded: ``time_config_to_wire``
  leaves it out (the ``time-reading`` rows name the reader that read each message).
* ``maxAnswerRepeats`` is an int >= 0: 0 closes a question as ``unsettled`` at its first
  rejected answer.
* A bad value raises ``AgentDefinitionError`` naming the field under ``time`` (``time.zone``,
  ``time.maxAnswerRepeats``, ``time.reader``, ``time.policy.dateOrder`` …);
  ``time_config_from_wire`` turns decoding errors (unknown keys, wrong types) into the same
  error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

import msgspec

from afp_runtime.errors import AgentDefinitionError, shown
from afp_runtime.time._clock import time_field
from afp_runtime.time._english import ENGLISH_READER_ID, EnglishReader
from afp_runtime.time._policy import TimePolicy, refuse_setting
from afp_runtime.time._reader import TimeReader
from afp_runtime.time._wire import Wire
from afp_runtime.time._zones import is_zone_name

DEFAULT_MAX_ANSWER_REPEATS: Final = 3
"""How many rejected answers a time question takes before it closes ``unsettled``
(docs/time.md#judging-answers)."""


def _is_reader(reader: object) -> bool:
    texts = [getattr(reader, name, None) for name in ("id", "version", "locale")]
    if not all(isinstance(text, str) and text for text in texts):
        return False
    return getattr(reader, "kind", None) in ("rule", "model") and callable(
        getattr(reader, "read", None)
    )


class TimeConfig(Wire, frozen=True, kw_only=True):
    """The time options of an agent; giving one enables the time layer
    (docs/time.md#the-rule-in-brief).

    Attributes:
        zone: the person's zone when a message does not say one (an accepted zone name);
            without it, and without an answered zone, the zone is unknown
            (docs/time.md#unknown-zone).
        max_answer_repeats: wire ``maxAnswerRepeats``; rejected answers a time question takes
            before it closes ``unsettled`` (an int >= 0, default 3).
        policy: what is settled without asking (``TimePolicy``).
        reader: the time reader: ``None`` or ``"afp/english"`` for the built-in English
            reader, or (Python only) a ``TimeReader`` object.

    Raises:
        AgentDefinitionError: a value is invalid (names the field).
    """

    zone: str | None = None
    max_answer_repeats: int = DEFAULT_MAX_ANSWER_REPEATS
    policy: TimePolicy = msgspec.field(default_factory=TimePolicy)
    reader: Any = None

    def __post_init__(self) -> None:
        if self.zone is not None and not is_zone_name(self.zone):
            raise refuse_setting(
                "time.zone", "must be a zone name (Area/Location, UTC or GMT)", self.zone
            )
        repeats = self.max_answer_repeats
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not 0 <= repeats <= 1000:
            raise refuse_setting("time.maxAnswerRepeats", "must be an int from 0 to 1000", repeats)
        if not isinstance(self.policy, TimePolicy):
            raise refuse_setting("time.policy", "must be a TimePolicy", self.policy)
        reader = self.reader
        if reader is None or (isinstance(reader, str) and reader == ENGLISH_READER_ID):
            return
        if isinstance(reader, str):
            raise refuse_setting(
                "time.reader",
                f'must be "{ENGLISH_READER_ID}" in a config file; other readers are given in '
                "Python",
                reader,
            )
        if not _is_reader(reader):
            raise refuse_setting(
                "time.reader",
                "must be a time reader (id, version, locale, kind rule|model, read(text))",
                reader,
            )

    @property
    def time_reader(self) -> TimeReader:
        """The reader in use: the given object, else the built-in English reader."""
        if self.reader is None or isinstance(self.reader, str):
            return EnglishReader()
        return cast(TimeReader, self.reader)


def time_config_from_wire(data: Mapping[str, Any]) -> TimeConfig:
    """Decode the ``time`` table of a config file (camelCase keys).

    Raises:
        AgentDefinitionError: an unknown key, a wrong type or an invalid value; ``field``
            names its path under ``time`` (``time.maxAnswerRepeats``, ``time.policy.x``…).
    """
    if not isinstance(data, Mapping):
        raise refuse_setting("time", "must be a table", data)
    try:
        return msgspec.convert(data, TimeConfig)
    except msgspec.ValidationError as exc:
        raise AgentDefinitionError(
            f"time config is refused: {exc}", field=time_field(exc), value=shown(dict(data))
        ) from exc


def time_config_to_wire(config: TimeConfig) -> dict[str, Any]:
    """The wire form of ``config`` (camelCase keys, defaults omitted); a reader object is left
    out, the string ``"afp/english"`` is kept."""
    wire = msgspec.to_builtins(msgspec.structs.replace(config, reader=None))
    assert isinstance(wire, dict)
    if config.policy == TimePolicy():
        wire.pop("policy", None)
    if isinstance(config.reader, str):
        wire["reader"] = config.reader
    return wire
