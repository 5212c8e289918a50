"""The conversation timeline of one agent (docs/inspector.md#timeline): its turns, newest
first and a page at a time, each with the person's message, its runs (kind, status, duration,
usage, the answer's first line for the run's one-line summary, answer or error), each run's
model calls (outcome, attempts, tool calls, usage, gaps), window visits (what left, the pins
held, stand-downs, why the rest stayed) and folds, the turn's findings standings and
call-window rows, and the agent's questions: the open ones, and the settled ones counted.
Every reason code and gap comes with its sentence from the reasons table
(docs/architecture.md#reasons-in-words)."""

from __future__ import annotations

import datetime
import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from afp_runtime.api._context import ApiContext
from afp_runtime.api.window import window_records
from afp_runtime.app import epoch_list, reason_text
from afp_runtime.cost import cost_text
from afp_runtime.records import QuestionRow, StoredFoldedSpan, ledger_row_to_wire
from afp_runtime.store import RunRow

__all__ = ["TURNS_PER_PAGE", "timeline"]

TURNS_PER_PAGE = 20
# A run's calls listed on the page; a run with more says how many it left out.
_CALLS_PER_RUN = 200
# The most of an answer's first line a run's summary line carries (the rest is in the run).
_FIRST_LINE_CHARS = 160


def when(ms: int | None) -> str:
    """A UTC time to the second, for people; ``never`` for none."""
    if not ms:
        return "never"
    moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(run: RunRow) -> str:
    if run.ended_at_ms is None:
        return "still running" if run.status == "running" else ""
    seconds = (run.ended_at_ms - run.started_at_ms) / 1000
    return f"{seconds:.3f} s" if seconds < 10 else f"{seconds:.1f} s"


def _usage(usage: Any) -> str:
    if usage is None:
        return ""
    values = usage if isinstance(usage, dict) else {"input": usage.input, "output": usage.output}
    return f"{values.get('input', 0)} in · {values.get('output', 0)} out"


def _answer(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def first_line(text: str) -> str:
    """A text's first line that is not blank, cut to ``_FIRST_LINE_CHARS`` (an ellipsis says
    that more follows, on that line or after it)."""
    stripped = text.strip()
    line = stripped.split("\n", 1)[0].rstrip()
    if len(line) > _FIRST_LINE_CHARS:
        return line[: _FIRST_LINE_CHARS - 1] + "…"
    return line if line == stripped else line + " …"


def explained(codes: Iterable[str]) -> list[dict[str, str]]:
    """Codes in first-seen order, each with its sentence from the reasons table (empty for a
    code the table does not explain: the code is shown alone, never a sentence of ours)."""
    return [{"code": code, "text": reason_text(code) or ""} for code in dict.fromkeys(codes)]


def _pins(block: Any, pin: str) -> tuple[list[str], str]:
    """A record's pin block (``observations`` or ``ledgerFacts``) as the turns it held, and a
    word when the pin stood down on this visit (docs/window.md#stand-down)."""
    if not isinstance(block, dict):
        return [], ""
    held = [
        f"{pin} {p.get('toolName', '?')} (turn {p.get('turnIndex', '?')}, {p.get('chars', '?')} "
        "chars)"
        for p in block.get("pinned") or []
        if isinstance(p, dict)
    ]
    if block.get("yielded"):
        held.append(f"{block['yielded']} more {pin} turned away by the limit {block.get('limit')}")
    return held, f"{pin} pin stood down" if block.get("standDown") else ""


def _visit(record: dict[str, Any]) -> dict[str, Any]:
    reasons = sorted({str(r.get("reason")) for r in record.get("refusals") or []})
    recent, recent_down = _pins(record.get("observations"), "latest result")
    facts, facts_down = _pins(record.get("ledgerFacts"), "fact")
    turns = (
        f"{record['turnsBefore']} → {record['turnsAfter']}"
        if "turnsBefore" in record and "turnsAfter" in record
        else ""
    )
    return {
        "stage": record.get("runtimeStageId", ""),
        "strategy": str(record.get("strategy", "")),
        "removed": int(record.get("removedMessageCount") or 0),
        "turns": turns,
        "chars": f"{record.get('windowCharsBefore', '?')} → {record.get('windowCharsAfter', '?')}",
        "pins": recent + facts,
        "stand_down": ", ".join(x for x in (recent_down, facts_down) if x),
        "kept_because": explained(reasons),
    }


def span_row(span: StoredFoldedSpan) -> dict[str, Any]:
    """One fold as the folds page and the timeline list it."""
    return {
        "fingerprint": span.summary_fingerprint,
        "short": span.summary_fingerprint[:12],
        "run_id": span.run_id,
        "iteration": span.iteration,
        "folded": when(span.folded_at_ms),
        "model": span.model,
        "count": span.message_count,
        "retained": span.retained,
    }


def _standing(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_call_id": str(row.get("toolCallId", "")),
        "tool": str(row.get("toolName", "")),
        "iteration": row.get("iteration", ""),
        "standing": str(row.get("standing", "")),
        "assertions": len(row.get("assertions") or []),
        "unknown": bool(row.get("unknownId")),
    }


def _range(value: Any) -> str:
    if not isinstance(value, dict):
        return ""
    return f"{value.get('from', '?')} → {value.get('to', '?')}"


def _call_window(row: dict[str, Any]) -> dict[str, Any]:
    details = [
        f"{key} {row[key]}"
        for key in ("why", "refused", "argument", "by", "assumed")
        if row.get(key) is not None
    ]
    if row.get("sent"):
        details.append(f"sent {_range(row['sent'])}")
    details.extend(
        flag
        for key, flag in (
            ("rounded", "rounded outward"),
            ("trimmedByTool", "trimmed by the tool"),
            ("partlyBeyondRetention", "partly beyond retention"),
        )
        if row.get(key)
    )
    return {
        "tool_call_id": str(row.get("toolCallId", "")),
        "tool": str(row.get("toolName", "")),
        "iteration": row.get("iteration", ""),
        "how": str(row.get("how", "")),
        "window": _range(row.get("asked")),
        "detail": "; ".join(details),
    }


async def _run_view(
    ctx: ApiContext, run: RunRow, visits: list[dict[str, Any]], folds: list[StoredFoldedSpan]
) -> dict[str, Any]:
    entries, total = await epoch_list(ctx.log_of(run.run_id), limit=_CALLS_PER_RUN)
    error = " ".join(x for x in (run.error_kind, run.error) if x)
    return {
        "run_id": run.run_id,
        "kind": run.kind,
        "status": run.status,
        "started": when(run.started_at_ms),
        "duration": _duration(run),
        "usage": _usage(run.usage),
        "cost": cost_text(run.cost),
        "answer": run.answer or "",
        "answer_line": first_line(run.answer or ""),
        "error": error,
        "error_line": first_line(error),
        "call_count": total,
        "calls": [
            {
                "epoch": entry.epoch,
                "agent_call": entry.agent_call,
                "outcome": entry.outcome,
                "attempts": entry.attempts,
                "tool_calls": entry.tool_call_count,
                "usage": _usage(entry.usage),
                "gaps": explained(entry.gaps),
            }
            for entry in entries
        ],
        "calls_left_out": max(0, total - len(entries)),
        "visits": [_visit(record) for record in visits],
        "folds": [span_row(span) for span in folds],
    }


async def timeline(ctx: ApiContext, agent_id: str, *, before: int | None) -> dict[str, Any]:
    """What the timeline page shows: the turns before ``before`` (the newest page when None)."""
    runs = await ctx.reader.runs(agent_id)
    by_turn: dict[int, list[RunRow]] = defaultdict(list)
    for run in runs:
        by_turn[run.turn].append(run)
    turns = sorted((t for t in by_turn if before is None or t < before), reverse=True)
    shown, rest = turns[:TURNS_PER_PAGE], turns[TURNS_PER_PAGE:]
    chosen = [run for turn in shown for run in by_turn[turn]]
    visits: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in await window_records(ctx, chosen):
        visits[record["runId"]].append(record)
    folds: dict[str, list[StoredFoldedSpan]] = defaultdict(list)
    for span in await ctx.reader.folded_spans(agent_id):
        folds[span.run_id].append(span)
    rows: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for typed in await ctx.reader.ledger(agent_id):
        row = ledger_row_to_wire(typed)
        if row.get("turn") in shown:
            rows[row["turn"]].append(row)
    messages = {row.turn: row for row in await ctx.reader.inbox(agent_id) if row.turn is not None}
    questions = await ctx.reader.questions(agent_id)
    return {
        "turns": [
            {
                "turn": turn,
                "message": messages[turn].text if turn in messages else "",
                "sender": (messages[turn].sender or "") if turn in messages else "",
                "accepted": when(messages[turn].accepted_at_ms) if turn in messages else "",
                "runs": [
                    await _run_view(ctx, run, visits[run.run_id], folds[run.run_id])
                    for run in by_turn[turn]
                ],
                "standings": [_standing(r) for r in rows[turn] if r.get("kind") == "standing"],
                "conflicts": [
                    {
                        "key": "/".join(str(k) for k in r.get("key") or []),
                        "calls": ", ".join(
                            str(w.get("toolCallId", "?"))
                            for w in r.get("witnesses") or []
                            if isinstance(w, dict)
                        ),
                    }
                    for r in rows[turn]
                    if r.get("kind") == "conflict"
                ],
                "call_windows": [
                    _call_window(r) for r in rows[turn] if r.get("kind") == "call-window"
                ],
                "permissions": [
                    {
                        "tool_call_id": str(r.get("toolCallId", "")),
                        "tool": str(r.get("toolName", "")),
                        "iteration": r.get("iteration", ""),
                        "decision": str(r.get("decision", "")),
                        "rule": str(r.get("rule", "")),
                        "reason": str(r.get("reason") or ""),
                    }
                    for r in rows[turn]
                    if r.get("kind") == "permission"
                ],
            }
            for turn in shown
        ],
        "older": shown[-1] if rest else None,
        "live": before is None,
        "newer": bool(before is not None and any(t >= before for t in by_turn)),
        **_questions(questions),
    }


def _questions(rows: Iterable[QuestionRow]) -> dict[str, Any]:
    """The open questions, shown first and in full, and the settled ones (answered,
    abandoned...), collapsed behind one line that counts them by status."""
    shown = [
        {
            "question_id": q.question_id,
            "kind": q.kind,
            "status": q.status,
            "prompt": q.prompt,
            "answer": _answer(q.answer),
            "asked": when(q.asked_at_ms),
        }
        for q in rows
    ]
    settled = [q for q in shown if q["status"] != "open"]
    counts = Counter(str(q["status"]) for q in settled)
    noun = "question" if len(settled) == 1 else "questions"
    label = " and ".join(f"{n} {status}" for status, n in counts.items())
    return {
        "questions": [q for q in shown if q["status"] == "open"],
        "settled": settled,
        "settled_label": f"{label} {noun}" if settled else "",
    }
