"""Commands that write to the store or talk to a running host: send, questions, answer and
abandon, dismiss, resume, health. Writes take the same code path as the API's (a
``synchronous=FULL`` commit before the acknowledgement); a running host notices the rows within
its poll interval."""

from __future__ import annotations

import os
import time
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from afp_runtime.api.shapes import AnswerAccepted, DismissAccepted
from afp_runtime.api.views import question_view
from afp_runtime.app import message_outcome
from afp_runtime.cli import _ids, pausing
from afp_runtime.cli._exits import (
    EXIT_OK,
    EXIT_STALLED,
    TURN_EXITS,
    Refused,
    Unavailable,
    UsageError,
)
from afp_runtime.cli._lazy import load
from afp_runtime.cli._show import add_row, brief, print_json, say, show_table, table, when
from afp_runtime.cli.reads import opened, reader
from afp_runtime.errors import NotFound
from afp_runtime.records import QuestionRow
from afp_runtime.store import Store

if TYPE_CHECKING:
    from afp_runtime.app import AnswerStatus

DEFAULT_WAIT_S = 300.0
_SETTLED = ("answered", "halted", "paused", "held", "dismissed")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def writer(db: str) -> AbstractAsyncContextManager[Store]:
    """The store opened for a write command (it must exist already)."""
    return opened(db, create=False, now_ms=_now_ms())


async def _message_time(args: Any) -> dict[str, Any] | None:
    """``--zone``/``--now`` as the message's ``time``, checked like the API checks it."""
    given = {key: value for key, value in (("zone", args.zone), ("now", args.now)) if value}
    if not given:
        return None
    periods = await load("afp_runtime.time")
    periods.message_time_from_wire(given)
    return given


async def cmd_send(args: Any) -> int:
    """Post a person's message to an agent's durable inbox; prints the ack after the commit.

    With ``--wait`` it then waits for the turn to stop, which needs a host that holds the agent
    (one that does not exist is said at once, exit 4, unless ``--timeout`` says to wait).
    """
    message_time = await _message_time(args)
    if args.timeout is not None and not 0 <= args.timeout < float("inf"):
        # Checked before anything is posted: a refused command stores nothing.
        raise UsageError(f"--timeout must be a number of seconds >= 0, not {args.timeout}")
    async with writer(args.db) as store:
        await _ids.known_agent(store, args.agent)
        if args.wait and args.timeout is None:
            claim = await store.agent_claim(args.agent, now_ms=_now_ms())
            if claim is None or not claim.live:
                raise Unavailable(
                    f"no host holds agent {args.agent!r} now, so nothing would answer: start "
                    "`afp serve`, or give --timeout to wait for one"
                )
        app = await load("afp_runtime.app")
        clock = app.SystemClock()
        ack = await app.post(
            store,
            args.agent,
            args.text,
            clock=clock,
            ids=app.TimeOrderedIds(clock.now_ms),
            idempotency_key=args.idempotency_key,
            sender=args.sender,
            time=message_time,
        )
    if args.wait:
        timeout = DEFAULT_WAIT_S if args.timeout is None else args.timeout
        return await _wait_for(args, ack.message_id, timeout)
    if args.json:
        print_json(ack)
    elif ack.duplicate:
        say(f"already accepted as {ack.message_id} (position {ack.position})")
    else:
        say(f"accepted {ack.message_id} (position {ack.position})")
    return EXIT_OK


async def _turn_result(store: Store, message_id: str) -> dict[str, Any] | None:
    """The message's status with its answer, or why there is none."""
    found = await message_outcome(store, message_id)
    if found is None:
        return None
    return {
        "messageId": message_id,
        "status": found.row.status,
        "answer": found.answer,
        "errorKind": found.error_kind,
        "error": found.error,
    }


async def _wait_for(args: Any, message_id: str, timeout_s: float) -> int:
    """Poll the store (read-only) until the message's turn stops; exit by its status."""
    result: dict[str, Any] | None = None
    with anyio.move_on_after(timeout_s):
        while True:
            async with reader(args.db) as store:
                result = await _turn_result(store, message_id)
            if result is not None and result["status"] in _SETTLED:
                break
            await anyio.sleep(0.25)
    if result is None or result["status"] not in (*_SETTLED, "stalled"):
        raise Unavailable(
            f"{message_id} was not answered within {timeout_s:g} s (is a host serving it?)"
        )
    if args.json:
        print_json(result)
    else:
        say(f"{message_id} {result['status']}")
        if result["answer"] is not None:
            say(result["answer"])
        elif result["error"]:
            say(f"{result['errorKind']}: {result['error']}")
    if result["status"] == "stalled":
        return EXIT_STALLED
    return TURN_EXITS.get(result["status"], EXIT_OK)


async def cmd_questions(args: Any) -> int:
    """List an agent's open check-in questions (``--all``: every status)."""
    async with reader(args.db) as store:
        await _ids.known_agent(store, args.agent)
        rows = await store.questions(args.agent, status=None if args.all else "open")
    views = [question_view(row) for row in rows]
    if args.json:
        # Exactly the API's body: one page holding every question.
        return print_json({"items": views, "next": None})
    short = _ids.shortest(row.question_id for row in rows)
    grid = table("question", "kind", "status", "asked", "calls", "prompt")
    for row in rows:
        add_row(
            grid,
            [
                short[row.question_id],
                row.kind,
                row.status,
                when(row.asked_at_ms),
                ", ".join(row.tool_call_ids),
                brief(row.prompt, 60),
            ],
        )
    which = "" if args.all else " open"
    show_table(grid, empty=f"agent {args.agent!r} has no{which} questions")
    return EXIT_OK


def _answer_value(text: str) -> Any:
    """An approval's command-line answer: ``approve``/``decline``, or the decision as a JSON
    object (``{"decision": "approve", "note": "..."}``). Other questions take the text as
    typed."""
    if text in ("approve", "decline"):
        return {"decision": text}
    if text.lstrip().startswith("{"):
        try:
            return msgspec.json.decode(text)
        except msgspec.DecodeError:
            return text
    return text


async def close_question(
    store: Store, args: Any, *, here: bool = False
) -> tuple[QuestionRow, AnswerAccepted]:
    """Answer (or abandon) ``args.question`` of ``args.agent`` durably (the API's code path);
    with ``here`` (``--run``) refused first, writing nothing, when a live host holds the
    agent."""
    app = await load("afp_runtime.app")
    await _ids.known_agent(store, args.agent)
    question_id = await _ids.question_id(store, args.agent, args.question)
    if here:
        await pausing.not_held(store, args.agent, now_ms=_now_ms())
    if args.abandon:
        row = await app.abandon(
            store, args.agent, question_id, clock=app.SystemClock(), sender=args.sender
        )
    else:
        asked = await store.questions(args.agent, question_ids=[question_id])
        value = _answer_value(args.value) if asked[0].kind == "approval" else args.value
        row = await app.answer(
            store, args.agent, question_id, value, clock=app.SystemClock(), sender=args.sender
        )
    status: AnswerStatus = "abandoned" if args.abandon else app.answer_status(row)
    return row, AnswerAccepted(status=status, question=question_view(row))


async def cmd_answer(args: Any) -> int:
    """Answer (or abandon) a question durably, then say how its turn goes on: a running host
    starts the answer run within its poll interval (the same code path as the API's answer
    endpoint); ``--run CONFIG`` goes on with it in this process (``run.answer_and_run``)."""
    if args.config is not None:
        run = await load("afp_runtime.cli.run")
        found: int = await run.answer_and_run(args)
        return found
    async with writer(args.db) as store:
        row, accepted = await close_question(store, args)
        if args.json:
            return print_json(accepted)
        say(f"{row.question_id} {row.status}")
        await pausing.show_how_it_goes_on(store, row, db=args.db, now_ms=_now_ms())
    return EXIT_OK


async def cmd_dismiss(args: Any) -> int:
    """Close a held turn ``dismissed`` (by one of its runs) so the agent's queue moves on."""
    app = await load("afp_runtime.app")
    async with writer(args.db) as store:
        run_id = await _ids.run_id(store, args.run)
        agent_id = (await store.runs(run_id=run_id))[0].agent_id
        message_id = await app.dismiss(store, agent_id, run_id=run_id, clock=app.SystemClock())
    if args.json:
        print_json(
            DismissAccepted(
                run_id=run_id, agent_id=agent_id, message_id=message_id, status="dismissed"
            )
        )
    else:
        say(f"dismissed {message_id} (agent {agent_id})")
    return EXIT_OK


async def _api(args: Any, method: str, path: str) -> Any:
    """One request to the running host's API; no answer is exit 4."""
    httpx = await load("httpx")
    token = os.environ.get("AFP_API_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = f"{args.api.rstrip('/')}{path}"
    try:
        async with httpx.AsyncClient(timeout=30.0) as client:
            if method == "GET":
                return await client.get(url, headers=headers)
            return await client.post(url, json={}, headers=headers)
    except httpx.InvalidURL as exc:
        raise UsageError(f"--api {args.api} is not a URL afp can reach ({exc})") from exc
    except httpx.HTTPError as exc:
        raise Unavailable(f"no host answered at {args.api} ({exc})") from exc


async def cmd_resume(args: Any) -> int:
    """Ask the running host (through its API) to resume a held or stalled run."""
    if await anyio.Path(args.db).exists():
        async with reader(args.db) as store:
            run_id = await _ids.run_id(store, args.run)
    else:
        run_id = args.run
    response = await _api(args, "POST", f"/v1/runs/{run_id}/resume")
    detail = _error_message(response)
    if response.status_code == 404:
        raise NotFound(detail, what="run", value=run_id)
    if response.status_code in (401, 403, 409):
        raise Refused(f"the host refused the resume: {detail}")
    if response.status_code >= 400:
        raise UsageError(f"the host refused the resume: {detail}")
    if args.json:
        print_json(response.json())
    else:
        say(f"resume of {run_id} accepted")
    return EXIT_OK


def _error_message(response: Any) -> str:
    try:
        return str(response.json().get("error", {}).get("message", response.text))
    except ValueError:
        return str(response.text)


async def cmd_health(args: Any) -> int:
    """The running host's health (``GET /v1/health``): exit 4 when no host answers."""
    response = await _api(args, "GET", "/v1/health")
    body = response.json()
    if args.json:
        print_json(body)
    else:
        say(
            f"{body.get('status')} (afp-runtime {body.get('version')}, "
            f"schema {body.get('schemaVersion')})"
        )
    return EXIT_OK
