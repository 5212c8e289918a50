"""Time readers and the check of what they return (docs/time.md#readers).

A reader is a pluggable strategy that turns the text a person typed into *mentions*: each
mention quotes the words it came from and lists the ``TimeParts`` those words may mean, or says
they could not be read. A reader resolves nothing — no clock, zone or policy reaches it.

Whatever a reader returns goes through ``validate_reading`` before anything is filed, so a
model-kind reader that invents a quote or a shape cannot put words in the person's mouth:

* the output is ``{mentions: [...]}``, else ``TimeReaderError`` (the turn is held with
  ``errorKind: time-reader``);
* ``quote`` occurs character for character in the text, else the mention is refused
  ``quote-not-in-text``;
* the mention and its parts have the documented shapes, else it is refused ``malformed``;
* ``problem: "unreadable"`` comes only with empty ``parses``, else ``malformed``;
* at most 16 mentions and at most 4 parses each: the surplus mentions, and a mention with
  more parses, are refused ``malformed``.

Readings settled here:

* A refused mention keeps its place (its index is the row's ``mention``) and no text.
* ``quote`` must be a non-empty string; a mention with empty ``parses`` must say
  ``problem: "unreadable"`` (an empty reading of readable words means nothing), otherwise the
  mention is ``malformed``. A ``quote`` that is not a string is ``malformed``; a string quote
  that is not in the text is ``quote-not-in-text`` even if its parts are also malformed (the
  table's first check wins).
* Every ``zoneToken`` of a parse must occur in its mention's quote ("exactly as typed"),
  else the mention is ``malformed``.
* A mention with more than four parses is refused as a whole rather than cut, so no reading
  the reader did not stand behind is filed.
* Raw output may be a ``Reading``, the builtins JSON decodes to (a mapping), or JSON text;
  anything else, and a mapping with keys other than ``mentions``, is not shaped
  ``{mentions: [...]}``. ``null`` for an optional key is taken as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, Protocol

import msgspec

from afp_runtime.errors import TimeReaderError, shown
from afp_runtime.time._parts import TimeParts
from afp_runtime.time._wire import Wire

MAX_MENTIONS: Final[int] = 16
"""Mentions beyond the sixteenth are refused ``malformed``."""
MAX_PARSES: Final[int] = 4
"""A mention with more parses than this is refused ``malformed``."""

ReaderKind = Literal["rule", "model"]
"""``rule``: deterministic rules; ``model``: a model reads the words (its single window may
fill a call as ``derived-from-reading``, docs/time.md#person-windows)."""

MentionRefusal = Literal["quote-not-in-text", "malformed"]
"""Why a mention of a reader's output was refused."""


class Mention(Wire, frozen=True, kw_only=True):
    """Words of the message that refer to a time: wire ``{quote, parses, problem?}``.

    Attributes:
        quote: the words exactly as typed (a substring of the message, code points).
        parses: what the words may mean, at most four; empty when unreadable.
        problem: ``"unreadable"`` when the words refer to a time the reader cannot read.
    """

    quote: str
    parses: tuple[TimeParts, ...]
    problem: Literal["unreadable"] | None = None

    def __post_init__(self) -> None:
        if not self.quote:
            raise ValueError("quote must be non-empty")
        if self.problem is not None and self.parses:
            raise ValueError('problem "unreadable" comes only with empty parses')
        if self.problem is None and not self.parses:
            raise ValueError('a mention without parses must say problem "unreadable"')
        if len(self.parses) > MAX_PARSES:
            raise ValueError(f"at most {MAX_PARSES} parses per mention")


class Reading(Wire, frozen=True, kw_only=True):
    """What a reader found in one message: wire ``{mentions: [...]}``, in text order.

    Attributes:
        mentions: the mentions; empty when the message names no time.
    """

    mentions: tuple[Mention, ...]


class RefusedMention(Wire, frozen=True, kw_only=True):
    """A mention ``validate_reading`` refused: wire ``{refused}``; it keeps no text.

    Attributes:
        refused: ``quote-not-in-text`` or ``malformed``.
    """

    refused: MentionRefusal


CheckedMention = Mention | RefusedMention
"""One mention after validation: accepted as it came, or refused."""


class ReaderInfo(Wire, frozen=True, kw_only=True):
    """Which reader read a message, as a ``time-reading`` row names it: wire ``{id, version,
    kind, locale}``."""

    id: str
    version: str
    kind: ReaderKind
    locale: str


class TimeReader(Protocol):
    """A strategy that reads the person's words (docs/time.md#readers): ``{id, version, locale,
    kind, read(text)}``.

    ``read`` should return a ``Reading``; whatever it returns is checked by
    ``validate_reading`` before use, so a model-kind reader may return decoded JSON as is.
    ``read`` must not read a clock or know the person's zone.
    """

    @property
    def id(self) -> str:
        """The reader's name, e.g. ``afp/english``."""
        ...

    @property
    def version(self) -> str:
        """The reader's version, filed with every reading."""
        ...

    @property
    def locale(self) -> str:
        """The language the reader reads, e.g. ``en-US``."""
        ...

    @property
    def kind(self) -> ReaderKind:
        """``rule`` or ``model``."""
        ...

    def read(self, text: str) -> object:
        """The mentions of time in ``text`` (ideally a ``Reading``)."""
        ...


def reader_info(reader: TimeReader) -> ReaderInfo:
    """The ``reader {id, version, kind, locale}`` of a ``time-reading`` row for ``reader``."""
    return ReaderInfo(id=reader.id, version=reader.version, kind=reader.kind, locale=reader.locale)


def _not_shaped(raw: object, why: str) -> TimeReaderError:
    return TimeReaderError(
        f"time reader output is not shaped {{mentions: [...]}}: {why}", value=shown(raw)
    )


def _mentions_of(raw: object) -> list[Any]:
    if isinstance(raw, Reading):
        raw = msgspec.to_builtins(raw)
    elif isinstance(raw, str | bytes | bytearray):
        try:
            raw = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise _not_shaped(raw, "not JSON") from exc
    if not isinstance(raw, Mapping):
        raise _not_shaped(raw, "not an object")
    if set(raw) != {"mentions"}:
        raise _not_shaped(raw, "the object's only key must be mentions")
    mentions = raw["mentions"]
    if not isinstance(mentions, list | tuple):
        raise _not_shaped(raw, "mentions is not a list")
    return list(mentions)


def _zone_tokens(parts: TimeParts) -> list[str]:
    holders = (parts, *(parts.range_of or ()))
    return [holder.zone_token for holder in holders if holder.zone_token is not None]


def _check_mention(text: str, raw: object) -> CheckedMention:
    quote = raw.get("quote") if isinstance(raw, Mapping) else None
    if not isinstance(quote, str):
        return RefusedMention(refused="malformed")
    if quote not in text:
        return RefusedMention(refused="quote-not-in-text")
    try:
        mention = msgspec.convert(raw, Mention, strict=True)
    except (msgspec.ValidationError, ValueError, TypeError):
        return RefusedMention(refused="malformed")
    for parts in mention.parses:
        if any(token not in quote for token in _zone_tokens(parts)):
            return RefusedMention(refused="malformed")
    return mention


def validate_reading(text: str, raw: object) -> tuple[CheckedMention, ...]:
    """Check a reader's output for the message ``text`` (docs/time.md#readers), mention by mention.

    Args:
        text: the message exactly as the person typed it.
        raw: what the reader's ``read`` returned: a ``Reading``, decoded JSON or JSON text.

    Returns:
        One entry per mention of the output, in its order: the ``Mention`` when it passed
        every check, else a ``RefusedMention`` saying why (the sixteenth is the last mention
        that can pass).

    Raises:
        TimeReaderError: the output is not shaped ``{mentions: [...]}``.
    """
    return tuple(
        _check_mention(text, found) if index < MAX_MENTIONS else RefusedMention(refused="malformed")
        for index, found in enumerate(_mentions_of(raw))
    )
