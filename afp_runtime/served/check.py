"""The conformance law: check a served view against the receipt of the same epoch
(docs/served.md#the-conformance-law).

Each clause compares one receipt path with its counterpart recomputed from the view. A clause
that holds is ``pass``; a mismatch in a field some *excuse* gap names is ``excused``; any other
mismatch is ``fail``. Without an accepted receipt every clause is ``not-checkable``.
``verdict``: ``verified`` when every clause passes (the wire clause included), ``damaged`` when
one fails, ``reconstructed`` otherwise.

Readings settled here (docs/served.md leaves them open or does not cover them):

* ``tools.forced`` and ``tools.withheld`` are two clauses; the order of clauses is ``CLAUSES``.
* Detail codes: ``epoch-differs``, ``hash-differs``, ``chars-differs``, ``count-differs``,
  ``length-differs``, ``names-differ``, ``keys-differ``, ``forced-differs``,
  ``withheld-differs``, ``digest-differs``, and per element ``index-N-hash-differs``,
  ``index-N-role-differs``, ``index-N-key-differs``, ``index-N-slot-differs``,
  ``index-N-source-differs``, ``index-N-reason-differs``, ``index-N-outside``; for the wire
  ``no-wire``, ``not-deterministic``, ``encoder-unavailable``, ``encoder-changed``,
  ``encode-failed``, ``composition-incomplete``, ``no-receipt``. A failing clause names its
  first difference.
* With the log, a failing ``messages.digest`` names the first index of the as-sent reference
  list (the list the call read, missing bodies included) whose stored body does not hash to
  its fingerprint; substituted messages stored inline have no body to check.
* The wire clause needs the whole composition: when a composition clause (``system.*``,
  ``messages.*``, ``tools.*``) is ``excused`` the rebuilt request is known to be incomplete,
  so the wire clause is ``not-checkable`` (``composition-incomplete``) and nothing is encoded.
  An encoder whose ``encode`` raises gives ``not-checkable`` (``encode-failed``).
* ``runId`` of the report comes from the receipt, else the view's basis, else the log; it is
  absent when none of them is available.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, Protocol

import msgspec

from afp_runtime.messages import (
    ModelRequest,
    canonical_json,
    fingerprint,
    message_body,
    salted,
    sha256_hex,
)
from afp_runtime.records import MessageRef, RunLog
from afp_runtime.served.bodies import as_sent_slots
from afp_runtime.served.gaps import excused_fields
from afp_runtime.served.locate import find
from afp_runtime.served.payloads import thaw_message
from afp_runtime.served.receipt import (
    Basis,
    Receipt,
    extend_digest,
    request_only_hash,
    schema_hash,
    start_digest,
)
from afp_runtime.served.view import ServedBasis, ServedView

ClauseStatus = Literal["pass", "fail", "excused", "not-checkable"]
Verdict = Literal["verified", "reconstructed", "damaged"]

# The receipt paths a wire mismatch concerns (for excuses); every other clause names itself.
_WIRE_FIELDS: Final = frozenset({"wire.hash", "wire.bytes"})
_COMPOSITION_PREFIXES: Final = ("system.", "messages.", "tools.")


class EncodedBody(Protocol):
    """What an encoder returns: the exact body bytes."""

    @property
    def body(self) -> bytes: ...


class BodyEncoder(Protocol):
    """The encoding half of a model adapter, as the wire clause needs it
    (docs/loop.md#the-model-port)."""

    @property
    def encoder(self) -> str | None: ...

    @property
    def deterministic(self) -> bool: ...

    def settings(self) -> Mapping[str, Any]: ...

    def encode(self, request: ModelRequest) -> EncodedBody: ...


class ClauseResult(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One clause of the law: its name, status, and a short detail code when not passing."""

    clause: str
    status: ClauseStatus
    detail: str | None = None


class ConformanceReport(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """The outcome of checking one view against its receipt (docs/served.md#the-conformance-law)."""

    epoch: int
    verdict: Verdict
    clauses: tuple[ClauseResult, ...]
    gaps: tuple[str, ...]
    run_id: str | None = None


def rebuild_request(view: ServedView, receipt: Receipt) -> ModelRequest:
    """The request the view describes, as the adapter would have been handed it
    (docs/served.md#the-wire-digest)."""
    return ModelRequest(
        model=receipt.basis.model,
        system=view.system.text,
        messages=(
            *(thaw_message(m) for m in view.messages.as_sent),
            *(line.as_message() for line in view.messages.request_only),
        ),
        tools=tuple(schema.as_schema() for schema in view.tools.schemas),
        forced=view.tools.forced,
        params=receipt.params,
    )


# Each clause returns None when it holds, else a detail code.
_Clause = Callable[[ServedView, Receipt, Callable[[bytes | str], str]], "str | None"]


def _epoch(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    return None if r.basis.epoch == v.epoch else "epoch-differs"


def _system_hash(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    return None if h(v.system.text) == r.system.hash else "hash-differs"


def _system_chars(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    return None if len(v.system.text) == r.system.chars else "chars-differs"


def _system_pieces(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    if len(v.system.pieces) != len(r.system.pieces):
        return "length-differs"
    for i, (piece, digest) in enumerate(zip(v.system.pieces, r.system.pieces, strict=True)):
        if h(piece.text) != digest.hash:
            return f"index-{i}-hash-differs"
        if piece.slot != digest.slot:
            return f"index-{i}-slot-differs"
        if piece.source != digest.source:
            return f"index-{i}-source-differs"
    return None


def _messages_count(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    count = len(v.messages.as_sent) + len(v.messages.request_only)
    return None if count == r.messages.count else "count-differs"


def _messages_digest(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    sent = [thaw_message(m) for m in v.messages.as_sent]
    run_id = r.basis.run_id
    state = extend_digest(run_id, start_digest(run_id), sent, [fingerprint(m) for m in sent])
    return None if state.digest == r.messages.digest else "digest-differs"


def _new_entries(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    sent = v.messages.as_sent
    for entry in r.messages.new_entries:
        i = entry.index
        if not 0 <= i < len(sent):
            return f"index-{i}-outside"
        message = thaw_message(sent[i])
        if message.role != entry.role:
            return f"index-{i}-role-differs"
        if h(message_body(message)) != entry.hash:
            return f"index-{i}-hash-differs"
        key = message.tool_call_id if message.role == "tool" else None
        if key != entry.key:
            return f"index-{i}-key-differs"
    return None


def _request_only(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    lines, digests = v.messages.request_only, r.messages.request_only
    if len(lines) != len(digests):
        return "length-differs"
    for i, (line, digest) in enumerate(zip(lines, digests, strict=True)):
        if line.role != digest.role:
            return f"index-{i}-role-differs"
        if line.reason != digest.reason:
            return f"index-{i}-reason-differs"
        if request_only_hash(r.basis.run_id, line.text, line.role) != digest.hash:
            return f"index-{i}-hash-differs"
    return None


def _tools_names(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    return None if tuple(v.tools.names) == tuple(r.tools.names) else "names-differ"


def _tools_forced(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    return None if v.tools.forced == r.tools.forced else "forced-differs"


def _tools_withheld(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    return None if v.tools.withheld == r.tools.withheld else "withheld-differs"


def _schema_hashes(v: ServedView, r: Receipt, h: Callable[[bytes | str], str]) -> str | None:
    hashes = r.tools.schema_hashes
    if set(hashes) != set(v.tools.names):
        return "keys-differ"
    for i, schema in enumerate(v.tools.schemas):
        if schema_hash(r.basis.run_id, schema.as_schema()) != hashes.get(schema.name):
            return f"index-{i}-hash-differs"
    return None


_CHECKS: Final[Mapping[str, _Clause]] = {
    "epoch": _epoch,
    "system.hash": _system_hash,
    "system.chars": _system_chars,
    "system.pieces": _system_pieces,
    "messages.count": _messages_count,
    "messages.digest": _messages_digest,
    "messages.newEntries": _new_entries,
    "messages.requestOnly": _request_only,
    "tools.names": _tools_names,
    "tools.forced": _tools_forced,
    "tools.withheld": _tools_withheld,
    "tools.schemaHashes": _schema_hashes,
}

CLAUSES: Final[tuple[str, ...]] = (*_CHECKS, "wire")


def _damaged_index(view: ServedView, log: RunLog) -> str | None:
    """The first as-sent reference whose stored body does not hash to its fingerprint."""
    hit = find(log, view.epoch)
    if hit is None:
        return None
    seq = hit[0].anchor.seq
    history = log.value_at("history", seq)
    if not isinstance(history, list | tuple):
        return None
    for i, slot in enumerate(as_sent_slots(history, log.value_at("substitutions", seq))):
        if isinstance(slot, MessageRef):
            body = log.body(slot.fingerprint)
            if body is not None and sha256_hex(body) != slot.fingerprint:
                return f"index-{i}-hash-differs"
    return None


def _wire(
    view: ServedView, receipt: Receipt, encoder: BodyEncoder | None
) -> tuple[ClauseStatus, str | None]:
    wire = receipt.wire
    if wire is None:
        return "not-checkable", "no-wire"
    if not wire.deterministic:
        return "not-checkable", "not-deterministic"
    if encoder is None or encoder.encoder is None:
        return "not-checkable", "encoder-unavailable"
    run_id = receipt.basis.run_id
    settings = salted(run_id, canonical_json(dict(encoder.settings())))
    if encoder.encoder != wire.encoder or settings != wire.settings:
        return "not-checkable", "encoder-changed"
    try:
        body = encoder.encode(rebuild_request(view, receipt)).body
    except Exception:  # a user adapter may refuse the rebuilt request in any way
        return "not-checkable", "encode-failed"
    if salted(run_id, body) != wire.hash:
        return "fail", "hash-differs"
    if len(body) != wire.bytes:
        return "fail", "length-differs"
    return "pass", None


def _verdict(results: tuple[ClauseResult, ...]) -> Verdict:
    statuses = {result.status for result in results}
    if "fail" in statuses:
        return "damaged"
    if statuses == {"pass"}:
        return "verified"
    return "reconstructed"


def check(
    view: ServedView,
    receipt: Receipt | None,
    *,
    encoder: BodyEncoder | None = None,
    log: RunLog | None = None,
) -> ConformanceReport:
    """Check ``view`` against ``receipt`` clause by clause (docs/served.md#the-conformance-law).

    Args:
        view: the served view of one epoch.
        receipt: that epoch's accepted receipt, or None when there is none.
        encoder: the adapter available now, for the byte-for-byte wire clause.
        log: the run's log, to name the damaged body when the message digest differs.
    """
    gaps = tuple(gap.gap for gap in view.gaps)
    basis: Basis | ServedBasis | None = view.basis if receipt is None else receipt.basis
    run_id = basis.run_id if basis is not None else log.run_id if log is not None else None
    if receipt is None:
        results = tuple(
            ClauseResult(clause=clause, status="not-checkable", detail="no-receipt")
            for clause in CLAUSES
        )
        return ConformanceReport(
            run_id=run_id, epoch=view.epoch, verdict=_verdict(results), clauses=results, gaps=gaps
        )
    excused = excused_fields(view.gaps)

    def h(data: bytes | str) -> str:
        return salted(receipt.basis.run_id, data)

    results_list: list[ClauseResult] = []
    for clause, rule in _CHECKS.items():
        detail = rule(view, receipt, h)
        if detail is None:
            results_list.append(ClauseResult(clause=clause, status="pass"))
            continue
        if clause in excused:
            results_list.append(ClauseResult(clause=clause, status="excused", detail=detail))
            continue
        if clause == "messages.digest" and log is not None:
            detail = _damaged_index(view, log) or detail
        results_list.append(ClauseResult(clause=clause, status="fail", detail=detail))
    incomplete = any(
        result.status == "excused" and result.clause.startswith(_COMPOSITION_PREFIXES)
        for result in results_list
    )
    status: ClauseStatus
    wire_detail: str | None
    if incomplete:
        status, wire_detail = "not-checkable", "composition-incomplete"
    else:
        status, wire_detail = _wire(view, receipt, encoder)
        if status == "fail" and _WIRE_FIELDS & excused:
            status = "excused"
    results_list.append(ClauseResult(clause="wire", status=status, detail=wire_detail))
    results = tuple(results_list)
    return ConformanceReport(
        run_id=run_id, epoch=view.epoch, verdict=_verdict(results), clauses=results, gaps=gaps
    )
