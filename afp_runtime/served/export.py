"""Run exports: one run's commit log as a JSON document, readable without a store.

Format ``afp-run-export/1``::

    {"format": "afp-run-export/1", "runId": ..., "hasBase": bool, "live": bool,
     "bundles": [CommitBundle wire form, writes as stored, message lists as references],
     "bodies": {fingerprint: body}}

Readings settled here:

* A body is written as the exact stored bytes decoded as UTF-8 text (a JSON string), so an
  export never re-encodes, and so never repairs, what the store holds; a body that is not valid
  UTF-8 is written as ``{"base64": ...}``.
* ``bodies`` holds the bodies the exported bundles reference (message lists, and substitutions
  stored as references) that the store still has; a missing body stays missing.
* A partial export (``from_seq > 0``) has ``hasBase`` false, as has an export of a log without
  a base; reading it gives every view ``no-fold-base``.
* The document is encoded with sorted keys, so the same log always exports to the same bytes.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

from afp_runtime.errors import InvalidValue, shown
from afp_runtime.records import (
    CommitBundle,
    HistoryWrite,
    RunLog,
    SubstitutionsWrite,
)
from afp_runtime.served.bodies import as_ref
from afp_runtime.served.memory import MemoryRunLog
from afp_runtime.served.payloads import served_enc_hook

EXPORT_FORMAT: Final = "afp-run-export/1"


class _Export(msgspec.Struct, kw_only=True, rename="camel"):
    format: str
    run_id: str
    has_base: bool
    live: bool
    bundles: list[CommitBundle]
    bodies: dict[str, str | dict[str, str]]


_encoder = msgspec.json.Encoder(enc_hook=served_enc_hook, order="sorted")


def _referenced(bundles: Iterable[CommitBundle]) -> list[str]:
    found: dict[str, None] = {}
    for bundle in bundles:
        for write in bundle.writes:
            values = write.value if isinstance(write.value, list | tuple) else ()
            if isinstance(write, HistoryWrite):
                refs = [as_ref(item) for item in values]
            elif isinstance(write, SubstitutionsWrite):
                refs = [
                    as_ref(sub.get("message"))
                    for sub in values
                    if isinstance(sub, Mapping)
                    and isinstance(sub.get("message"), Mapping)
                    and "role" not in sub["message"]
                ]
            else:
                continue
            for ref in refs:
                if ref is not None:
                    found[ref.fingerprint] = None
    return list(found)


def _body_text(body: bytes) -> str | dict[str, str]:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode("ascii")}


def export_run(log: RunLog, *, from_seq: int = 0) -> bytes:
    """The run's log from ``from_seq`` on, with the bodies it references, as JSON bytes.

    Raises:
        InvalidValue: ``from_seq`` is not a non-negative ``int``.
    """
    if isinstance(from_seq, bool) or not isinstance(from_seq, int) or from_seq < 0:
        raise InvalidValue(
            "from_seq must be a non-negative int", field="from_seq", value=shown(from_seq)
        )
    bundles = list(log.bundles(from_seq))
    bodies: dict[str, Any] = {}
    for fp in _referenced(bundles):
        body = log.body(fp)
        if body is not None:
            bodies[fp] = _body_text(body)
    document = {
        "format": EXPORT_FORMAT,
        "runId": log.run_id,
        "hasBase": log.has_base and from_seq == 0,
        "live": log.live,
        "bundles": bundles,
        "bodies": bodies,
    }
    return _encoder.encode(document)


def _body_bytes(fp: str, value: str | dict[str, str]) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    try:
        return base64.b64decode(value["base64"], validate=True)
    except (KeyError, binascii.Error) as exc:
        raise InvalidValue(
            f"the body under {fp} is neither text nor base64", field=f"bodies.{fp}"
        ) from exc


def load_export(data: bytes) -> MemoryRunLog:
    """Read an export back as an in-memory run log.

    Raises:
        InvalidValue: the bytes are not an ``afp-run-export/1`` document (names the field).
    """
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise InvalidValue(f"a run export must be JSON: {exc}", field="export") from exc
    except RecursionError:
        raise InvalidValue("a run export must be JSON: nested too deeply", field="export") from None
    found = raw.get("format") if isinstance(raw, dict) else None
    if found != EXPORT_FORMAT:
        raise InvalidValue(
            f"not a run export of format {EXPORT_FORMAT}", field="format", value=shown(found)
        )
    try:
        document = msgspec.convert(raw, _Export)
    except msgspec.ValidationError as exc:
        raise InvalidValue(f"a run export is malformed: {exc}", field="export") from exc
    return MemoryRunLog(
        document.run_id,
        document.bundles,
        {fp: _body_bytes(fp, value) for fp, value in document.bodies.items()},
        has_base=document.has_base,
        live=document.live,
    )
