"""Receipts: digests of exactly what one model call sends, minted before it is sent.

A receipt holds no content bytes: only digests salted with the run id, counts, names and small
scalars. The message part is one running digest over the as-sent entries, extended in O(new
messages) while the window only grows
(docs/architecture.md#decision-2-receipts-grow-with-new-messages-only).
"""

from __future__ import annotations

import functools
from binascii import hexlify
from collections import Counter
from collections.abc import Mapping, MutableMapping, Sequence
from hashlib import sha256
from typing import Any, Literal

import msgspec

from afp_runtime.messages import (
    Message,
    ModelParams,
    ModelRequest,
    ToolSchema,
    canonical_json,
    message_body,
    salt,
    salted,
)

RECEIPT_VERSION = 1


class Basis(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Which call this is: epoch, run, model id, provider."""

    epoch: int
    run_id: str
    model: str
    provider: str


class PieceDigest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One contributing system piece: H of its text, its slot and its source."""

    hash: str
    slot: str
    source: str


class SystemDigest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """H of the joined system text, its length in code points, and each contributing piece."""

    hash: str
    chars: int
    pieces: tuple[PieceDigest, ...] = ()


class NewEntry(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """An as-sent entry new since the base receipt: index, role, H(canonical body), tool key."""

    index: int
    role: str
    hash: str
    key: str | None = None


class RequestOnlyDigest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A request-only line (never in history): role, H, and why it was added."""

    role: str
    hash: str
    reason: str


class MessagesDigest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Count of messages sent, the running digest over the as-sent entries, the entries new
    since the base receipt, and the request-only lines."""

    count: int
    digest: str
    new_entries: tuple[NewEntry, ...] = ()
    request_only: tuple[RequestOnlyDigest, ...] = ()


class ToolsDigest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Served tool names in order and H of each schema; forced and withheld markers."""

    names: tuple[str, ...]
    schema_hashes: dict[str, str]
    forced: str | None
    withheld: Literal["wrap-up"] | None


class WireDigest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """H and length of the exact request body, the encoder id and H of its settings."""

    hash: str
    bytes: int
    encoder: str
    settings: str
    deterministic: bool


class OmittedForAttention(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """H of each message this iteration's window visit removed, in removal order."""

    count: int
    hashes: tuple[str, ...]


class Receipt(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What one model call sent, digested at send time (docs/served.md#receipt-fields)."""

    version: int
    basis: Basis
    agent_call: int
    call_runtime_stage_id: str
    system: SystemDigest
    messages: MessagesDigest
    tools: ToolsDigest
    params: ModelParams
    omitted_for_attention: OmittedForAttention | None = None
    wire: WireDigest | None = None


class RunningDigest(msgspec.Struct, frozen=True, kw_only=True):
    """The running digest over ``count`` as-sent entries of one run."""

    count: int
    digest: str


class _Entry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    role: str
    fingerprint: str
    key: str | None = None


@functools.lru_cache(maxsize=8192)
def _entry_part(role: str, fingerprint: str, key: str | None) -> bytes:
    """The separator and canonical JSON of one entry: what a chain step hashes after the
    previous digest. Unsalted, so shared by every run: after a window change a run re-chains
    its whole window, and every entry but the new ones was encoded at an earlier call."""
    return b"\x1f" + canonical_json(_Entry(role=role, fingerprint=fingerprint, key=key))


def start_digest(run_id: str) -> RunningDigest:
    """The digest of no entries: H('')."""
    return RunningDigest(count=0, digest=salted(run_id, b""))


def extend_digest(
    run_id: str, state: RunningDigest, messages: Sequence[Message], fingerprints: Sequence[str]
) -> RunningDigest:
    """Extend ``state`` with the entries of ``messages[state.count:]``.

    Each step is ``H(previous digest, 0x1f, canonical entry)``
    (docs/served.md#the-running-digest). The chain is the receipt's form, so a window that lost
    its front is chained again from the start; each step is then one SHA-256 over cached bytes
    (the entry's encoding is cached by role, fingerprint and key; the hex is made in C).
    """
    prefix = salt(run_id)
    digest = state.digest.encode("ascii")
    for index in range(state.count, len(messages)):
        message = messages[index]
        role = message.role
        part = _entry_part(
            role, fingerprints[index], message.tool_call_id if role == "tool" else None
        )
        digest = hexlify(sha256(prefix + digest + part).digest())
    return RunningDigest(count=len(messages), digest=digest.decode("ascii"))


def body_hash(
    run_id: str, message: Message, fp: str, hashes: MutableMapping[str, str] | None = None
) -> str:
    """H(canonical body) of ``message``, whose fingerprint is ``fp``; ``hashes`` (fingerprint
    to H, for this run) is consulted first and filled in, so a body is hashed once per run."""
    if hashes is None:
        return salted(run_id, message_body(message))
    found = hashes.get(fp)
    if found is None:
        found = hashes[fp] = salted(run_id, message_body(message))
    return found


def new_entries(
    run_id: str,
    sent: Sequence[Message],
    fingerprints: Sequence[str],
    base: Mapping[str, int],
    hashes: MutableMapping[str, str] | None = None,
    counts: Mapping[str, int] | None = None,
) -> tuple[NewEntry, ...]:
    """Entries of ``sent`` new since the base call
    (docs/architecture.md#decision-2-receipts-grow-with-new-messages-only,
    docs/served.md#receipt-fields).

    An entry is new when its fingerprint occurs more often here than in the base call
    (``base`` counts the base call's fingerprints); of a fingerprint's occurrences, the surplus
    is taken from the last ones. ``hashes`` is a cache of body hashes (see ``body_hash``);
    ``counts``, the fingerprint counts of ``fingerprints`` when the caller has them.
    """
    counts = Counter(fingerprints) if counts is None else counts
    surplus = {fp: n - base.get(fp, 0) for fp, n in counts.items() if n > base.get(fp, 0)}
    picked: list[int] = []
    # From the newest back, and only until every surplus is placed: what a window gained is
    # mostly at its end.
    remaining = sum(surplus.values())
    index = len(fingerprints)
    while remaining and index:
        index -= 1
        fp = fingerprints[index]
        left = surplus.get(fp, 0)
        if left > 0:
            surplus[fp] = left - 1
            remaining -= 1
            picked.append(index)
    picked.reverse()
    return tuple(
        NewEntry(
            index=index,
            role=sent[index].role,
            hash=body_hash(run_id, sent[index], fingerprints[index], hashes),
            key=sent[index].tool_call_id if sent[index].role == "tool" else None,
        )
        for index in picked
    )


def request_only_hash(run_id: str, text: str, role: str = "user") -> str:
    """H of a request-only line, digested as the message ``{role, content: text}``."""
    return salted(run_id, message_body(Message(role=role, content=text)))  # type: ignore[arg-type]


def schema_hash(run_id: str, schema: ToolSchema) -> str:
    """H of one tool schema's canonical JSON ``{name, description, inputSchema}``."""
    return salted(run_id, canonical_json(schema))


def wire_digest(
    run_id: str, body: bytes, *, encoder: str, settings: Any, deterministic: bool
) -> WireDigest:
    """The wire part of a receipt."""
    return WireDigest(
        hash=salted(run_id, body),
        bytes=len(body),
        encoder=encoder,
        settings=salted(run_id, canonical_json(settings)),
        deterministic=deterministic,
    )


def mint_receipt(
    run_id: str,
    request: ModelRequest,
    *,
    epoch: int,
    model: str,
    provider: str,
    agent_call: int,
    call_runtime_stage_id: str,
    digest: RunningDigest,
    entries: tuple[NewEntry, ...],
    request_only: Sequence[Mapping[str, Any]],
    system_pieces: Sequence[Mapping[str, Any]],
    schema_hashes: Mapping[str, str],
    withheld: Literal["wrap-up"] | None,
    omitted: tuple[str, ...],
    wire: WireDigest | None,
) -> Receipt:
    """The receipt of ``request``, its agent's ``agent_call``-th model call
    (docs/served.md#receipt-fields).

    ``digest`` and ``entries`` are the running digest and the entries new since the base call
    (``extend_digest``, ``new_entries``); ``request_only`` and ``system_pieces`` are the served
    record's lines (``role``, ``text``, ``reason``) and pieces (``text``, ``slot``, ``source``;
    empty pieces contribute nothing); ``omitted`` the hashes this iteration's window visit
    removed. The digest structs are assembled here, so the loop names only this function.
    """
    return Receipt(
        version=RECEIPT_VERSION,
        basis=Basis(epoch=epoch, run_id=run_id, model=model, provider=provider),
        agent_call=agent_call,
        call_runtime_stage_id=call_runtime_stage_id,
        system=SystemDigest(
            hash=salted(run_id, request.system),
            chars=len(request.system),
            pieces=tuple(
                PieceDigest(hash=salted(run_id, p["text"]), slot=p["slot"], source=p["source"])
                for p in system_pieces
                if p["text"]
            ),
        ),
        messages=MessagesDigest(
            count=len(request.messages),
            digest=digest.digest,
            new_entries=entries,
            request_only=tuple(
                RequestOnlyDigest(
                    role=line["role"],
                    hash=request_only_hash(run_id, line["text"], line["role"]),
                    reason=line["reason"],
                )
                for line in request_only
            ),
        ),
        tools=ToolsDigest(
            names=tuple(t.name for t in request.tools),
            schema_hashes={t.name: schema_hashes[t.name] for t in request.tools},
            forced=None,
            withheld=withheld,
        ),
        params=request.params,
        omitted_for_attention=(
            OmittedForAttention(count=len(omitted), hashes=omitted) if omitted else None
        ),
        wire=wire,
    )
