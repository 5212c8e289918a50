"""``TimeRange``, the single internal range type, and ``PersonWindow`` (docs/time.md#ranges,
docs/time.md#person-windows).

Both keep their ends as strict instant text (the wire form, JSON ``from``/``to``; Python
``start``/``end``) and parse them on demand, so a range encodes exactly as it was written.

Readings settled here:

* A range built by ``TimeRange.of`` writes each end canonically in its own offset; one built
  from text keeps the text as given (it must be strict).
* Equality and hashing of ``TimeRange`` and ``PersonWindow`` compare instants, never spellings.
* ``reach`` and the other lengths are integer nanoseconds.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

import msgspec

from afp_runtime.errors import InvalidValue, shown
from afp_runtime.time._instants import NS_PER_MS, Instant, parse_instant
from afp_runtime.time._wire import Wire

WindowSource = Literal["answered", "derived-from-reading", "control"]
"""Where a person window comes from (docs/time.md#person-windows)."""

WINDOW_SOURCES: Final[tuple[str, ...]] = get_args(WindowSource)


def _ends(start: object, end: object) -> tuple[Instant, Instant]:
    if not isinstance(start, str) or not isinstance(end, str):
        raise InvalidValue("a range's from and to must be instant text", value=shown((start, end)))
    first, last = parse_instant(start), parse_instant(end)
    if not first < last:
        raise InvalidValue(f"a range needs from < to, got {start} .. {end}", value=shown(start))
    return first, last


class TimeRange(Wire, frozen=True, kw_only=True):
    """A half-open range ``[from, to)`` of strict instants (docs/time.md#ranges).

    Attributes:
        start: the first instant covered (wire ``from``), strict instant text.
        end: the first instant not covered (wire ``to``), strict instant text, after ``start``.

    Two ranges are equal when their ends denote the same instants:
    ``08:00:00-07:00`` and ``15:00:00Z`` are the same bound.

    Raises:
        InvalidValue: an end is not a strict instant, or ``start`` is not before ``end``
            (a ``msgspec.ValidationError`` when decoding).
    """

    start: str = msgspec.field(name="from")
    end: str = msgspec.field(name="to")

    def __post_init__(self) -> None:
        _ends(self.start, self.end)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TimeRange):
            return NotImplemented
        return self.bounds() == other.bounds()

    def __hash__(self) -> int:
        return hash(self.bounds())

    @classmethod
    def of(cls, start: Instant, end: Instant) -> TimeRange:
        """The range ``[start, end)``, each end written canonically in its own offset."""
        return cls(start=start.text, end=end.text)

    @property
    def start_instant(self) -> Instant:
        """``start`` as an instant (in the offset it is written in)."""
        return parse_instant(self.start)

    @property
    def end_instant(self) -> Instant:
        """``end`` as an instant (in the offset it is written in)."""
        return parse_instant(self.end)

    def bounds(self) -> tuple[int, int]:
        """The two ends in nanoseconds since the epoch."""
        return self.start_instant.ns, self.end_instant.ns

    @property
    def reach_ns(self) -> int:
        """``to - 1 ms - from``: the distance from the first to the last instant covered.

        A cap is broken only when the reach exceeds it; a reach equal to it is within it.
        """
        first, last = self.bounds()
        return last - first - NS_PER_MS

    def utc(self) -> TimeRange:
        """The same range with both ends written canonically in UTC."""
        return TimeRange.of(self.start_instant.utc(), self.end_instant.utc())

    def interval(self) -> str:
        """``from/to`` as written (an ISO interval), as questions and answers spell a range."""
        return f"{self.start}/{self.end}"


def lookback_range(now: Instant, length_ms: int) -> TimeRange:
    """The look-back range of length L ending at ``now``: ``[now - L, now + 1 ms)``
    (docs/time.md#ranges).

    It covers ``now - L`` through ``now`` inclusive, so its reach is exactly L. Both ends are
    written in ``now``'s offset: ``24h`` at ``2026-10-09T15:40:00Z`` →
    ``2026-10-08T15:40:00Z .. 2026-10-09T15:40:00.001Z``.
    """
    return TimeRange.of(now.plus(-length_ms * NS_PER_MS), now.plus(NS_PER_MS))


def lookback_bounds(now: Instant, length_ms: int) -> TimeRange:
    """The look-back as bounds, ``[now - L, now)`` in ``now``'s offset; a binding accepts it
    for a span ending now (docs/time.md#sent-window-path)."""
    return TimeRange.of(now.plus(-length_ms * NS_PER_MS), now)


class PersonWindow(Wire, frozen=True, kw_only=True):
    """The window a call was filled from or matched to (docs/time.md#person-windows).

    Attributes:
        start: wire ``from``, strict instant text.
        end: wire ``to``, strict instant text, after ``start``.
        source: ``answered`` (confirmed or typed by the person), ``derived-from-reading`` (the
            single reading of a model-kind reader, never the person's) or ``control`` (set by a
            UI with the message).
        mention: index of the mention in the turn's readings; absent exactly when ``source`` is
            ``control``.

    Raises:
        InvalidValue: an end is not strict, ``from`` is not before ``to``, ``source`` is
            unknown, or ``mention`` is present for ``control`` / absent otherwise.
    """

    start: str = msgspec.field(name="from")
    end: str = msgspec.field(name="to")
    source: WindowSource
    mention: int | None = None

    def __post_init__(self) -> None:
        _ends(self.start, self.end)
        if self.source not in WINDOW_SOURCES:
            raise InvalidValue(
                f"a window source is one of {', '.join(WINDOW_SOURCES)}",
                value=shown(self.source),
            )
        mention = self.mention
        if self.source == "control":
            if mention is not None:
                raise InvalidValue("a control window has no mention", value=shown(mention))
        elif isinstance(mention, bool) or not isinstance(mention, int) or mention < 0:
            raise InvalidValue(
                f"a {self.source} window needs a mention index (an int >= 0)",
                value=shown(mention),
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PersonWindow):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[TimeRange, str, int | None]:
        return self.range, self.source, self.mention

    @classmethod
    def of(
        cls, time_range: TimeRange, source: WindowSource, mention: int | None = None
    ) -> PersonWindow:
        """The window of ``time_range`` (its text kept) from ``source``."""
        return cls(start=time_range.start, end=time_range.end, source=source, mention=mention)

    @property
    def range(self) -> TimeRange:
        """The window's range."""
        return TimeRange(start=self.start, end=self.end)
