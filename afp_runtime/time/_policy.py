"""The time policy, the ``choice`` it leaves, and confirmation
(docs/time.md#policy-and-confirmation).

A ``TimePolicy`` can only *discard* candidates: with ``dateOrder: MDY`` the day-first and
year-first readings of ``10/09/26`` go, with ``year: current`` the previous-year readings of
``Sept 29`` go. ``apply_policy`` says what is left as a ``choice``; ``with_confirm`` turns it
into the choice a ``time-reading`` row files, where every reading still waits for the person
(docs/time.md#nothing-is-settled-without-the-person).

Wire shapes (JSON keys camelCase; absent keys omitted):

* ``TimePolicy {dateOrder: ask | MDY | DMY | YMD = ask, year: ask | current = ask,
  abbreviations?: {token: zone}}`` — a config table; unknown keys are refused.
* ``choice``, tagged on ``by``; indices are positions in the row's ``candidates`` (which keeps
  every candidate, discarded ones included):

  - ``{by: "only"}`` — a single window survives and the policy removed nothing; it is then
    the row's only distinct window and its index is 0;
  - ``{by: "policy", candidate, policy}`` — the policy left a single window;
  - ``{by: "open", remaining: [i…], open: [question…], policy?}`` — several windows remain, or
    a zone is needed; ``remaining`` is ascending;
  - ``{by: "none", why: unreadable | unsupported | no-candidate | excluded-by-policy}``.

  ``policy`` (the settings that discarded something) is ``{dateOrder?: MDY | DMY | YMD,
  year?: current}``. Questions are listed in this order: ``date-order``, ``year``,
  ``meridiem``, ``dst``, ``zone``, ``abbreviation``, ``parse``, ``confirm``.
* As filed (``with_confirm``) a choice is ``open`` or ``none`` only: ``only`` becomes
  ``{by: open, remaining: [0], open: [confirm]}``, ``policy`` becomes ``{by: open, remaining:
  [candidate], open: [confirm], policy}``, an ``open`` with candidates gets ``confirm``
  appended, and ``{by: open, remaining: [], open: [zone]}`` (a zone is needed before anything
  can be offered) stays as it is.

Readings settled here, beyond what docs/time.md#policy-and-confirmation states:

* Candidates drawing the same window (same instants, zone and window kind) count as one:
  ``remaining`` keeps the lowest index of each, and a question is open only when the windows
  that remain differ on it. So ``10/10/2026`` (month-day and day-month agree) is a single
  window.
* ``dateOrder`` keeps readings tagged with the same order, and for two-field dates: ``MDY``
  and ``YMD`` keep month-day (``MD``), ``DMY`` keeps day-month (``DM``). Candidates without
  the tag are always kept; likewise for ``year``.
* The questions: ``date-order``, ``year``, ``meridiem`` (start or end), ``abbreviation`` when
  the remaining windows carry different tags; ``dst`` when they carry different DST notes;
  ``parse`` when they come from different parses; ``zone`` when a parse needs a zone.
* With no candidate at all: a needed zone gives ``open [zone]``; else ``unsupported`` when a
  parse was unsupported; else ``no-candidate``.
* ``abbreviations`` keys are matched exactly as typed (``PST``, not ``pst``), 1-100 code
  points; values are accepted zone names.
* A bad value raises ``AgentDefinitionError`` naming the field under ``time.policy``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Literal, get_args

from afp_runtime.errors import AgentDefinitionError, shown
from afp_runtime.time._candidates import DstGap, DstOverlap, Resolution, TimeCandidate
from afp_runtime.time._parts import MAX_ZONE_TOKEN
from afp_runtime.time._wire import Wire
from afp_runtime.time._zones import is_zone_name

DateOrder = Literal["ask", "MDY", "DMY", "YMD"]
"""How numeric dates are read: ask the person, or one order."""

YearPolicy = Literal["ask", "current"]
"""How a date without a year is read: ask the person, or the clock's year."""

OpenQuestion = Literal[
    "date-order", "year", "meridiem", "dst", "zone", "abbreviation", "parse", "confirm"
]
"""A question a choice leaves open (docs/time.md#the-time-policy)."""

NoneWhy = Literal["unreadable", "unsupported", "no-candidate", "excluded-by-policy"]
"""Why nothing can be offered (docs/time.md#the-time-policy)."""

DATE_ORDERS: Final[tuple[str, ...]] = get_args(DateOrder)
YEAR_POLICIES: Final[tuple[str, ...]] = get_args(YearPolicy)

# Which reading tags each date-order policy keeps (two-field dates: month-day or day-month).
_KEEPS: Final[dict[str, frozenset[str]]] = {
    "MDY": frozenset({"MDY", "MD"}),
    "DMY": frozenset({"DMY", "DM"}),
    "YMD": frozenset({"YMD", "MD"}),
}


def refuse_setting(field: str, why: str, value: object) -> AgentDefinitionError:
    """An ``AgentDefinitionError`` naming a setting under ``time`` and its value."""
    return AgentDefinitionError(f"{field} {why}", field=field, value=shown(value))


class TimePolicy(Wire, frozen=True, kw_only=True):
    """What the agent settles without asking (docs/time.md#the-time-policy): wire ``{dateOrder,
    year, abbreviations?}``.

    Attributes:
        date_order: wire ``dateOrder``; ``ask`` (default), ``MDY``, ``DMY`` or ``YMD``.
        year: ``ask`` (default) or ``current`` (a date without a year is in the clock's year).
        abbreviations: zone abbreviations the agent maps, token → zone name (nothing is
            mapped by default; an unmapped abbreviation needs a zone).

    Raises:
        AgentDefinitionError: a value is not one of the above (names the field).
    """

    date_order: DateOrder = "ask"
    year: YearPolicy = "ask"
    abbreviations: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if self.date_order not in DATE_ORDERS:
            raise refuse_setting(
                "time.policy.dateOrder", f"must be one of {', '.join(DATE_ORDERS)}", self.date_order
            )
        if self.year not in YEAR_POLICIES:
            raise refuse_setting("time.policy.year", "must be ask or current", self.year)
        if self.abbreviations is None:
            return
        if not isinstance(self.abbreviations, dict):
            raise refuse_setting("time.policy.abbreviations", "must be a table", self.abbreviations)
        for token, zone in self.abbreviations.items():
            field = f"time.policy.abbreviations.{token}"
            if not isinstance(token, str) or not token.strip() or len(token) > MAX_ZONE_TOKEN:
                raise refuse_setting(
                    field, f"must be a token of 1-{MAX_ZONE_TOKEN} code points", token
                )
            if not is_zone_name(zone):
                raise refuse_setting(field, "must be a zone name (Area/Location, UTC or GMT)", zone)


class AppliedPolicy(Wire, frozen=True, kw_only=True):
    """The policy settings that discarded candidates: wire ``{dateOrder?, year?}``.

    Attributes:
        date_order: wire ``dateOrder``; the order applied.
        year: ``current`` when applied.
    """

    date_order: Literal["MDY", "DMY", "YMD"] | None = None
    year: Literal["current"] | None = None


class _Choice(Wire, frozen=True, kw_only=True, tag_field="by"):
    """Base of the choices, tagged on ``by``."""


class OnlyChoice(_Choice, frozen=True, kw_only=True, tag="only"):
    """A single window survives, the policy removing nothing: wire ``{by: "only"}``."""


class PolicyChoice(_Choice, frozen=True, kw_only=True, tag="policy"):
    """The policy left a single window: wire ``{by: "policy", candidate, policy}``.

    Attributes:
        candidate: the index of the surviving candidate.
        policy: the settings that discarded the others.
    """

    candidate: int
    policy: AppliedPolicy


class OpenChoice(_Choice, frozen=True, kw_only=True, tag="open"):
    """Questions are open: wire ``{by: "open", remaining, open, policy?}``.

    Attributes:
        remaining: indices of the remaining candidates, ascending (one per distinct window).
        open: the open questions, in the order of ``OpenQuestion``.
        policy: the settings that discarded candidates, when any did.
    """

    remaining: tuple[int, ...]
    open: tuple[OpenQuestion, ...]
    policy: AppliedPolicy | None = None


class NoneChoice(_Choice, frozen=True, kw_only=True, tag="none"):
    """Nothing can be offered: wire ``{by: "none", why}``.

    Attributes:
        why: ``unreadable``, ``unsupported``, ``no-candidate`` or ``excluded-by-policy``.
    """

    why: NoneWhy


Choice = OnlyChoice | PolicyChoice | OpenChoice | NoneChoice
"""What the policy leaves of a mention's candidates (docs/time.md#the-time-policy)."""


def _keeps(candidate: TimeCandidate, policy: TimePolicy, setting: str) -> bool:
    if setting == "date_order":
        order = candidate.reading.date_order
        return order is None or order in _KEEPS[policy.date_order]
    year = candidate.reading.year
    return year is None or year == "current"


def _window_key(candidate: TimeCandidate) -> tuple[object, ...]:
    return (candidate.range.bounds(), candidate.zone, candidate.lookback)


def _distinct(candidates: Sequence[TimeCandidate], indices: Sequence[int]) -> list[int]:
    """The lowest index of each distinct window among ``indices``."""
    first: dict[tuple[object, ...], int] = {}
    for index in indices:
        first.setdefault(_window_key(candidates[index]), index)
    return list(first.values())


def _dst(candidate: TimeCandidate) -> tuple[object, ...]:
    return tuple(note for note in candidate.notes if isinstance(note, DstOverlap | DstGap))


def open_questions(
    candidates: Sequence[TimeCandidate], remaining: Sequence[int], *, needs_zone: bool = False
) -> tuple[OpenQuestion, ...]:
    """The questions the ``remaining`` candidates leave open, in the order of ``OpenQuestion``
    (``confirm`` excluded: ``with_confirm`` adds it)."""
    chosen = [candidates[index] for index in remaining]

    def differ(key: Callable[[TimeCandidate], object]) -> bool:
        return len({key(candidate) for candidate in chosen}) > 1

    asked: list[tuple[OpenQuestion, bool]] = [
        ("date-order", differ(lambda c: c.reading.date_order)),
        ("year", differ(lambda c: c.reading.year)),
        ("meridiem", differ(lambda c: (c.reading.meridiem, c.reading.end_meridiem))),
        ("dst", differ(_dst)),
        ("zone", needs_zone),
        ("abbreviation", differ(lambda c: c.reading.abbreviation)),
        ("parse", differ(lambda c: c.parse)),
    ]
    return tuple(question for question, is_open in asked if is_open)


def apply_policy(resolution: Resolution, policy: TimePolicy) -> Choice:
    """What ``policy`` leaves of a mention's candidates (docs/time.md#the-time-policy), before
    confirmation.

    The policy only discards candidates; indices refer to ``resolution.candidates``.

    Args:
        resolution: the resolver's output for one mention.
        policy: the agent's policy.

    Returns:
        ``only``, ``policy``, ``open`` or ``none`` (module docstring).
    """
    candidates = resolution.candidates
    if not candidates:
        if resolution.needs_zone:
            return OpenChoice(remaining=(), open=("zone",))
        return NoneChoice(why="unsupported" if resolution.unsupported else "no-candidate")
    kept = list(range(len(candidates)))
    applied: dict[str, str] = {}
    for setting, value in (("date_order", policy.date_order), ("year", policy.year)):
        if value != "ask":
            narrowed = [i for i in kept if _keeps(candidates[i], policy, setting)]
            if len(narrowed) < len(kept):
                applied[setting] = value
            kept = narrowed
    if not kept:
        return NoneChoice(why="excluded-by-policy")
    settings = AppliedPolicy(**applied) if applied else None  # type: ignore[arg-type]
    remaining = _distinct(candidates, kept)
    if len(remaining) == 1 and not resolution.needs_zone:
        if settings is None:
            return OnlyChoice()
        return PolicyChoice(candidate=remaining[0], policy=settings)
    questions = open_questions(candidates, remaining, needs_zone=resolution.needs_zone)
    return OpenChoice(remaining=tuple(remaining), open=questions, policy=settings)


def with_confirm(choice: Choice) -> Choice:
    """The choice as filed: every reading waits for the person
    (docs/time.md#nothing-is-settled-without-the-person).

    ``only`` and ``policy`` become ``open`` with ``confirm``; ``confirm`` is appended to an
    ``open`` choice with candidates; an ``open`` choice without candidates (a zone is needed
    first) and ``none`` are unchanged.
    """
    if isinstance(choice, OnlyChoice):
        return OpenChoice(remaining=(0,), open=("confirm",))
    if isinstance(choice, PolicyChoice):
        return OpenChoice(remaining=(choice.candidate,), open=("confirm",), policy=choice.policy)
    if isinstance(choice, OpenChoice) and choice.remaining and "confirm" not in choice.open:
        return OpenChoice(
            remaining=choice.remaining, open=(*choice.open, "confirm"), policy=choice.policy
        )
    return choice
