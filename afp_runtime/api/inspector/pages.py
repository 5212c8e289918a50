"""The inspector's pages (docs/inspector.md): server-rendered HTML from Jinja templates, with
every value from a conversation, a tool or a config escaped by the template engine.

The server rules for these paths (sign-in, the ``Host`` check, form bodies, the security
headers) are the guard's (``afp_runtime/api/_guard.py``); a handler here only renders.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from litestar import Request, get, post
from litestar.datastructures import State
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect, Response, Stream, Template
from litestar.template.config import TemplateConfig

from afp_runtime.api._caller import principal_in
from afp_runtime.api._context import ApiContext, context_of
from afp_runtime.api._params import PathText, header, number_param, path_param, query
from afp_runtime.api.agents import agent_summary
from afp_runtime.api.events import event_stream
from afp_runtime.api.inspector import session
from afp_runtime.api.inspector._render import ENVIRONMENT
from afp_runtime.api.inspector.call import call_page
from afp_runtime.api.inspector.chart import window_chart
from afp_runtime.api.inspector.folds import FOLD_PREFIX, fold_page, folds_page
from afp_runtime.api.inspector.questions import act, form_fields
from afp_runtime.api.inspector.schedules import schedule_action, schedule_rows, set_from_form
from afp_runtime.api.inspector.timeline import timeline, when
from afp_runtime.api.principals import Principals

__all__ = ["HANDLERS", "PAGES_KEY", "Pages", "page_methods", "public_page", "template_config"]

PAGES_KEY = "afp.inspector"
_HERE = Path(__file__).parent
# Said outright: guessing it from a template's name would read the system's MIME tables.
# Litestar appends "; charset=utf-8" to a text/ type itself.
_HTML = "text/html"
_STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
# The assets, read once: names are fixed, so no request path ever names a file.
_STATIC = {
    path.name: (path.read_bytes(), _STATIC_TYPES[path.suffix])
    for path in (_HERE / "static").iterdir()
    if path.suffix in _STATIC_TYPES
}
_ROUTES: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (re.compile(r"/"), frozenset({"GET"})),
    (re.compile(r"/fragments/agents"), frozenset({"GET"})),
    (re.compile(r"/agents/[a-z0-9][a-z0-9._-]{0,63}"), frozenset({"GET"})),
    (re.compile(r"/agents/[a-z0-9][a-z0-9._-]{0,63}/live"), frozenset({"GET"})),
    (re.compile(r"/agents/[a-z0-9][a-z0-9._-]{0,63}/calls/[0-9]{1,12}"), frozenset({"GET"})),
    (re.compile(r"/agents/[a-z0-9][a-z0-9._-]{0,63}/folds"), frozenset({"GET"})),
    (
        re.compile(r"/agents/[a-z0-9][a-z0-9._-]{0,63}/questions/[^/]{1,200}/(answer|abandon)"),
        frozenset({"POST"}),
    ),
    (re.compile(r"/agents/[a-z0-9][a-z0-9._-]{0,63}/folds/[^/]{1,80}"), frozenset({"GET"})),
    (re.compile(r"/agents/[a-z0-9][a-z0-9._-]{0,63}/schedules"), frozenset({"POST"})),
    (
        re.compile(r"/agents/[a-z0-9][a-z0-9._-]{0,63}/schedules/[^/]{1,80}/[a-z]{1,16}"),
        frozenset({"POST"}),
    ),
    (re.compile(r"/login"), frozenset({"GET", "POST"})),
    (re.compile(r"/logout"), frozenset({"POST"})),
    (re.compile(r"/static/[A-Za-z0-9_.-]{1,64}"), frozenset({"GET"})),
)


@dataclass(frozen=True)
class Pages:
    """What the pages know beyond the API's context: the principals and their sessions, if
    any (both or neither)."""

    principals: Principals | None
    sessions: session.Sessions | None = None


def page_methods(path: str) -> frozenset[str] | None:
    """The methods an inspector path answers, or None when it is no page of the inspector."""
    for pattern, methods in _ROUTES:
        if pattern.fullmatch(path):
            return methods
    return None


def public_page(path: str) -> bool:
    """Whether a path is answered before signing in (the sign-in form and the assets)."""
    return path == "/login" or path.startswith("/static/")


def template_config() -> TemplateConfig[JinjaTemplateEngine]:
    """The pages' templates (``_render.ENVIRONMENT``) for the app."""
    return TemplateConfig(instance=JinjaTemplateEngine(engine_instance=ENVIRONMENT))


def _pages(state: State) -> Pages:
    pages: Pages = state[PAGES_KEY]
    return pages


async def _agent_rows(state: State) -> list[dict[str, Any]]:
    ctx = context_of(state)
    rows: list[dict[str, Any]] = []
    for row in await ctx.reader.agents():
        view = await agent_summary(ctx, row)
        conversation = await ctx.reader.conversation_state(row.agent_id)
        last = conversation.checkpointed_at_ms if conversation is not None else 0
        rows.append(
            {
                "agent_id": view.agent_id,
                "status": view.status,
                "model": view.model or "",
                "turn": view.turn,
                "inbox_depth": view.inbox_depth,
                "open_questions": len(view.open_questions),
                "last_activity": when(last),
            }
        )
    return rows


@get("/", include_in_schema=False)
async def agents_page(state: State) -> Template:
    """Every agent: status, inbox depth, open questions, last activity."""
    signed = _pages(state).principals is not None
    context = {"agents": await _agent_rows(state), "signed_in": signed}
    return Template("agents.html", context=context, media_type=_HTML)


@get("/fragments/agents", include_in_schema=False)
async def agent_rows(state: State) -> Template:
    """The rows of the agents table alone, for the page's live update."""
    return Template(
        "agent_rows.html", context={"agents": await _agent_rows(state)}, media_type=_HTML
    )


async def _agent_page(
    state: State,
    agent_id: str,
    template: str,
    read: Callable[[ApiContext], Awaitable[dict[str, Any]]],
    **extra: Any,
) -> Template:
    """A page about one agent (404 for an agent neither hosted nor stored): ``read``'s values
    and the ones every page has."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    context = {
        "agent_id": agent_id,
        "signed_in": _pages(state).principals is not None,
        **extra,
        **await read(ctx),
    }
    return Template(template, context=context, media_type=_HTML)


@get("/agents/{agent_id:str}", include_in_schema=False)
async def timeline_page(
    state: State, agent_id: PathText, before: Annotated[str | None, query("before")] = None
) -> Template:
    """One agent's conversation: turns, newest first, with their runs, calls and visits."""
    older_than = number_param("before", before) if before is not None else None

    async def read(ctx: ApiContext) -> dict[str, Any]:
        return {
            **await timeline(ctx, agent_id, before=older_than),
            **await schedule_rows(ctx, agent_id),
            "window_chart": await window_chart(ctx, agent_id),
        }

    return await _agent_page(state, agent_id, "timeline.html", read)


@get("/agents/{agent_id:str}/live", include_in_schema=False, media_type="text/event-stream")
async def timeline_events(
    state: State,
    agent_id: PathText,
    last_event_id: Annotated[str | None, header("Last-Event-ID")] = None,
) -> Stream:
    """The agent's events for its timeline's live update: the API's event stream of the agent,
    under the pages' sign-in (the page's script refetches the timeline when one arrives, and
    shows a streamed reply's ``model.delta`` fragments as they come without fetching)."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    return event_stream(
        ctx,
        agent_ids=[agent_id],
        types=None,
        last_event_id=last_event_id,
        follow=None,
        typed=False,
    )


@get("/agents/{agent_id:str}/calls/{n:str}", include_in_schema=False)
async def call_view(
    state: State,
    agent_id: PathText,
    n: PathText,
    first: Annotated[str | None, query("first")] = None,
) -> Template:
    """The agent's n-th model call: what was sent, its verdict, its diff to the call before;
    ``?first=`` pages its messages."""
    number = number_param("n", n)
    start = number_param("first", first) if first is not None else None
    return await _agent_page(
        state, agent_id, "call.html", lambda ctx: call_page(ctx, agent_id, number, first=start)
    )


@get("/agents/{agent_id:str}/folds", include_in_schema=False)
async def folds_list(
    state: State,
    agent_id: PathText,
    prefix: Annotated[str | None, query("prefix")] = None,
    q: Annotated[str | None, query("q")] = None,
    since: Annotated[str | None, query("since")] = None,
    until: Annotated[str | None, query("until")] = None,
) -> Response[Any]:
    """Every fold of the agent; with ``?prefix=`` (the page's find form), that fold; with
    ``?q=`` (its search box), what left the window matching it (docs/recall.md#for-people)."""
    if prefix is not None:
        await context_of(state).agent(agent_id)
        wanted = path_param("prefix", prefix.strip().lower(), FOLD_PREFIX)
        return Redirect(f"/agents/{agent_id}/folds/{wanted}", status_code=303)
    page = await _agent_page(
        state,
        agent_id,
        "folds.html",
        lambda ctx: folds_page(ctx, agent_id, q=q, since=since, until=until),
    )
    page.status_code = page.context["status_code"]  # 400 when the search was refused
    return page


@get("/agents/{agent_id:str}/folds/{prefix:str}", include_in_schema=False)
async def fold_view(state: State, agent_id: PathText, prefix: PathText) -> Template:
    """One fold, by a prefix of its summary's fingerprint: summary and originals."""
    return await _agent_page(
        state,
        agent_id,
        "fold.html",
        lambda ctx: fold_page(ctx, agent_id, prefix),
        prefix=prefix,
    )


@post("/agents/{agent_id:str}/questions/{question_id:str}/{action:str}", include_in_schema=False)
async def question_form(
    state: State,
    agent_id: PathText,
    question_id: PathText,
    action: PathText,
    request: Request[Any, Any, Any],
) -> Response[Any]:
    """A question's answer or abandon form: back to the timeline once done, else a page saying
    what was refused."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    fields = form_fields(await request.body())
    principal = principal_in(request.scope)
    outcome = await act(ctx, agent_id, question_id, action, fields, principal=principal)
    if outcome.problem is None:
        return Redirect(f"/agents/{agent_id}#questions-title", status_code=303)
    context = {
        "agent_id": agent_id,
        "problem": outcome.problem,
        "signed_in": _pages(state).principals is not None,
    }
    return Template("refused.html", context=context, status_code=outcome.status, media_type=_HTML)


@post("/agents/{agent_id:str}/schedules", include_in_schema=False)
async def schedule_set_form(
    state: State, agent_id: PathText, request: Request[Any, Any, Any]
) -> Response[Any]:
    """The set form: create or replace a schedule, back to the timeline once done, else the
    form again with the refusal and the person's input."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    fields = form_fields(await request.body())
    outcome = await set_from_form(ctx, agent_id, fields, principal=principal_in(request.scope))
    if outcome.problem is None:
        return Redirect(f"/agents/{agent_id}#schedules-title", status_code=303)
    context = {
        "agent_id": agent_id,
        "problem": outcome.problem,
        "field": outcome.field,
        "values": outcome.values,
        "signed_in": _pages(state).principals is not None,
    }
    return Template(
        "schedule_refused.html", context=context, status_code=outcome.status, media_type=_HTML
    )


@post("/agents/{agent_id:str}/schedules/{name:str}/{action:str}", include_in_schema=False)
async def schedule_form(
    state: State,
    agent_id: PathText,
    name: PathText,
    action: PathText,
    request: Request[Any, Any, Any],
) -> Response[Any]:
    """A schedule's pause, resume or remove button: back to the timeline once done, else a
    page saying what was refused."""
    ctx = context_of(state)
    await ctx.agent(agent_id)
    form_fields(await request.body())  # the button posts no fields; the bytes are still checked
    status, problem = await schedule_action(
        ctx, agent_id, name, action, principal=principal_in(request.scope)
    )
    if problem is None:
        return Redirect(f"/agents/{agent_id}#schedules-title", status_code=303)
    context = {
        "agent_id": agent_id,
        "problem": problem,
        "signed_in": _pages(state).principals is not None,
    }
    return Template("refused.html", context=context, status_code=status, media_type=_HTML)


@get("/login", include_in_schema=False)
async def login_form(state: State) -> Response[Any]:
    """The sign-in form (with no token set there is nothing to sign in to)."""
    if _pages(state).principals is None:
        return Redirect("/", status_code=303)
    return Template("login.html", context={"failed": False, "signed_in": False}, media_type=_HTML)


@post("/login", include_in_schema=False, status_code=303)
async def login(state: State, request: Request[Any, Any, Any]) -> Response[Any]:
    """Check the token from the form; a known principal's signs the browser in as that
    principal, else the form again."""
    principals, sessions = _pages(state).principals, _pages(state).sessions
    if principals is None or sessions is None:
        return Redirect("/", status_code=303)
    fields = urllib.parse.parse_qs((await request.body()).decode("utf-8", "replace"))
    given = (fields.get("token") or [""])[0].strip().encode("utf-8")
    principal = principals.authenticate(given)
    if principal is None:
        return Template(
            "login.html",
            context={"failed": True, "signed_in": False},
            status_code=401,
            media_type=_HTML,
        )
    cookie = sessions.cookie(principal)  # a new session on every sign-in
    return Redirect("/", status_code=303, headers={"Set-Cookie": cookie})


@post("/logout", include_in_schema=False, status_code=303)
async def logout(state: State, request: Request[Any, Any, Any]) -> Response[Any]:
    """Sign the browser out: its session is revoked here, not only cleared in the browser, so
    a copy of the cookie no longer opens anything."""
    sessions = _pages(state).sessions
    if sessions is not None:
        sessions.revoke(request.headers.get("cookie"))
    return Redirect("/login", status_code=303, headers={"Set-Cookie": session.clearing_cookie()})


@get("/static/{name:str}", include_in_schema=False)
async def static_asset(name: PathText) -> Response[bytes]:
    """One of the inspector's own assets (no third-party file, nothing fetched at run time)."""
    found = _STATIC.get(name)
    if found is None:
        return Response(b"no such asset\n", status_code=404, media_type="text/plain")
    body, media_type = found
    return Response(body, media_type=media_type)


HANDLERS = [
    agents_page,
    agent_rows,
    timeline_page,
    timeline_events,
    call_view,
    folds_list,
    fold_view,
    question_form,
    schedule_set_form,
    schedule_form,
    login_form,
    login,
    logout,
    static_asset,
]
