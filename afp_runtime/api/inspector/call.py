"""One model call: what it was sent (system, tools with their schemas, messages with the fold
summaries marked), how it ended (the reply, the failure, or no reply), its receipt verdict and
gaps in words, and what changed since the call before it (docs/inspector.md#one-call)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import msgspec

from afp_runtime.api._context import ApiContext
from afp_runtime.api._problems import not_found
from afp_runtime.api.window import window_records
from afp_runtime.app import (
    AgentCall,
    CallEnding,
    ConformanceReport,
    ServedView,
    call_among,
    call_ending,
    conform,
    reason_text,
    stored_folds,
)
from afp_runtime.messages import Message, fingerprint
from afp_runtime.records import StoredFoldedSpan
from afp_runtime.store import RunRow

__all__ = ["PAGE", "call_page", "message_view"]

# Contents longer than this start folded on the page.
_FOLD_CHARS = 600
# Messages of a call (sent, or gone since the call before) listed on one page.
PAGE = 200


async def _verify(ctx: ApiContext, found: AgentCall) -> ConformanceReport:
    """The call's view checked against its receipt, bytes re-encoded as the API does."""
    encoders = partial(ctx.host.wire_encoder, found.run.agent_id)
    [report] = await conform(ctx.log_of(found.run.run_id), found.epoch, encoders=encoders)
    return report


async def _view_of(ctx: ApiContext, runs: list[RunRow], number: int) -> ServedView | None:
    located = await call_among(ctx.reader, runs, number)
    return located.view if located is not None else None


def _key(message: Message) -> bytes:
    """What tells two sent messages apart: their whole encoding (a view's values are frozen,
    so read-only mappings are encoded as the dicts they stand for)."""
    return msgspec.json.encode(message, enc_hook=dict, order="sorted")


def _text(value: str) -> dict[str, Any]:
    return {"text": value, "long": len(value) > _FOLD_CHARS, "chars": len(value)}


def message_view(message: Message, index: int, *, entered: bool) -> dict[str, Any]:
    """One message as the pages show it (role, content, tool calls, markers)."""
    return {
        "index": index,
        "role": message.role,
        "content": _text(message.content),
        "tool_calls": [
            {
                "id": c.id,
                "name": c.name,
                "args": json.dumps(c.args, ensure_ascii=False, sort_keys=True, default=dict),
            }
            for c in message.tool_calls
        ],
        "tool_call_id": message.tool_call_id or "",
        "tool_name": message.tool_name or "",
        "not_dispatched": bool(message.not_dispatched),
        "injected_by": message.injected_by or "",
        "entered": entered,
    }


def _diff(
    previous: ServedView | None,
    view: ServedView,
    visits: list[dict[str, Any]],
    first: int | None,
) -> dict[str, Any]:
    current = list(view.messages.as_sent)
    before = list(previous.messages.as_sent) if previous is not None else []
    now_fps = [_key(m) for m in current]
    old_fps = [_key(m) for m in before]
    entered: set[int] = set()
    left: list[int] = []
    matcher = difflib.SequenceMatcher(None, old_fps, now_fps, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("insert", "replace"):
            entered.update(range(j1, j2))
        if op in ("delete", "replace"):
            left.extend(range(i1, i2))
    reasons = [
        f"{v.get('strategy', '?')} at {v.get('runtimeStageId', '?')}: "
        f"{v.get('removedMessageCount', 0)} messages left"
        for v in visits
        if v.get("removedMessageCount")
    ]
    old_pieces = {(p.slot, p.source): p.text for p in previous.system.pieces} if previous else {}
    pieces = []
    for piece in view.system.pieces:
        key = (piece.slot, piece.source)
        change = "same" if old_pieces.get(key) == piece.text else "changed"
        if key not in old_pieces:
            change = "new" if previous is not None else "same"
        pieces.append(
            {
                "slot": piece.slot,
                "source": piece.source,
                "text": _text(piece.text),
                "change": change,
            }
        )
    gone_pieces = sorted(
        f"{slot} ({source})"
        for slot, source in old_pieces
        if (slot, source) not in {(p.slot, p.source) for p in view.system.pieces}
    )
    old_tools = {t.name: t for t in previous.tools.schemas} if previous else None
    new_tools = {t.name: t for t in view.tools.schemas}
    if previous is None:
        entered.clear()
    # One page of the messages as sent: the last ones unless ``first`` says where to start.
    start = max(0, len(current) - PAGE) if first is None else min(first, max(0, len(current) - 1))
    shown = range(start, min(len(current), start + PAGE))
    return {
        "messages": [message_view(current[i], i, entered=i in entered) for i in shown],
        "message_count": len(current),
        "first_shown": start,
        "earlier_from": max(0, start - PAGE) if start > 0 else None,
        "later_from": start + PAGE if start + PAGE < len(current) else None,
        "entered_count": len(entered),
        "left_count": len(left),
        "left": [message_view(before[i], i, entered=False) for i in left[:PAGE]],
        "left_more": max(0, len(left) - PAGE),
        "reasons": reasons,
        "pieces": pieces,
        "gone_pieces": gone_pieces,
        "tools": [_tool_view(t, _change(old_tools, t)) for t in view.tools.schemas],
        "gone_tools": sorted(set(old_tools or ()) - set(new_tools)),
    }


def _json(value: Any) -> str:
    """A JSON value as the page shows it: indented, keys sorted, text as written."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2, default=dict)


def _names(value: Any) -> list[str]:
    """A schema keyword that holds one name or a list of them (``type``, ``required``)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence):
        return [str(item) for item in value]
    return []


def _tool_view(tool: Any, change: str) -> dict[str, Any]:
    """One offered tool: its description, the properties its schema declares (name, type,
    whether required, description) and the whole schema as sent."""
    schema = tool.input_schema if isinstance(tool.input_schema, Mapping) else {}
    declared = schema.get("properties")
    wanted = set(_names(schema.get("required")))
    properties = []
    for name, spec in declared.items() if isinstance(declared, Mapping) else ():
        said: Mapping[str, Any] = spec if isinstance(spec, Mapping) else {}
        properties.append(
            {
                "name": str(name),
                "type": " or ".join(_names(said.get("type"))),
                "required": name in wanted,
                "description": str(said.get("description", "")),
            }
        )
    return {
        "name": tool.name,
        "description": tool.description,
        "change": change,
        "properties": properties,
        "described": any(p["description"] for p in properties),
        "schema": _text(_json(tool.input_schema)),
    }


def _change(before: dict[str, Any] | None, tool: Any) -> str:
    """``new``, ``changed`` or ``same`` against the previous call's tools (all ``same`` for
    the first call)."""
    if before is None:
        return "same"
    old = before.get(tool.name)
    if old is None:
        return "new"
    same = old.description == tool.description and old.input_schema == tool.input_schema
    return "same" if same else "changed"


# What the verdict means for a call that got no reply, beside its word (docs/inspector.md#one-call).
_NO_REPLY = {
    "abandoned": "no reply came: a crash cut the call off before its reply was committed",
    "in-flight": "no reply has come yet: the call is still being answered",
    "failed": "no reply came: the call failed",
}
_VERDICTS = {
    "verified": "The receipt matches what was sent",
    "reconstructed": "Nothing contradicts the receipt, but part of it could not be checked",
    "damaged": "The view does not match its receipt",
}


def _verdict_text(verdict: str, outcome: str) -> str:
    """The verdict in words, saying when no reply came (a match proves the request only)."""
    said = _VERDICTS.get(verdict, f"The receipt reads {verdict}")
    missing = _NO_REPLY.get(outcome)
    return f"{said}, but {missing}." if missing else f"{said}."


def _ending_view(ending: CallEnding) -> dict[str, Any]:
    """How the call ended, as the page shows it."""
    usage = ending.usage
    return {
        "outcome": ending.outcome,
        "attempts": ending.attempts,
        "retried": ending.attempts > 1,
        "stop_reason": ending.stop_reason,
        "input_tokens": usage.input if usage is not None else None,
        "output_tokens": usage.output if usage is not None else None,
        "reply": _text(ending.content) if ending.outcome == "replied" else None,
        "reply_calls": [
            {"id": c.id, "name": c.name, "args": c.args_text or _json(c.args)}
            for c in ending.tool_calls
        ],
        "error_kind": ending.error_kind,
        "error": ending.error,
        "status": ending.status,
        "damaged": ending.damaged,
    }


def _mark_folds(
    agent_id: str, view: ServedView, shown: list[dict[str, Any]], spans: list[StoredFoldedSpan]
) -> None:
    """Mark each shown message that is the summary of a fold, with the fold page's link."""
    by_summary = {span.summary_fingerprint: span for span in spans}  # newest wins
    sent = view.messages.as_sent
    for row in shown:
        message = sent[row["index"]]
        # A summary is text; only such messages are fingerprinted (as app.fold_summary does).
        span = None if message.tool_calls else by_summary.get(fingerprint(message))
        row["fold"] = (
            {
                "href": f"/agents/{agent_id}/folds/{span.summary_fingerprint[:12]}",
                "count": span.message_count,
                "short": span.summary_fingerprint[:12],
            }
            if span is not None
            else None
        )
        if span is not None:
            row["content"] = {**row["content"], "long": False}  # shown in place, never folded


async def call_page(
    ctx: ApiContext, agent_id: str, number: int, *, first: int | None = None
) -> dict[str, Any]:
    """What the call page shows for the agent's call ``number``: its messages as sent from
    index ``first`` (the last page when None)."""
    runs = await ctx.reader.runs(agent_id)
    found = await call_among(ctx.reader, runs, number)
    if found is None:
        raise not_found(
            "call-not-found",
            f"agent {agent_id!r} has made no model call numbered {number}",
            field="n",
            value=str(number),
        )
    at = runs.index(found.run)
    previous = await _view_of(ctx, runs[: at + 1], number - 1)
    has_next = await _view_of(ctx, runs[at:], number + 1) is not None
    visits = [
        record
        for record in await window_records(ctx, [found.run])
        if record.get("iteration") == found.epoch
    ]
    report = await _verify(ctx, found)
    ending = await call_ending(ctx.reader, found)
    view = found.view
    diff = _diff(previous, view, visits, first)
    _mark_folds(agent_id, view, diff["messages"], await stored_folds(ctx.reader, agent_id))
    return {
        "number": number,
        "run_id": found.run.run_id,
        "epoch": found.epoch,
        "has_previous": previous is not None,
        "has_next": has_next,
        "verdict": report.verdict,
        "verdict_text": _verdict_text(report.verdict, ending.outcome),
        "failures": [
            {"clause": c.clause, "detail": c.detail or ""}
            for c in report.clauses
            if c.status == "fail"
        ],
        "gaps": [{"code": gap, "text": reason_text(gap) or ""} for gap in report.gaps],
        "model": view.basis.model if view.basis is not None else "",
        "system_chars": len(view.system.text),
        "request_only": [
            {"role": line.role, "text": _text(line.text), "reason": line.reason}
            for line in view.messages.request_only
        ],
        "forced": view.tools.forced or "",
        "withheld": view.tools.withheld or "",
        "ending": _ending_view(ending),
        **diff,
    }
