"""Gaps: the limits of what one served view can prove (docs/served.md#gaps).

A gap is either an *excuse* (the log lacks what is needed to rebuild some fields, so a checker
may tolerate a mismatch in them) or a *caveat* (the fields are rebuilt and match, yet something
the record does not cover might still have differed, so no mismatch is tolerated on its
account). The catalogue is closed; a view pushes its gaps in the order of ``GAP_KINDS``.

Field names are receipt paths (``system.hash``, ``messages.digest`` …); the one exception is
``epoch``, which names the view's own number. ``VIEW_FIELD_PATHS`` maps the view fields that
have no receipt path of the same name onto the receipt paths that prove them.

Readings settled here (docs/served.md leaves them open or does not cover them):

* ``refs`` of ``body-missing`` holds up to 32 missing fingerprints (first-seen order, no
  repeats); when more are missing, one further element, an ``int``, counts the rest.
* ``body-missing`` names the fields of each container that lost an element, grouped in the
  catalogue's order (messages, system pieces, tool schemas, request-only lines).
* ``UNGAPPED_FIELDS`` also holds the receipt's ``version``: no gap in the catalogue names it,
  and like ``gaps`` it describes the record's own shape, not the request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final, Literal, get_args

import msgspec

GapKind = Literal[
    "no-fold-base",
    "no-conversation-on-record",
    "body-missing",
    "no-receipt-on-record",
    "no-wire-digest",
    "wire-not-reproducible",
    "provider-defaults",
]

ReceiptCause = Literal["receipt-missing", "receipt-shape-rejected"]

GAP_KINDS: Final[tuple[GapKind, ...]] = get_args(GapKind)

# How many missing fingerprints ``body-missing`` lists before it counts the rest.
MAX_GAP_REFS: Final = 32

RECEIPT_BOUNDARY: Final = (
    "A receipt describes the request only up to the bytes this runtime handed to its HTTP "
    "client; whatever handled the request after that, such as a proxy or the endpoint itself, "
    "could change it or add to it without the receipt showing any of it."
)

GAP_WHY: Final[Mapping[GapKind, str]] = MappingProxyType(
    {
        "no-fold-base": (
            "This record begins part-way through the run, so the system text, messages, tools "
            "and call number shown here are unproved and may be shorter than what was really "
            "sent: anything written before the first kept entry reads as empty. The number may "
            "count positions in this record rather than the run's own calls. Load a complete "
            "copy of the run to prove these fields."
        ),
        "no-conversation-on-record": (
            "The conversation that went out with this call is not on record here. An empty "
            "message list on this view means the turns are unknown, not that none were sent, "
            "so the message count and message digests cannot be compared. Load a complete copy "
            "of the run to see them."
        ),
        "body-missing": (
            "Some stored texts this call referred to could not be found; their fingerprints are "
            "listed. The view leaves them out instead of guessing what they said, so the "
            "counts and digests of the lists that lost them cannot match. Repair the store from "
            "a backup, or read a complete export that still holds those texts."
        ),
        "no-receipt-on-record": (
            "No usable digest record exists for this call, so nothing on this view has been "
            "verified against what was sent. The listed fields are unavailable as a whole, and "
            "their absence says nothing about the call itself; in particular it does not mean "
            "that some setting was left unset."
        ),
        "no-wire-digest": (
            "The model adapter did not witness the encoded request body, so the bytes that "
            "reached the endpoint may differ from the composition shown here, for instance by "
            "added cache markers or merged roles. The system text, messages and tools "
            "themselves are proved."
        ),
        "wire-not-reproducible": (
            "The request body was witnessed by its digest, but the adapter cannot encode it "
            "again byte for byte from what is recorded, so the byte-level comparison cannot be "
            "run. The composition shown here is proved; only the final bytes go unchecked."
        ),
        "provider-defaults": (
            "A sampling setting absent from the recorded parameters was not sent by this "
            "runtime; that does not mean the model ran without it, because the endpoint fills "
            "in defaults of its own. " + RECEIPT_BOUNDARY
        ),
    }
)

_COMPOSITION: Final = (
    "system.hash",
    "system.chars",
    "system.pieces",
    "messages.count",
    "messages.digest",
    "messages.newEntries",
    "messages.requestOnly",
    "tools.names",
    "tools.schemaHashes",
    "tools.forced",
    "tools.withheld",
)

# Per container that can lose an element: the fields a lost element leaves unproved.
BODY_MISSING_GROUPS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "messages": ("messages.digest", "messages.newEntries", "messages.count"),
        "pieces": ("system.pieces", "system.hash", "system.chars"),
        "schemas": ("tools.schemaHashes", "tools.names"),
        "requestOnly": ("messages.requestOnly",),
    }
)

GAP_FIELDS: Final[Mapping[GapKind, tuple[str, ...]]] = MappingProxyType(
    {
        "no-fold-base": (*_COMPOSITION, "epoch"),
        "no-conversation-on-record": (
            "messages.count",
            "messages.digest",
            "messages.newEntries",
        ),
        "body-missing": tuple(f for group in BODY_MISSING_GROUPS.values() for f in group),
        "no-receipt-on-record": (
            "basis.model",
            "basis.provider",
            "basis.runId",
            "basis.epoch",
            "params",
            "agentCall",
            "omittedForAttention",
            "wire.hash",
            "wire.bytes",
            "wire.encoder",
            "wire.settings",
            "wire.deterministic",
        ),
        "no-wire-digest": ("wire.hash", "wire.bytes", *_COMPOSITION),
        "wire-not-reproducible": ("wire.hash",),
        "provider-defaults": ("params",),
    }
)

# The fields each kind excuses; every other field it names is a caveat.
GAP_EXCUSES: Final[Mapping[GapKind, frozenset[str]]] = MappingProxyType(
    {
        "no-fold-base": frozenset(GAP_FIELDS["no-fold-base"]),
        "no-conversation-on-record": frozenset(GAP_FIELDS["no-conversation-on-record"]),
        "body-missing": frozenset(GAP_FIELDS["body-missing"]),
        "no-receipt-on-record": frozenset(GAP_FIELDS["no-receipt-on-record"]),
        "no-wire-digest": frozenset({"wire.hash", "wire.bytes"}),
        "wire-not-reproducible": frozenset(),
        "provider-defaults": frozenset(),
    }
)

UNGAPPED_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "callRuntimeStageId": (
            "It is taken directly from where the call sits in the run's record, so it is known "
            "for every call and can never be missing."
        ),
        "gaps": (
            "It lists the limits of this view itself and says nothing about the request that "
            "was sent to the model."
        ),
        "version": (
            "It is the format number of the digest record itself and says nothing about the "
            "request that was sent to the model."
        ),
    }
)

# View fields with no receipt path of the same name, and the receipt paths that prove them.
VIEW_FIELD_PATHS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "system.text": ("system.hash", "system.chars"),
        "messages.asSent": ("messages.digest", "messages.newEntries", "messages.count"),
        "tools.schemas": ("tools.schemaHashes",),
    }
)


class ServedGap(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One limit of a served view (docs/served.md#gaps).

    Attributes:
        gap: the kind, one of ``GAP_KINDS``.
        fields: the receipt paths it concerns (``epoch`` names the view's number).
        why: a fixed explanation for readers, one per kind.
        cause: ``receipt-missing`` or ``receipt-shape-rejected``; only on
            ``no-receipt-on-record``.
        refs: only on ``body-missing``: up to 32 missing fingerprints, then (when more are
            missing) the count of the rest as an ``int``.
    """

    gap: GapKind
    fields: tuple[str, ...]
    why: str
    cause: ReceiptCause | None = None
    refs: tuple[str | int, ...] = ()


def make_gap(
    kind: GapKind,
    *,
    fields: tuple[str, ...] | None = None,
    cause: ReceiptCause | None = None,
    refs: Iterable[str] = (),
) -> ServedGap:
    """A gap of ``kind`` with its catalogue fields (or ``fields``) and its ``why``.

    ``refs`` are missing fingerprints; repeats are dropped and, past 32, the rest is counted.
    """
    unique = tuple(dict.fromkeys(refs))
    shown: tuple[str | int, ...] = unique[:MAX_GAP_REFS]
    if len(unique) > MAX_GAP_REFS:
        shown = (*shown, len(unique) - MAX_GAP_REFS)
    return ServedGap(
        gap=kind,
        fields=GAP_FIELDS[kind] if fields is None else fields,
        why=GAP_WHY[kind],
        cause=cause,
        refs=shown,
    )


def body_missing_fields(containers: Iterable[str]) -> tuple[str, ...]:
    """The ``body-missing`` fields for the containers that lost an element, catalogue order."""
    lost = set(containers)
    return tuple(f for name, group in BODY_MISSING_GROUPS.items() if name in lost for f in group)


def excused_fields(gaps: Iterable[ServedGap]) -> frozenset[str]:
    """Every field some gap in ``gaps`` excuses."""
    excused: set[str] = set()
    for gap in gaps:
        excused |= GAP_EXCUSES[gap.gap] & set(gap.fields)
    return frozenset(excused)
