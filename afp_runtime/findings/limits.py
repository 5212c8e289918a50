"""The findings family's fixed sizes (docs/findings.md#the-offer-of-result-ids,
docs/findings.md#what-counts-as-a-valid-declaration, docs/findings.md#the-ledger-piece)."""

from __future__ import annotations

TEXT_CAP = 240
"""Code points kept of every free-text string of a declaration; the rest is cut
(docs/findings.md#what-counts-as-a-valid-declaration)."""

OFFER_CAP = 32
"""Result ids offered in the ``toolCallId`` enum at most, newest first
(docs/findings.md#the-offer-of-result-ids)."""

FINDINGS_LIST_CAP = 20
"""Entries shown per list of the ledger piece; the rest are counted as not shown
(docs/findings.md#the-ledger-piece)."""
