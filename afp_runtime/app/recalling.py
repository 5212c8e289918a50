"""Recall: search what left an agent's window, bounded for whoever reads the answer (a model's
tool, a person's command, a page) (docs/recall.md#search).

Readings settled here:

* At most ``MAX_LIMIT`` hits (``DEFAULT_LIMIT`` unless asked); a larger ``limit`` is refused.
* Each hit's content is cut to ``max_chars`` characters (``DEFAULT_HIT_CHARS``); all hits
  together to ``max_total_chars`` (``DEFAULT_TOTAL_CHARS``): a hit that would pass it is cut to
  what is left, and once nothing is left the rest are left out. A cut hit says how many
  characters were cut (``content_cut``); what is kept is verbatim.
"""

from __future__ import annotations

from afp_runtime.errors import InvalidValue, NotFound
from afp_runtime.store import RecallHit, Store, within_chars

DEFAULT_LIMIT = 10
"""Hits a search answers unless asked for fewer or more."""

MAX_LIMIT = 50
"""The most hits one search answers."""

DEFAULT_HIT_CHARS = 2_000
"""Characters of one hit's content kept unless asked otherwise."""

DEFAULT_TOTAL_CHARS = 8_000
"""Characters of all hits' contents together kept unless asked otherwise."""


async def recall(
    store: Store,
    agent_id: str,
    query: str,
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    limit: int = DEFAULT_LIMIT,
    max_chars: int = DEFAULT_HIT_CHARS,
    max_total_chars: int = DEFAULT_TOTAL_CHARS,
) -> list[RecallHit]:
    """The messages that left ``agent_id``'s window matching ``query``, best first, bounded.

    Raises:
        InvalidValue: the query or a bound is refused, naming it (docs/recall.md#queries).
        NotFound: the store holds no such agent.
    """
    for name, value in (("since_ms", since_ms), ("until_ms", until_ms)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidValue(f"{name} must be epoch milliseconds, not {value!r}", field=name)
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > MAX_LIMIT:
        raise InvalidValue(
            f"limit is {limit}; at most {MAX_LIMIT} hits are answered", field="limit"
        )
    if (
        isinstance(max_total_chars, bool)
        or not isinstance(max_total_chars, int)
        or max_total_chars < 0
    ):
        raise InvalidValue(
            f"max_total_chars must be a whole number of at least 0, not {max_total_chars!r}",
            field="max_total_chars",
        )
    hits = await store.recall(
        agent_id, query, since_ms=since_ms, until_ms=until_ms, limit=limit, max_chars=max_chars
    )
    if not hits and await store.conversation_state(agent_id) is None:
        raise NotFound(f"there is no agent {agent_id!r}", what="agent", value=agent_id)
    return within_chars(hits, max_total_chars)
