"""Gaps (docs/served.md#gaps): the closed catalogue, its wording rules, and the field walk."""

from __future__ import annotations

import re
from typing import Any, get_args, get_origin, get_type_hints

import msgspec

from afp_runtime.served import Receipt, ServedView
from afp_runtime.served.gaps import (
    GAP_EXCUSES,
    GAP_FIELDS,
    GAP_KINDS,
    GAP_WHY,
    RECEIPT_BOUNDARY,
    UNGAPPED_FIELDS,
    VIEW_FIELD_PATHS,
)

# Internal names a reader must never meet in a why text: committed keys, stages, modules.
FORBIDDEN = (
    "history",
    "seed",
    "msgspec",
    "initialState",
    "substitutions",
    "systemPieces",
    "servedTools",
    "requestOnly",
    "wrapUpAsked",
    "forcedTool",
    "receipt stage",
    "call-model",
    "tool-calls",
    "value_at",
    "RunLog",
    "afp_runtime",
    "served.",
    "version",
)


def _paths(struct: type[msgspec.Struct], prefix: str = "") -> list[str]:
    """Every leaf path of a Struct type, camelCase, nested Structs expanded."""
    paths = []
    hints = get_type_hints(struct)
    for field in msgspec.structs.fields(struct):
        path = prefix + field.encode_name
        inner = _struct_in(hints[field.name])
        if inner is None:
            paths.append(path)
        else:
            paths += [path, *_paths(inner, path + ".")]
    return paths


def _struct_in(annotation: Any) -> type[msgspec.Struct] | None:
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return annotation
    if get_origin(annotation) is None:
        return None
    if get_origin(annotation) is tuple:
        return None
    structs = [a for a in get_args(annotation) if _struct_in(a) is not None]
    return _struct_in(structs[0]) if len(structs) == 1 else None


def _named() -> set[str]:
    return {field for fields in GAP_FIELDS.values() for field in fields}


def _covered(path: str, named: set[str]) -> bool:
    parts = path.split(".")
    prefixes = {".".join(parts[: n + 1]) for n in range(len(parts))}
    if prefixes & (named | set(UNGAPPED_FIELDS)):
        return True
    proved_by = VIEW_FIELD_PATHS.get(path, ())
    return bool(proved_by) and set(proved_by) <= named


def _is_leaf(path: str, paths: list[str]) -> bool:
    return not any(other.startswith(path + ".") for other in paths)


def test_every_field_is_named_by_some_gap() -> None:
    """Case 27: every view field and receipt path outside UNGAPPED_FIELDS is named by a gap."""
    named = _named()
    for struct in (ServedView, Receipt):
        paths = _paths(struct)
        leaves = [p for p in paths if _is_leaf(p, paths)]
        assert leaves, struct
        uncovered = [p for p in leaves if not _covered(p, named)]
        assert uncovered == [], f"{struct.__name__}: {uncovered}"


def test_walk_sees_the_nested_fields() -> None:
    """Case 27: the walk reaches nested receipt paths, so its pass is not vacuous."""
    paths = _paths(Receipt)
    for path in ("basis.runId", "wire.deterministic", "messages.newEntries", "params.topP"):
        assert path in paths
    assert "messages.asSent" in _paths(ServedView)


def test_why_texts_follow_the_rules() -> None:
    """Case 27: whys are long enough, distinct, free of internal names; the boundary is last."""
    assert tuple(GAP_WHY) == GAP_KINDS
    texts = list(GAP_WHY.values())
    assert len(set(texts)) == 7
    for kind, text in GAP_WHY.items():
        assert len(text) >= 40, kind
        for word in FORBIDDEN:
            assert word.lower() not in text.lower(), (kind, word)
        assert not re.search(r"[a-z]+[A-Z][a-z]+", text), kind
        holds_boundary = RECEIPT_BOUNDARY in text
        assert holds_boundary == (kind == "provider-defaults"), kind
    assert GAP_WHY["provider-defaults"].endswith(RECEIPT_BOUNDARY)
    assert len(RECEIPT_BOUNDARY) >= 40


def test_ungapped_fields_have_reasons() -> None:
    """docs/served.md#why-texts: each ungapped field carries a reason of at least 40 code points."""
    assert {"callRuntimeStageId", "gaps"} <= set(UNGAPPED_FIELDS)
    assert all(len(reason) >= 40 for reason in UNGAPPED_FIELDS.values())
    assert not set(UNGAPPED_FIELDS) & _named()


def test_catalogue_order_and_relations() -> None:
    """docs/served.md#gap-catalogue: seven kinds in a fixed order; excuses and caveats as the
    catalogue lists them."""
    assert GAP_KINDS == (
        "no-fold-base",
        "no-conversation-on-record",
        "body-missing",
        "no-receipt-on-record",
        "no-wire-digest",
        "wire-not-reproducible",
        "provider-defaults",
    )
    assert GAP_EXCUSES["no-wire-digest"] == {"wire.hash", "wire.bytes"}
    assert GAP_EXCUSES["wire-not-reproducible"] == frozenset()
    assert GAP_EXCUSES["provider-defaults"] == frozenset()
    for kind in GAP_KINDS:
        assert GAP_EXCUSES[kind] <= set(GAP_FIELDS[kind])
    assert "epoch" in GAP_FIELDS["no-fold-base"]
    assert "system.pieces" in GAP_FIELDS["no-wire-digest"]
