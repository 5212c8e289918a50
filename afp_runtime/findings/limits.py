"""The findings family's fixed sizes (findings.md §2.3, §3, §11.2)."""

from __future__ import annotations

TEXT_CAP = 240
"""Code points kept of every free-text string of a declaration; the rest is cut (§3)."""

OFFER_CAP = 32
"""Result ids offered in the ``toolCallId`` enum at most, newest first (§2.3)."""

FINDINGS_LIST_CAP = 20
"""Entries shown per list of the ledger piece; the rest are counted as not shown (§11.2)."""
