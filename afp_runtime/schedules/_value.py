"""The ``Schedule`` value, its checks and its strict decoder (docs/schedules.md#a-schedule).

Every ``Schedule`` is checked when it is made — by ``schedule()``, by the constructor, by
``decode_schedule`` — so a value in hand always has a valid name, text, zone, catch-up policy
and exactly one valid form. A refusal is an ``InvalidValue`` whose ``field`` is the wire name
of the field (``name``, ``text``, ``at``, ``cron``, ``every``, ``zone``, ``catchUp``) and whose
message quotes the value and says what to write instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

import msgspec

from afp_runtime.errors import InvalidValue, decoded_path, shown
from afp_runtime.schedules._every import read_every
from afp_runtime.schedules._forms import check_at, check_cron
from afp_runtime.schedules._refuse import refuse
from afp_runtime.time import is_zone_name

CatchUp = Literal["latest", "all", "none"]
"""What a schedule does with due instants missed while no host ran it
(docs/schedules.md#catching-up)."""

CATCH_UPS: Final[tuple[str, ...]] = get_args(CatchUp)
TEXT_LIMIT: Final = 32_000
"""The longest text a schedule delivers, in code points."""
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_FORMS: Final = ("at", "cron", "every")


class Schedule(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    forbid_unknown_fields=True,
):
    """When an agent is woken and with what text (docs/schedules.md#a-schedule).

    Attributes:
        name: ``^[a-z0-9][a-z0-9._-]{0,63}$``; the inbox sender is ``schedule:`` + name.
        text: the inbox message delivered at each due instant (1 to 32,000 code points).
        at: once, at a local time in ``zone`` (``2026-12-08T09:00``) or an instant with an
            offset (``2026-12-08T09:00Z``, ``…+01:00``).
        cron: a 5-field cron expression matched on ``zone``'s wall clock.
        every: an English rule (docs/schedules.md#the-every-form).
        zone: a zone name (docs/time.md#zone-names-and-the-database); default ``UTC``.
        catch_up: wire ``catchUp``; ``latest`` (default), ``all`` or ``none``.

    Exactly one of ``at``, ``cron`` and ``every`` is given.

    Raises:
        InvalidValue: a field is invalid; ``field`` names it.
    """

    name: str
    text: str
    at: str | None = None
    cron: str | None = None
    every: str | None = None
    zone: str = "UTC"
    catch_up: CatchUp = "latest"

    def __post_init__(self) -> None:
        _check(self)


def _check(value: Schedule) -> None:
    if not isinstance(value.name, str) or not _NAME.fullmatch(value.name):
        raise refuse(
            "name",
            value.name,
            "a name is 1-64 of a-z 0-9 . _ - and starts with a letter or digit",
        )
    _check_text(value.text)
    zone = value.zone
    if not is_zone_name(zone):
        raise refuse(
            "zone",
            zone,
            "is not a zone name (Area/Location such as America/Los_Angeles, UTC or GMT)",
        )
    if value.catch_up not in CATCH_UPS:
        raise refuse("catchUp", value.catch_up, "is not one of latest, all, none")
    given = [form for form in _FORMS if getattr(value, form) is not None]
    if len(given) != 1:
        got = " and ".join(given) if given else "none"
        raise InvalidValue(
            f"a schedule has exactly one of at, cron or every; got {got}",
            field="every" if not given else given[-1],
        )
    form = given[0]
    text = getattr(value, form)
    if not isinstance(text, str):
        raise refuse(form, text, "is not a string")
    if form == "at":
        check_at(text, zone)
    elif form == "cron":
        check_cron(text)
    else:
        read_every(text)


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise refuse("text", text, "is not a string")
    if not text.strip():
        raise InvalidValue("text: a schedule delivers a text that is not blank", field="text")
    if len(text) > TEXT_LIMIT:
        raise InvalidValue(f"text: {len(text)} code points, more than {TEXT_LIMIT:,}", field="text")
    if any("\ud800" <= char <= "\udfff" for char in text):
        raise InvalidValue("text: holds a lone surrogate (not valid Unicode)", field="text")


def schedule(
    name: str,
    text: str,
    *,
    at: str | None = None,
    cron: str | None = None,
    every: str | None = None,
    zone: str = "UTC",
    catch_up: CatchUp = "latest",
) -> Schedule:
    """Build and check a schedule.

    Raises:
        InvalidValue: a field is invalid; ``field`` names it (``name``, ``text``, ``at``,
            ``cron``, ``every``, ``zone``, ``catchUp``) and the message says what was wrong.
    """
    return Schedule(
        name=name, text=text, at=at, cron=cron, every=every, zone=zone, catch_up=catch_up
    )


def check_schedule(value: Schedule) -> Schedule:
    """The same checks as ``schedule()`` on a value made elsewhere; returns it unchanged.

    Raises:
        InvalidValue: a field is invalid (see ``schedule``).
    """
    if not isinstance(value, Schedule):
        raise InvalidValue(f"a schedule is a Schedule, not {shown(value)}", field="schedule")
    _check(value)
    return value


def decode_schedule(data: bytes | Mapping[str, Any]) -> Schedule:
    """Decode a schedule from JSON bytes or a mapping with camelCase keys, strictly: unknown
    keys, missing keys and wrong types are refused as are bad values.

    Raises:
        InvalidValue: ``field`` is the path of what was wrong (``catchUp``, ``every``,
            ``extra``…) and the message says what.
    """
    try:
        if isinstance(data, bytes | bytearray | memoryview):
            return msgspec.json.decode(data, type=Schedule)
        if not isinstance(data, Mapping):
            raise InvalidValue(f"a schedule is an object, not {shown(data)}", field="schedule")
        return msgspec.convert(dict(data), type=Schedule)
    except msgspec.ValidationError as exc:
        path, detail = decoded_path(exc)
        if isinstance(exc.__cause__, InvalidValue):
            raise InvalidValue(detail, field=path or "schedule") from None
        raise InvalidValue(
            f"schedule is invalid at {path or '(top)'}: {detail}", field=path or "schedule"
        ) from None
    except msgspec.DecodeError as exc:
        raise InvalidValue(f"schedule is not JSON: {exc}", field="schedule") from None
