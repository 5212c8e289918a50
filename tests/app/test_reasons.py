"""The reasons table explains every code of the catalogues it covers, in one sentence each
(docs/architecture.md#reasons-in-words)."""

from __future__ import annotations

from typing import get_args

from afp_runtime.app import REASONS, reason_text, reasons_for, record_reasons
from afp_runtime.served.gaps import GAP_KINDS
from afp_runtime.tools.dispatch import ToolStatus
from afp_runtime.window.refusals import REFUSAL_REASONS


def test_every_refusal_gap_and_unrun_tool_status_has_a_sentence() -> None:
    tool_codes = set(get_args(ToolStatus)) - {"ok", "asked"}
    for code in (*REFUSAL_REASONS, *GAP_KINDS, *tool_codes):
        text = reason_text(code)
        assert text, code
        assert text.endswith(".") and text[0].isupper(), code


def test_the_table_holds_nothing_but_those_codes() -> None:
    tool_codes = set(get_args(ToolStatus)) - {"ok", "asked"}
    assert set(REASONS) == set(REFUSAL_REASONS) | set(GAP_KINDS) | tool_codes


def test_reasons_for_keeps_known_codes_once_in_first_seen_order() -> None:
    found = reasons_for(["provider-defaults", "nonsense", "current-request", "provider-defaults"])
    assert list(found) == ["provider-defaults", "current-request"]
    assert reason_text("nonsense") is None


def test_record_reasons_reads_a_record_defensively() -> None:
    """A window record's refusals give their sentences once each; a custom or damaged record's
    odd shapes give nothing rather than an error."""
    record = {
        "refusals": [
            {"reason": "current-request", "turnIndex": 3, "messageIndex": 5},
            {"reason": "inside-keep-window", "turnIndex": 4, "messageIndex": 6},
            {"reason": "inside-keep-window", "turnIndex": 5, "messageIndex": 7},
        ]
    }
    assert list(record_reasons(record)) == ["current-request", "inside-keep-window"]
    for odd in ({}, {"refusals": "x"}, {"refusals": [1, None, {"reason": 3}, {"reason": "zz"}]}):
        assert record_reasons(odd) == {}
