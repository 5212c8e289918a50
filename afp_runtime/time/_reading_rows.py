"""The ``time-reading`` rows a turn's first ``seed`` files, and reading a message into them
(docs/time.md#reading-what-the-person-wrote, docs/time.md#the-resolver,
docs/time.md#policy-and-confirmation, docs/time.md#row-kinds).

``read_message(text, clock=..., config=..., turn=...)`` runs the agent's reader once over the
person's words, checks what it returned (``validate_reading``), resolves each mention against
the turn's clock (``resolve``), applies the policy and confirmation (``apply_policy``,
``with_confirm``) and returns the rows to file: one per mention, or a single row with
``mentions: 0``.

Wire shape (JSON keys camelCase; absent keys omitted, never ``null``), one of three forms:

* no mention: ``{kind: "time-reading", turn, iteration, reader {id, version, kind, locale},
  tzdata, mentions: 0}``;
* a refused mention: ``{kind, turn, iteration, reader, tzdata, mentions, mention, refused:
  quote-not-in-text | malformed}`` — no text of it is kept;
* a mention: ``{kind, turn, iteration, reader, tzdata, mentions, mention, quote, parses,
  problem?, candidates, choice}`` — ``parses`` the ``TimeParts`` as the reader gave them
  (``[]`` with ``problem: "unreadable"``), ``candidates`` the resolver's ``TimeCandidate``s
  (``resolve.py``; ``[]`` when none), ``choice`` as filed (``policy.py``: ``open`` or
  ``none``; ``{by: none, why: unreadable}`` for unreadable words).

``mention`` is the mention's index in the reader's output (less than ``mentions``);
``tzdata`` is the zone database version used (``TZDATA_VERSION``, or ``unknown``).

Readings settled here:

* Rows filed by a turn's first ``seed`` have ``iteration`` 1.
* A reader that raises anything but ``TimeReaderError`` is taken as a failed reader: the error
  becomes a ``TimeReaderError`` (the turn is held with ``errorKind: time-reader``), its cause
  chained.
* The row checks its own shape when built or decoded (``InvalidValue`` naming the field):
  the three forms above, counts, candidate indices in the choice, ``said`` empty and each
  candidate's ``parse`` naming a parse.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final, Literal

from afp_runtime.errors import InvalidValue, TimeReaderError, shown
from afp_runtime.time._candidates import TimeCandidate
from afp_runtime.time._clock import TimeClock
from afp_runtime.time._config import TimeConfig
from afp_runtime.time._parts import TimeParts
from afp_runtime.time._policy import (
    Choice,
    NoneChoice,
    OnlyChoice,
    OpenChoice,
    PolicyChoice,
    apply_policy,
    with_confirm,
)
from afp_runtime.time._reader import (
    MAX_PARSES,
    Mention,
    MentionRefusal,
    ReaderInfo,
    reader_info,
    validate_reading,
)
from afp_runtime.time._resolve import resolve
from afp_runtime.time._wire import Wire
from afp_runtime.time._zones import TZDATA_VERSION

FIRST_ITERATION: Final = 1
"""The iteration of rows a turn's first ``seed`` files (docs/time.md#row-kinds)."""


def _refuse(field: str, why: str, value: object) -> InvalidValue:
    return InvalidValue(f"time-reading {field} {why}", field=field, value=shown(value))


def _count(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _refuse(name, f"must be an int >= {minimum}", value)


class TimeReadingRow(Wire, frozen=True, kw_only=True, tag_field="kind", tag="time-reading"):
    """One ``time-reading`` row (docs/time.md#row-kinds); the module docstring shows its three
    forms.

    Attributes:
        turn: the turn (>= 1).
        iteration: the iteration that filed it (>= 1; 1 for a first ``seed``).
        reader: the reader that read the message, ``{id, version, kind, locale}``.
        tzdata: the zone database version used.
        mentions: how many mentions the reader returned (0: none).
        mention: this mention's index (less than ``mentions``); absent when ``mentions`` is 0.
        refused: why the mention was refused; then no other mention field is present.
        quote: the person's words, exactly as typed.
        parses: what the words may mean (``[]`` when unreadable).
        problem: ``unreadable`` when the words could not be read.
        candidates: the windows the words may mean (``[]`` when none).
        choice: what the policy and confirmation leave (``open`` or ``none``).

    Raises:
        InvalidValue: the fields do not form one of the three shapes (names the field).
    """

    turn: int
    iteration: int
    reader: ReaderInfo
    tzdata: str
    mentions: int
    mention: int | None = None
    refused: MentionRefusal | None = None
    quote: str | None = None
    parses: tuple[TimeParts, ...] | None = None
    problem: Literal["unreadable"] | None = None
    candidates: tuple[TimeCandidate, ...] | None = None
    choice: Choice | None = None

    def __post_init__(self) -> None:
        _count("turn", self.turn, 1)
        _count("iteration", self.iteration, 1)
        _count("mentions", self.mentions, 0)
        if not isinstance(self.tzdata, str) or not self.tzdata:
            raise _refuse("tzdata", "must be a non-empty string", self.tzdata)
        text_fields = ("quote", "parses", "problem", "candidates", "choice")
        if self.mentions == 0:
            self._absent(("mention", "refused", *text_fields), "when mentions is 0")
            return
        _count("mention", self.mention, 0)
        assert self.mention is not None
        if self.mention >= self.mentions:
            raise _refuse("mention", "must be less than mentions", self.mention)
        if self.refused is not None:
            self._absent(text_fields, "on a refused mention")
            return
        self._check_mention()

    def _absent(self, names: tuple[str, ...], when: str) -> None:
        for name in names:
            if getattr(self, name) is not None:
                raise _refuse(name, f"is absent {when}", getattr(self, name))

    def _check_mention(self) -> None:
        for name in ("quote", "parses", "candidates", "choice"):
            if getattr(self, name) is None:
                raise _refuse(name, "is mandatory on a mention", None)
        assert self.quote is not None and self.parses is not None
        assert self.candidates is not None and self.choice is not None
        if not self.quote:
            raise _refuse("quote", "must be non-empty", self.quote)
        if len(self.parses) > MAX_PARSES:
            raise _refuse("parses", f"holds at most {MAX_PARSES} parses", len(self.parses))
        if self.problem is not None and self.parses:
            raise _refuse("problem", "comes only with empty parses", self.problem)
        if self.problem is None and not self.parses:
            raise _refuse("parses", 'are empty only with problem "unreadable"', self.parses)
        for position, candidate in enumerate(self.candidates):
            if candidate.said:
                raise _refuse(f"candidates[{position}].said", "is empty when filed", candidate.said)
            if not 0 <= candidate.parse < len(self.parses):
                raise _refuse(f"candidates[{position}].parse", "must name a parse", candidate.parse)
        _check_choice(self.choice, len(self.candidates))
        if self.problem is not None and self.choice != NoneChoice(why="unreadable"):
            raise _refuse("choice", "is {by: none, why: unreadable} when unreadable", self.choice)


def _check_choice(choice: Choice, count: int) -> None:
    if isinstance(choice, OnlyChoice) and count != 1:
        raise _refuse("choice", "is only with exactly one candidate", choice)
    if isinstance(choice, PolicyChoice) and not 0 <= choice.candidate < count:
        raise _refuse("choice.candidate", "must name a candidate", choice.candidate)
    if isinstance(choice, OpenChoice):
        for position, index in enumerate(choice.remaining):
            if isinstance(index, bool) or not 0 <= index < count:
                raise _refuse(f"choice.remaining[{position}]", "must name a candidate", index)


def _read(text: str, config: TimeConfig) -> object:
    reader = config.time_reader
    try:
        return reader.read(text)
    except TimeReaderError:
        raise
    except Exception as exc:
        raise TimeReaderError(f"time reader {reader.id} failed: {exc}", reader=reader.id) from exc


def _mention_fields(mention: Mention, clock: TimeClock, config: TimeConfig) -> dict[str, Any]:
    """The fields of one accepted mention's row: resolved, the policy applied, confirmation
    added."""
    if mention.problem == "unreadable":
        candidates: tuple[TimeCandidate, ...] = ()
        choice: Choice = NoneChoice(why="unreadable")
    else:
        resolution = resolve(mention.parses, clock=clock, policy=config.policy)
        candidates = resolution.candidates
        choice = with_confirm(apply_policy(resolution, config.policy))
    return {
        "quote": mention.quote,
        "parses": mention.parses,
        "problem": mention.problem,
        "candidates": candidates,
        "choice": choice,
    }


def read_message(
    text: str, *, clock: TimeClock, config: TimeConfig, turn: int
) -> list[TimeReadingRow]:
    """Read the person's message into the turn's ``time-reading`` rows (docs/time.md#readers,
    docs/time.md#row-kinds).

    The reader runs once; its output is validated; every accepted mention is resolved against
    ``clock`` and its choice filed with confirmation pending
    (docs/time.md#nothing-is-settled-without-the-person).

    Args:
        text: the message exactly as the person typed it.
        clock: the turn's clock (``turn_clock``).
        config: the agent's time config (reader and policy).
        turn: the turn number.

    Returns:
        One row per mention, in the reader's order, or a single row with ``mentions: 0``.

    Raises:
        TimeReaderError: the reader failed, or its output is not shaped ``{mentions: [...]}``.
    """
    checked = validate_reading(text, _read(text, config))
    row = partial(
        TimeReadingRow,
        turn=turn,
        iteration=FIRST_ITERATION,
        reader=reader_info(config.time_reader),
        tzdata=TZDATA_VERSION,
        mentions=len(checked),
    )
    if not checked:
        return [row()]
    return [
        row(mention=index, **_mention_fields(found, clock, config))
        if isinstance(found, Mention)
        else row(mention=index, refused=found.refused)
        for index, found in enumerate(checked)
    ]
