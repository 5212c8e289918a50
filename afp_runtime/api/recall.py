"""The endpoint that searches what left an agent's window (docs/api.md#recall,
docs/recall.md#for-people): ``GET /v1/agents/{agentId}/recall?q=&since=&until=&limit=``.

The handler only translates: the text of the query string goes to ``recall_answer`` (the one
use case ``app.recall`` behind it), and a refusal comes back as 400 ``invalid-query`` naming the
parameter and why. A read: open to every principal, as the other per-agent reads.
"""

from __future__ import annotations

from typing import Annotated

from litestar import get
from litestar.datastructures import State

from afp_runtime.api._context import context_of
from afp_runtime.api._operation_parts import AGENT, Operation, query
from afp_runtime.api._params import NUMBER, PathText
from afp_runtime.api._params import query as query_param
from afp_runtime.api._problems import ApiError
from afp_runtime.api.recall_answer import RecallAnswer, recall_answer
from afp_runtime.errors import InvalidValue

__all__ = ["DEFAULT_LIMIT", "HANDLERS", "MAX_LIMIT", "OPERATIONS"]

# app.recall's bounds (docs/recall.md#search), as the document states them; the use case
# refuses past them itself, and tests/api/test_recall.py holds the two equal.
DEFAULT_LIMIT = 10
MAX_LIMIT = 50

_WHEN_SCHEMA = {
    "type": "string",
    "pattern": r"^([0-9]{1,15}|[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}:[0-9]{2}))?)$",
}


def limit_of(text: str | None) -> int | None:
    """``limit`` as a count of hits from 1 to ``MAX_LIMIT``; None when not given."""
    if text is None:
        return None
    if NUMBER.fullmatch(text) is None or int(text) > MAX_LIMIT:
        raise ApiError(
            400,
            "invalid-query",
            f"limit must be an integer from 1 to {MAX_LIMIT}",
            field="limit",
            value=text,
        )
    return int(text)


def refused(exc: InvalidValue, given: dict[str, str | None]) -> ApiError:
    """400 ``invalid-query`` for a refused ``q``, ``since``, ``until`` or ``limit``, echoing
    what was sent for it (cut to 200 code points like every echoed value)."""
    found = exc.context.get("field")
    field = found if isinstance(found, str) and found in given else "q"
    return ApiError(400, "invalid-query", exc.message, field=field, value=given[field] or "")


@get("/v1/agents/{agent_id:str}/recall")
async def agent_recall(
    state: State,
    agent_id: PathText,
    q: Annotated[str | None, query_param("q")] = None,
    since: Annotated[str | None, query_param("since")] = None,
    until: Annotated[str | None, query_param("until")] = None,
    limit: Annotated[str | None, query_param("limit")] = None,
) -> RecallAnswer:
    """The agent's messages that left its window matching ``q``, best first, bounded."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    if q is None:
        raise ApiError(400, "invalid-query", "q (the words to search for) is required", field="q")
    count = limit_of(limit)
    try:
        return await recall_answer(ctx.reader, agent_id, q, since=since, until=until, limit=count)
    except InvalidValue as exc:
        given = {"q": q, "since": since, "until": until, "limit": limit}
        raise refused(exc, given) from None


HANDLERS = [agent_recall]

OPERATIONS = (
    Operation(
        "GET",
        "/v1/agents/{agentId}/recall",
        "Search what left the agent's window",
        "window",
        RecallAnswer,
        params=(
            AGENT,
            {
                **query("q", {"type": "string", "maxLength": 1000}, "the words to search for"),
                "required": True,
            },
            query("since", _WHEN_SCHEMA, "said at or after: an instant, a UTC date or epoch ms"),
            query("until", _WHEN_SCHEMA, "said before: an instant, a UTC date or epoch ms"),
            query(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
                "hits at most",
            ),
        ),
    ),
)
"""The endpoint's row of the API's table of operations (``_operations.OPERATIONS``); its example
is a real answer, captured by ``scripts/openapi_examples.py``."""
