"""The turn's windows, its mentions and its open readings, derived from filed rows
(docs/time.md#windows-of-a-turn-and-open-readings).

``turn_windows_of(rows, turn)`` reads only what the ledger holds for one turn: the ``time-reading``
rows the turn's first ``seed`` filed, the ``time-answer`` rows an answer filed, and the turn's
``clock`` row (its ``control`` window). Nothing here re-reads words or the clock, so every run of
a turn — pauses, answers days later, recovery — sees the same windows.

Rows are read in their **wire form** (camelCase keys): a JSON object, a ``msgspec.Struct`` that
encodes to one, or a carried row with ``kind`` and ``fields`` (the findings ledger's
``ForeignRow``). Of a ``time-reading`` row only these fields are read: ``mentions``, ``mention``,
``refused``, ``quote``, ``reader.kind``, and per candidate ``range {from, to}``, ``zone`` and
``window {kind, duration?}``, and ``choice {by, remaining?, candidate?, open?}``.

Readings settled here:

* The surviving candidates of a mention: ``remaining`` for ``by: open``; ``candidate`` for
  ``by: policy``; the single candidate for ``by: only``; none for ``by: none``.
* Several ``time-answer`` rows for one mention: the last one counts.
* The control window comes after the reading mentions in ``windows``; it has no quote, so a
  declared quote never points at it.
* An answered range "coincides with" a span-ending-now candidate when the instants are equal; the
  window then keeps that candidate's ``lookback`` duration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from afp_runtime.time._convert import AskedWindow
from afp_runtime.time._ranges import PersonWindow, TimeRange, WindowSource

AnswerHow = Literal["confirmed", "edited"]
"""How a ``time-answer`` came about: one of the offered choices, or a typed range
(docs/time.md#recording-an-accepted-answer)."""


class OpenReading(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One surviving candidate of an open mention (docs/time.md#how-mentions-become-windows).

    Attributes:
        range: the candidate's range, as filed (written in the offset the person intended).
        zone: the candidate's zone (the mention's zone, docs/time.md#zone-names-and-the-database).
        lookback: the duration when the candidate is a span ending now.
        candidate: the candidate's index in its row's ``candidates``.
    """

    range: TimeRange
    zone: str
    lookback: str | None = None
    candidate: int = 0

    def asked(self) -> AskedWindow:
        """The reading as a window to write (docs/time.md#writing-a-window-into-a-form)."""
        return AskedWindow(range=self.range, lookback=self.lookback)


class OpenMention(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A mention still waiting for the person (docs/time.md#how-mentions-become-windows step 3).

    Attributes:
        mention: the mention's index in the turn's readings.
        quote: the person's words.
        readings: the surviving candidates; empty when waiting for a zone or unreadable.
        needs_zone: the filed choice has the open question ``zone`` (wire ``needsZone``): the
            time question asks for a zone first (docs/time.md#question-shapes).
        unreadable: the words could not be read (``problem: unreadable``).
    """

    mention: int
    quote: str
    readings: tuple[OpenReading, ...] = ()
    needs_zone: bool = False
    unreadable: bool = False


class TurnWindow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One of the turn's windows (docs/time.md#how-mentions-become-windows).

    Attributes:
        range: the window's range, as filed (an answer's ``from``/``to``, a candidate's range or
            the control window).
        zone: the window's zone: the answer's, the candidate's, or the clock's for ``control``.
        source: ``answered``, ``derived-from-reading`` or ``control``.
        mention: the mention index; None for ``control``.
        quote: the mention's words; None for ``control``.
        answer: for ``answered``: ``confirmed`` or ``edited``.
        lookback: the duration when the window is a span ending now.
    """

    range: TimeRange
    zone: str
    source: WindowSource
    mention: int | None = None
    quote: str | None = None
    answer: AnswerHow | None = None
    lookback: str | None = None

    def person(self) -> PersonWindow:
        """The window as a row's ``person`` (docs/time.md#person-windows)."""
        return PersonWindow.of(self.range, self.source, self.mention)

    def asked(self) -> AskedWindow:
        """The window as a window to write (docs/time.md#writing-a-window-into-a-form)."""
        return AskedWindow(range=self.range, lookback=self.lookback)


class TurnWindows(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The turn's windows, how many mentions it has, and the open ones
    (docs/time.md#how-mentions-become-windows).

    Attributes:
        windows: the windows, in mention order, the control window last.
        mentions: the number of mentions: readable, unreadable, open and control alike.
        open: the mentions still open, in mention order; ``open[0].readings`` is what the fill
            path of a single open mention judges (docs/time.md#fill-path).
    """

    windows: tuple[TurnWindow, ...] = ()
    mentions: int = 0
    open: tuple[OpenMention, ...] = ()


def wire_row(row: object) -> Mapping[str, Any] | None:
    """A ledger row as its wire mapping (camelCase keys), or None when it is not one.

    Accepts a JSON object, a ``msgspec.Struct`` (encoded to builtins) or a carried row with
    ``kind`` and ``fields`` attributes (the findings ledger's ``ForeignRow``).
    """
    if isinstance(row, Mapping):
        return row
    fields = getattr(row, "fields", None)
    kind = getattr(row, "kind", None)
    if isinstance(fields, Mapping) and isinstance(kind, str):
        return {"kind": kind, **fields}
    if isinstance(row, msgspec.Struct):
        built = msgspec.to_builtins(row)
        return built if isinstance(built, Mapping) else None
    return None


def rows_of_turn(rows: Iterable[object], turn: int) -> list[Mapping[str, Any]]:
    """The wire rows of one turn, oldest first."""
    wire = (wire_row(row) for row in rows)
    return [row for row in wire if row is not None and row.get("turn") == turn]


def _range_of(raw: object) -> TimeRange | None:
    if not isinstance(raw, Mapping):
        return None
    try:
        return TimeRange(start=raw.get("from"), end=raw.get("to"))  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return None


def _lookback_of(candidate: Mapping[str, Any]) -> str | None:
    window = candidate.get("window")
    if isinstance(window, Mapping) and window.get("kind") == "lookback":
        duration = window.get("duration")
        return duration if isinstance(duration, str) else None
    return None


def _surviving(row: Mapping[str, Any]) -> list[int]:
    candidates = row.get("candidates")
    count = len(candidates) if isinstance(candidates, Sequence) else 0
    choice = row.get("choice")
    if not isinstance(choice, Mapping):
        return []
    by = choice.get("by")
    picked: list[object] = []
    if by == "open":
        remaining = choice.get("remaining")
        picked = list(remaining) if isinstance(remaining, Sequence) else []
    elif by == "policy":
        picked = [choice.get("candidate")]
    elif by == "only" and count == 1:
        picked = [0]
    return [i for i in picked if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < count]


def _reading(row: Mapping[str, Any], index: int) -> OpenReading | None:
    candidate = row["candidates"][index]
    if not isinstance(candidate, Mapping):
        return None
    found = _range_of(candidate.get("range"))
    zone = candidate.get("zone")
    if found is None or not isinstance(zone, str):
        return None
    return OpenReading(range=found, zone=zone, lookback=_lookback_of(candidate), candidate=index)


def _is_model_confirm(row: Mapping[str, Any]) -> bool:
    reader = row.get("reader")
    choice = row.get("choice")
    return (
        isinstance(reader, Mapping)
        and reader.get("kind") == "model"
        and isinstance(choice, Mapping)
        and choice.get("by") == "open"
        and list(choice.get("open") or ()) == ["confirm"]
    )


def _needs_zone(row: Mapping[str, Any]) -> bool:
    choice = row.get("choice")
    return isinstance(choice, Mapping) and "zone" in list(choice.get("open") or ())


def _answered(row: Mapping[str, Any], answer: Mapping[str, Any], quote: str) -> TurnWindow | None:
    found = _range_of(answer)
    zone = answer.get("zone")
    how = answer.get("how")
    if found is None or not isinstance(zone, str):
        return None
    # The answer keeps the duration of a span-ending-now candidate it coincides with.
    candidates = [c for c in row.get("candidates") or () if isinstance(c, Mapping)]
    spans = [c for c in candidates if _lookback_of(c) is not None]
    lookback = next((_lookback_of(c) for c in spans if _range_of(c.get("range")) == found), None)
    return TurnWindow(
        range=found,
        zone=zone,
        source="answered",
        mention=row["mention"],
        quote=quote,
        answer=how if how in ("confirmed", "edited") else None,
        lookback=lookback,
    )


def turn_windows_of(rows: Iterable[object], turn: int) -> TurnWindows:
    """The turn's windows, mention count and open mentions, from filed rows only
    (docs/time.md#how-mentions-become-windows).

    Every ``time-reading`` mention with a quote that was not refused counts as one mention:

    1. with a ``time-answer`` for it → an ``answered`` window (the answer's range and zone,
       ``answer: confirmed|edited``, and ``lookback`` when the range coincides with a
       span-ending-now candidate);
    2. otherwise, for a model-kind reader whose choice is ``open`` with only ``["confirm"]`` →
       a ``derived-from-reading`` window of its single remaining candidate;
    3. otherwise the mention is open, with its surviving candidates as readings.

    A ``control`` window on the clock row adds one further mention (no mention index, the
    clock's zone). Refused mentions and ``mentions: 0`` rows add nothing.

    Args:
        rows: ledger rows (wire mappings, structs or carried rows), oldest first.
        turn: the turn to read.
    """
    wire = rows_of_turn(rows, turn)
    answers: dict[int, Mapping[str, Any]] = {}
    for row in wire:
        mention = row.get("mention")
        if row.get("kind") == "time-answer" and isinstance(mention, int):
            answers[mention] = row
    windows: list[TurnWindow] = []
    open_: list[OpenMention] = []
    mentions = 0
    seen: set[int] = set()
    for row in wire:
        mention = row.get("mention")
        quote = row.get("quote")
        if (
            row.get("kind") != "time-reading"
            or not isinstance(mention, int)
            or isinstance(mention, bool)
            or mention in seen
            or "refused" in row
            or not isinstance(quote, str)
        ):
            continue
        seen.add(mention)
        mentions += 1
        answered = _answered(row, answers[mention], quote) if mention in answers else None
        if answered is not None:
            windows.append(answered)
            continue
        surviving = [r for r in (_reading(row, i) for i in _surviving(row)) if r is not None]
        if _is_model_confirm(row) and len(surviving) == 1:
            only = surviving[0]
            windows.append(
                TurnWindow(
                    range=only.range,
                    zone=only.zone,
                    source="derived-from-reading",
                    mention=mention,
                    quote=quote,
                    lookback=only.lookback,
                )
            )
            continue
        open_.append(
            OpenMention(
                mention=mention,
                quote=quote,
                readings=tuple(surviving),
                needs_zone=_needs_zone(row),
                unreadable=row.get("problem") == "unreadable",
            )
        )
    clock = next((row for row in wire if row.get("kind") == "clock"), {})
    control = _range_of(clock.get("window"))
    zone = clock.get("zone")
    if control is not None and isinstance(zone, str):
        windows.append(TurnWindow(range=control, zone=zone, source="control"))
        mentions += 1
    return TurnWindows(windows=tuple(windows), mentions=mentions, open=tuple(open_))
