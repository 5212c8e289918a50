"""Recall for people: one answer shape and one reading of the words a person types, for the
three doors that search what left an agent's window (``GET /v1/agents/{agentId}/recall``,
``afp recall``, the inspector's folds page; docs/recall.md#for-people).

Litestar-free, so ``afp recall`` prints the very same body without loading the HTTP stack. Each
door calls ``recall_answer``, which translates the text it was given and calls the one use case
``app.recall``; a refusal is ``InvalidValue`` naming the parameter as the API spells it (``q``,
``since``, ``until``, ``limit``).
"""

from __future__ import annotations

import re
from datetime import date

import msgspec

from afp_runtime.app import recall
from afp_runtime.errors import InvalidValue
from afp_runtime.store import RecallHit, Store

__all__ = ["RecallAnswer", "instant_ms", "recall_answer"]

# A UTC date, or an instant with its offset (seconds and a fraction optional); or epoch
# milliseconds. ASCII digits only: ``\d`` would take any script's digits.
_WHEN = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2}))?",
    re.ASCII,
)
_EPOCH_MS = re.compile(r"[0-9]{1,15}", re.ASCII)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_MS_PER_DAY = 86_400_000
_WHEN_RULE = (
    "an instant (2026-04-01T09:30:00Z, or with an offset such as +02:00), a UTC date "
    "(2026-04-01, its midnight) or epoch milliseconds"
)


class RecallAnswer(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What a recall search answers (docs/recall.md#for-people).

    Attributes:
        agent_id: the agent searched (wire ``agentId``).
        query: the query as it was given.
        items: the hits, best first, bounded by ``app.recall`` (docs/recall.md#search).
    """

    agent_id: str
    query: str
    items: list[RecallHit]


def instant_ms(field: str, text: str | None) -> int | None:
    """``text`` (``since`` or ``until``) as epoch milliseconds; None when not given.

    Raises:
        InvalidValue: neither an instant, a date nor epoch milliseconds, naming ``field``.
    """
    if text is None:
        return None
    if _EPOCH_MS.fullmatch(text):
        return int(text)
    found = _WHEN.fullmatch(text)
    if found is None:
        raise InvalidValue(f"{field} must be {_WHEN_RULE}", field=field, value=text[:200])
    year, month, day, hour, minute, second, fraction, zone = found.groups()
    try:
        days = date(int(year), int(month), int(day)).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        raise InvalidValue(f"{field} names no calendar day", field=field, value=text) from None
    if hour is not None and (int(hour) > 23 or int(minute) > 59 or int(second or 0) > 59):
        raise InvalidValue(f"{field} names no time of day", field=field, value=text)
    offset_min = 0
    if zone is not None and zone != "Z":
        offset_min = (int(zone[1:3]) * 60 + int(zone[4:6])) * (-1 if zone[0] == "-" else 1)
    seconds = int(hour or 0) * 3600 + int(minute or 0) * 60 + int(second or 0)
    millis = int((fraction or "0").ljust(3, "0")[:3])
    return days * _MS_PER_DAY + (seconds - offset_min * 60) * 1000 + millis


async def recall_answer(
    store: Store,
    agent_id: str,
    query: str,
    *,
    since: str | None = None,
    until: str | None = None,
    limit: int | None = None,
) -> RecallAnswer:
    """Search ``agent_id``'s recall index as a person asked it: ``since`` (inclusive) and
    ``until`` (exclusive) as typed, ``limit`` hits at most (the use case's default when None).

    Raises:
        InvalidValue: the query, a time or the limit is refused; ``field`` is ``q``, ``since``,
            ``until`` or ``limit``.
        NotFound: the store holds no such agent.
    """
    since_ms = instant_ms("since", since)
    until_ms = instant_ms("until", until)
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise InvalidValue(
            "since must be before until (since is inclusive, until exclusive)",
            field="since",
            value=since,
        )
    options = {} if limit is None else {"limit": limit}
    try:
        hits = await recall(store, agent_id, query, since_ms=since_ms, until_ms=until_ms, **options)
    except InvalidValue as exc:
        field = exc.context.get("field")
        if field != "query":
            raise
        # The same reason, named as the doors spell the parameter.
        raise InvalidValue(exc.message, field="q") from None
    return RecallAnswer(agent_id=agent_id, query=query, items=hits)
