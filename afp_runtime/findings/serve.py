"""Serving findings on the wire, per request (docs/findings.md#how-the-schema-is-served,
docs/findings.md#the-offer-of-result-ids, docs/findings.md#what-later-requests-see).

Everything here is a pure function of the window, the fold and the config: the decorated tool
schemas, the instruction, the ledger piece and the stubs. Nothing here changes ``history``:
``serve_findings`` returns a new message tuple and the caller commits what was sent.

Readings settled here:

* A ``not_dispatched`` result has no standing (docs/findings.md#the-four-standings,
  docs/findings.md#settled-results-have-no-standing), so it is never stubbed, never offered
  and never counted as undeclared.
* The offer lists each id once (its newest message) and skips empty ids.
* The ledger piece's lists run over the whole fold (the ledger is the model's record across
  turns), in ledger order: facts by their rows' order, conflicts in the order they arose,
  ruled-out and open results by their rows' order. Empty lists are left out; the counts line
  is always there. Each list shows at most ``FINDINGS_LIST_CAP`` entries and then states how
  many it did not show; so does each conflict's list of witnesses.
* "Results in view with no standing" counts the window's ``tool`` messages that are not
  settled and that no standing names.
* Free texts are shown on one line (line breaks become spaces) so that one entry stays one
  line; values that are not strings are shown as their JSON text (``true``, ``1.5``).
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from afp_runtime.findings import texts
from afp_runtime.findings.config import FindingsConfig
from afp_runtime.findings.declare import FINDINGS_ARG
from afp_runtime.findings.fold import LedgerFold, judged_id
from afp_runtime.findings.limits import FINDINGS_LIST_CAP, OFFER_CAP
from afp_runtime.findings.rows import BASES, EXPECTS, STANDINGS, AssertedValue
from afp_runtime.findings.texts import FINDINGS_INSTRUCTION
from afp_runtime.messages import Message
from afp_runtime.window import Standing


class Offer(NamedTuple):
    """The ids the ``toolCallId`` enum offers (newest first) and how many were left out."""

    ids: tuple[str, ...]
    left_out: int


NO_OFFER = Offer(ids=(), left_out=0)


class ResultStub(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What a set-aside result's served content is replaced by
    (docs/findings.md#stubs-for-set-aside-results).

    Encoded compactly, e.g. ``{"withheld":true,"standing":"noise","toolCallId":"c2"}``.
    """

    withheld: bool
    standing: Standing
    tool_call_id: str


class ServedFindings(msgspec.Struct, frozen=True, kw_only=True):
    """What findings add to one request.

    Attributes:
        instruction: ``FINDINGS_INSTRUCTION``, appended after the agent's own system pieces.
        ledger_piece: the ledger piece (the last system piece, source ``findings``), or None
            while the fold holds no standing.
        messages: the window as served: set-aside results stubbed, everything else as is.
    """

    instruction: str
    ledger_piece: str | None
    messages: tuple[Message, ...]


def offer_ids(window: Sequence[Message], standing_of: Mapping[str, Standing]) -> Offer:
    """The results the model may judge next, newest first, at most 32
    (docs/findings.md#the-offer-of-result-ids).

    Offerable: window ``tool`` messages, not settled, whose standing is undeclared, ``fact``
    or ``open``.
    """
    seen: dict[str, None] = {}
    for message in reversed(window):
        ident = judged_id(message)
        if ident is not None and standing_of.get(ident) in (None, "fact", "open"):
            seen.setdefault(ident, None)
    ids = tuple(seen)
    return Offer(ids=ids[:OFFER_CAP], left_out=max(0, len(ids) - OFFER_CAP))


def _choice(values: Sequence[str], description: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values), "description": description}


def _findings_schema(offer: Offer) -> dict[str, Any]:
    tool_call_id: dict[str, Any] = {"type": "string", "description": texts.TOOL_CALL_ID_DESCRIPTION}
    if offer.left_out:
        tool_call_id["description"] += " " + texts.offer_left_out(offer.left_out)
    if offer.ids:
        tool_call_id["enum"] = list(offer.ids)
    subject = {
        "type": "object",
        "description": texts.SUBJECT_DESCRIPTION,
        "properties": {
            "kind": {"type": "string", "description": texts.SUBJECT_KIND_DESCRIPTION},
            "id": {"type": "string", "description": texts.SUBJECT_ID_DESCRIPTION},
        },
        "required": ["kind", "id"],
    }
    assertion = {
        "type": "object",
        "properties": {
            "subject": subject,
            "predicate": {"type": "string", "description": texts.PREDICATE_DESCRIPTION},
            "value": {
                "type": ["string", "number", "boolean"],
                "description": texts.VALUE_DESCRIPTION,
            },
        },
        "required": ["subject", "predicate", "value"],
    }
    entry = {
        "type": "object",
        "properties": {
            "toolCallId": tool_call_id,
            "standing": _choice(STANDINGS, texts.STANDING_DESCRIPTION),
            "sought": {"type": "boolean", "description": texts.SOUGHT_DESCRIPTION},
            "assertions": {
                "type": "array",
                "description": texts.ASSERTIONS_DESCRIPTION,
                "items": assertion,
            },
            "settles": {"type": "string", "description": texts.SETTLES_DESCRIPTION},
            "line": {"type": "string", "description": texts.LINE_DESCRIPTION},
        },
        "required": ["toolCallId", "standing"],
    }
    return {
        "type": "object",
        "description": texts.FINDINGS_DESCRIPTION,
        "properties": {
            "basis": _choice(BASES, texts.BASIS_DESCRIPTION),
            "expect": _choice(EXPECTS, texts.EXPECT_DESCRIPTION),
            "proposition": {"type": "string", "description": texts.PROPOSITION_DESCRIPTION},
            "predicts": {"type": "string", "description": texts.PREDICTS_DESCRIPTION},
            "previous": {
                "type": "array",
                "description": texts.PREVIOUS_DESCRIPTION,
                "items": entry,
            },
        },
        "required": ["basis"],
    }


def decorate_schema(input_schema: Mapping[str, Any], offer: Offer | None = None) -> dict[str, Any]:
    """A tool's served input schema: a deep copy with the optional ``_findings`` property
    (docs/findings.md#how-the-schema-is-served).

    ``properties`` is created when absent (or not an object); ``required`` is never touched,
    so ``_findings`` is never required. ``input_schema`` itself is never changed.

    Args:
        input_schema: the registry's JSON schema of the tool's arguments.
        offer: the ids to offer (``offer_ids``); None or an empty offer adds no ``enum``.
    """
    served: dict[str, Any] = copy.deepcopy(dict(input_schema))
    properties = served.get("properties")
    if not isinstance(properties, dict):
        properties = {}
        served["properties"] = properties
    properties[FINDINGS_ARG] = _findings_schema(offer or NO_OFFER)
    return served


# --- the ledger piece and stubs (docs/findings.md#what-later-requests-see)
# -----------------------------------------------------------

_encode = msgspec.json.Encoder().encode


_LINE_BREAKS = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _flat(text: str) -> str:
    """A free text on one line: every line break becomes a space (display only)."""
    return _LINE_BREAKS.sub(" ", text)


def _value_text(value: AssertedValue) -> str:
    if isinstance(value, str):
        return _flat(value)
    return _encode(value).decode("utf-8")


def _capped(lines: Iterator[str], total: int) -> list[str]:
    """The first ``FINDINGS_LIST_CAP`` lines, then a statement of how many were not shown."""
    shown = list(itertools.islice(lines, FINDINGS_LIST_CAP))
    if total > len(shown):
        shown.append(texts.not_shown(total - len(shown)))
    return shown


def _fact_lines(fold: LedgerFold) -> Iterator[str]:
    for row in fold.rows_in_order("fact"):
        if not row.assertions:
            name = row.tool_name if isinstance(row.tool_name, str) else None
            yield texts.bare_fact_line(name, row.tool_call_id)
        for a in row.assertions:
            yield texts.fact_line(
                _flat(a.subject.kind),
                _flat(a.subject.id),
                _flat(a.predicate),
                _value_text(a.value),
                a.provenance,
            )


def _conflict_lines(fold: LedgerFold) -> Iterator[str]:
    for (kind, ident, predicate), witnesses in fold.conflicts_in_order():
        yield texts.conflict_line(
            _flat(kind),
            _flat(ident),
            _flat(predicate),
            [
                texts.witness_text(_value_text(w.assertion.value), f"tool:{w.tool_call_id}")
                for w in witnesses[:FINDINGS_LIST_CAP]
            ]
            + (
                [texts.more_witnesses(len(witnesses) - FINDINGS_LIST_CAP)]
                if len(witnesses) > FINDINGS_LIST_CAP
                else []
            ),
        )


def _ruled_out_lines(fold: LedgerFold) -> Iterator[str]:
    for row in fold.rows_in_order("ruled-out"):
        basis = fold.basis_of.get(row.tool_call_id)
        proposition = basis.proposition if basis is not None else msgspec.UNSET
        yield texts.ruled_out_line(
            row.tool_call_id,
            _flat(row.line) if isinstance(row.line, str) else None,
            _flat(proposition) if isinstance(proposition, str) else None,
        )


def _open_lines(fold: LedgerFold) -> Iterator[str]:
    for row in fold.rows_in_order("open"):
        settles = _flat(row.settles) if isinstance(row.settles, str) else None
        yield texts.open_line(row.tool_call_id, settles)


def _undeclared_in_view(window: Sequence[Message], standing_of: Mapping[str, Standing]) -> int:
    judged = (judged_id(m) for m in window)
    return sum(1 for ident in judged if ident is not None and ident not in standing_of)


def ledger_piece(window: Sequence[Message], fold: LedgerFold, config: FindingsConfig) -> str | None:
    """The ledger piece (docs/findings.md#the-ledger-piece), or None while the fold holds no
    standing."""
    if not fold.standing_of:
        return None
    lines = [texts.LEDGER_HEADER]
    sections = (
        (texts.FACTS_LABEL, _fact_lines(fold), lambda f: f.fact_entries),
        (texts.CONFLICTS_LABEL, _conflict_lines(fold), lambda f: len(f.conflicts)),
        (texts.RULED_OUT_LABEL, _ruled_out_lines(fold), lambda f: f.count("ruled-out")),
        (texts.OPEN_LABEL, _open_lines(fold), lambda f: f.count("open")),
    )
    for label, entries, total in sections:
        count = total(fold)
        if count:
            lines.append(label)
            lines.extend(_capped(entries, count))
    lines.append(
        texts.counts_line(fold.count("noise"), _undeclared_in_view(window, fold.standing_of))
    )
    if config.answer_ask == "quote-facts":
        lines.append(texts.QUOTE_FACTS_ASK)
    return "\n".join(lines)


def _served_copy(
    message: Message, standing_of: Mapping[str, Standing], config: FindingsConfig
) -> Message:
    """The message as served: its stub when its result is set aside, else the message itself."""
    ident = judged_id(message)
    standing = None if ident is None else standing_of.get(ident)
    if standing in ("noise", "ruled-out") or (standing == "fact" and config.serve == "ledger-only"):
        return stub_for(message, standing)
    return message


def stub_for(message: Message, standing: Standing) -> Message:
    """The served copy of a set-aside result: same role, ids and markers, stub content."""
    stub = ResultStub(withheld=True, standing=standing, tool_call_id=message.tool_call_id or "")
    return msgspec.structs.replace(message, content=_encode(stub).decode("utf-8"))


def serve_findings(
    window: Sequence[Message], fold: LedgerFold, config: FindingsConfig
) -> ServedFindings:
    """What findings add to one request of an armed agent
    (docs/findings.md#what-later-requests-see); ``window`` is not changed.

    Returns:
        The instruction (always), the ledger piece (from the first standing on) and the
        window as served: each result judged ``noise`` or ``ruled-out`` (and ``fact`` under
        ``serve="ledger-only"``) replaced by its stub; roles, ids, order and count unchanged.
    """
    return ServedFindings(
        instruction=FINDINGS_INSTRUCTION,
        ledger_piece=ledger_piece(window, fold, config),
        messages=tuple(_served_copy(m, fold.standing_of, config) for m in window),
    )
