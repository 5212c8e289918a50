"""The conformance check of a run's epochs against their receipts
(docs/served.md#the-conformance-law, docs/architecture.md#the-application-layer).

Every door checks the same way; what differs is which adapter re-encodes the request bytes
for the wire clause, so the caller passes ``encoders``: given the receipt's encoder name and
model, the adapter to use (None: the wire clause is not checkable). ``builtin_encoder`` is the
adapter this build has for an encoder name; a host prefers the agent's own adapter. Without
``encoders`` the wire clause is skipped. The chooser runs in the log's reader thread.
"""

from __future__ import annotations

from collections.abc import Callable

from afp_runtime.app.runs import RunSource, no_epoch
from afp_runtime.records import RunLog
from afp_runtime.served import BodyEncoder, ConformanceReport, check, epochs, receipt_at, served_at

Encoders = Callable[[str, str], BodyEncoder | None]
"""``encoders(encoder, model)``: the adapter that re-encodes a receipt's request, or None."""


def builtin_encoder(encoder: str, model: str) -> BodyEncoder | None:
    """The built-in adapter that encodes as ``encoder`` did for ``model`` (it never sends);
    None for an encoder this build does not have."""
    # The adapters bring the HTTP stack: loaded here, in the reader's worker thread, and only
    # when a check re-encodes bytes.
    from afp_runtime import models

    return models.encoder_for(encoder, model)


async def conform(
    source: RunSource, epoch: int | None = None, *, encoders: Encoders | None = None
) -> list[ConformanceReport]:
    """Check one epoch (``epoch``) or every epoch of the run against its receipt: the view's
    digests, and the request bytes re-encoded by ``encoders``' adapter.

    Raises:
        NotFound: the run has no such epoch.
    """

    def read(log: RunLog) -> list[ConformanceReport]:
        numbers = [epoch] if epoch is not None else [e.epoch for e in epochs(log)]
        reports: list[ConformanceReport] = []
        for number in numbers:
            view = served_at(log, number)
            if view is None:
                raise no_epoch(source.run_id, number)
            receipt = receipt_at(log, number)
            encoder: BodyEncoder | None = None
            if encoders is not None and receipt is not None and receipt.wire is not None:
                encoder = encoders(receipt.wire.encoder, receipt.basis.model)
            reports.append(check(view, receipt, encoder=encoder, log=log))
        return reports

    return await source.read(read)
