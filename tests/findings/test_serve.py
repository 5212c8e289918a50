"""What findings serve per request: schemas, the offer, the instruction, the ledger piece and
stubs (docs/findings.md#how-the-schema-is-served, docs/findings.md#the-offer-of-result-ids,
docs/findings.md#what-later-requests-see; docs/findings.md#how-this-is-tested cases 1, 17, 18)."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from afp_runtime.findings import EMPTY_FOLD, FINDINGS_ARG, BasisRow, FindingsConfig, fold_ledger
from afp_runtime.findings.limits import FINDINGS_LIST_CAP
from afp_runtime.findings.serve import (
    Offer,
    decorate_schema,
    ledger_piece,
    offer_ids,
    serve_findings,
)
from afp_runtime.findings.texts import (
    FINDINGS_INSTRUCTION,
    FINDINGS_INSTRUCTION_VERSION,
    LEDGER_HEADER,
)
from afp_runtime.messages import Message, canonical_json
from afp_runtime.window.turns import window_chars
from tests.findings._build import PROBE_SCHEMA, fold_of, ids_of, standing
from tests.window._build import TASK, A, R, T, U

DEFAULT = FindingsConfig()


class TestSchema:
    """Schema augmentation (docs/findings.md#how-the-schema-is-served)."""

    def test_case_1_armed_schema(self) -> None:
        """Case 1: the served probe schema gains _findings, not required; the registry's is kept."""
        registry = copy.deepcopy(PROBE_SCHEMA)
        served = decorate_schema(registry, Offer(ids=("c1",), left_out=0))
        assert list(served["properties"]) == ["host", "_findings"]
        assert served["required"] == ["host"]
        assert registry == PROBE_SCHEMA

    def test_case_1_decoration_adds_only_findings(self) -> None:
        """Case 1 (pure part): without _findings the served schema is canonically the registry's."""
        served = decorate_schema(PROBE_SCHEMA, Offer(ids=("c1",), left_out=0))
        del served["properties"][FINDINGS_ARG]
        assert canonical_json(served) == canonical_json(PROBE_SCHEMA)

    def test_served_schema_shares_nothing_with_the_registry(self) -> None:
        """Changing the served copy never reaches the registry's schema."""
        registry = copy.deepcopy(PROBE_SCHEMA)
        served = decorate_schema(registry)
        served["properties"]["host"]["type"] = "integer"
        served["required"].append("x")
        assert registry == PROBE_SCHEMA

    def test_properties_created_when_absent(self) -> None:
        """A schema without properties gets one holding only _findings."""
        served = decorate_schema({"type": "object"})
        assert list(served["properties"]) == [FINDINGS_ARG]
        assert "required" not in served

    def test_findings_property_shape(self) -> None:
        """_findings requires basis only; entries require toolCallId and standing."""
        prop = decorate_schema(PROBE_SCHEMA)["properties"][FINDINGS_ARG]
        assert prop["type"] == "object"
        assert prop["required"] == ["basis"]
        assert list(prop["properties"]) == [
            "basis",
            "expect",
            "proposition",
            "predicts",
            "previous",
        ]
        assert prop["properties"]["basis"]["enum"] == ["direct", "exploratory"]
        assert prop["properties"]["expect"]["enum"] == ["low", "medium", "high"]
        entry = prop["properties"]["previous"]["items"]
        assert entry["required"] == ["toolCallId", "standing"]
        assert entry["properties"]["standing"]["enum"] == ["fact", "open", "noise", "ruled-out"]
        assertion = entry["properties"]["assertions"]["items"]
        assert assertion["required"] == ["subject", "predicate", "value"]
        assert assertion["properties"]["value"]["type"] == ["string", "number", "boolean"]
        assert all(
            isinstance(p.get("description"), str) and p["description"]
            for p in [prop, *prop["properties"].values(), *entry["properties"].values()]
        )

    def test_decoration_is_deterministic(self) -> None:
        """The same schema and offer always serve the same bytes."""
        offer = Offer(ids=("c2", "c1"), left_out=0)
        assert canonical_json(decorate_schema(PROBE_SCHEMA, offer)) == canonical_json(
            decorate_schema(copy.deepcopy(PROBE_SCHEMA), offer)
        )


def _id_property(offer: Offer) -> dict[str, Any]:
    prop = decorate_schema(PROBE_SCHEMA, offer)["properties"][FINDINGS_ARG]
    result: dict[str, Any] = prop["properties"]["previous"]["items"]["properties"]["toolCallId"]
    return result


class TestOffer:
    """The offer (docs/findings.md#the-offer-of-result-ids)."""

    def test_case_17_offer(self) -> None:
        """Case 17: noise leaves the offer; fact, open and undeclared stay, newest first."""
        window = [U(TASK), *R("c1"), *R("c2"), *R("c3"), *R("c4")]
        fold = fold_of({"c1": "noise", "c2": "fact", "c3": "open"})
        offer = offer_ids(window, fold.standing_of)
        assert offer == Offer(ids=("c4", "c3", "c2"), left_out=0)
        assert _id_property(offer)["enum"] == ["c4", "c3", "c2"]

    def test_case_17_offer_is_capped_at_32(self) -> None:
        """Case 17: 40 undeclared results offer r40..r9 and say that 8 were left out."""
        window = [U(TASK)] + [m for i in range(1, 41) for m in R(f"r{i}")]
        offer = offer_ids(window, {})
        assert offer.ids == tuple(f"r{i}" for i in range(40, 8, -1))
        assert offer.left_out == 8
        prop = _id_property(offer)
        assert prop["enum"] == list(offer.ids)
        assert "8 older" in prop["description"]
        assert "8" not in _id_property(Offer(ids=offer.ids, left_out=0))["description"]

    def test_case_17_first_call_has_no_enum(self) -> None:
        """Case 17: with no results in the window the toolCallId property has no enum."""
        offer = offer_ids([U(TASK)], {})
        assert offer == Offer(ids=(), left_out=0)
        assert "enum" not in _id_property(offer)

    def test_ruled_out_and_settled_results_are_not_offered(self) -> None:
        """Ruled-out results and results settled without running are never offered."""
        settled = Message(role="tool", content="x", tool_call_id="s1", not_dispatched=True)
        window = [U(TASK), *R("c1"), A(["s1"]), settled]
        assert offer_ids(window, {"c1": "ruled-out"}).ids == ()


CASE_18 = (
    U(TASK),
    A(["c1"], names=["probe"]),
    T("c1", "db-1: timeout after 30s", "probe"),
    A(["c2"], names=["probe"]),
    T("c2", "db-2: ok", "probe"),
)
FOLD_18 = fold_ledger(
    None,
    [
        standing("c1", "fact", ("host", "db-1", "status", "down")),
        standing("c2", "noise"),
    ],
)


class TestServing:
    """The served messages, instruction and ledger piece
    (docs/findings.md#what-later-requests-see)."""

    def test_case_18_serving(self) -> None:
        """Case 18: noise is stubbed, the fact served whole; history and its chars unchanged."""
        history = CASE_18
        assert window_chars(history) == 162
        served = serve_findings(history, FOLD_18, DEFAULT)
        assert len(served.messages) == 5
        assert [m.role for m in served.messages] == [m.role for m in history]
        assert ids_of(served.messages) == ids_of(history)
        assert [m.tool_name for m in served.messages] == [m.tool_name for m in history]
        assert served.messages[4].content == (
            '{"withheld":true,"standing":"noise","toolCallId":"c2"}'
        )
        assert served.messages[2] is history[2]
        assert served.instruction == FINDINGS_INSTRUCTION
        piece = served.ledger_piece
        assert piece is not None
        assert "host db-1 status down" in piece and "tool:c1" in piece
        assert "results judged noise 1;" in piece
        assert "results in view with no standing 0." in piece
        assert history[4].content == "db-2: ok"
        assert window_chars(history) == 162

    def test_case_18_ledger_only_stubs_facts(self) -> None:
        """Case 18: under ledger-only the fact result is stubbed too."""
        served = serve_findings(CASE_18, FOLD_18, FindingsConfig(serve="ledger-only"))
        assert served.messages[2].content == (
            '{"withheld":true,"standing":"fact","toolCallId":"c1"}'
        )

    def test_case_18_basis_rows_only(self) -> None:
        """Case 18: a ledger of only basis rows serves the instruction, no piece and no stubs."""
        fold = fold_ledger(
            None, [BasisRow(tool_call_id="c1", tool_name="probe", turn=1, iteration=1)]
        )
        served = serve_findings(CASE_18, fold, DEFAULT)
        assert served.ledger_piece is None
        assert served.messages == CASE_18
        assert served.instruction == FINDINGS_INSTRUCTION

    def test_stub_keeps_markers_and_name(self) -> None:
        """A stub keeps role, ids, tool name and markers; only the content changes."""
        message = T("c2", "long output", "probe")
        served = serve_findings([message], fold_of({"c2": "ruled-out"}), DEFAULT).messages[0]
        assert msgspec.structs.replace(served, content=message.content) == message
        assert msgspec.json.decode(served.content) == {
            "withheld": True,
            "standing": "ruled-out",
            "toolCallId": "c2",
        }

    def test_settled_results_are_never_stubbed(self) -> None:
        """A not_dispatched result has no standing and is served as is."""
        settled = Message(role="tool", content="refused", tool_call_id="s1", not_dispatched=True)
        served = serve_findings([A(["s1"]), settled], fold_of({"s1": "noise"}), DEFAULT)
        assert served.messages[1] is settled

    def test_open_and_undeclared_are_served_whole(self) -> None:
        """Open and undeclared results are never stubbed."""
        window = [U(TASK), *R("c1"), *R("c2")]
        served = serve_findings(window, fold_of({"c1": "open"}), DEFAULT)
        assert served.messages == tuple(window)

    def test_instruction_carries_a_version_tag(self) -> None:
        """The instruction opens with its version tag and names the reserved argument."""
        assert FINDINGS_INSTRUCTION.startswith(f"[afp:{FINDINGS_INSTRUCTION_VERSION}]")
        for word in (
            "_findings",
            "basis",
            "previous",
            "fact",
            "open",
            "noise",
            "ruled-out",
            "settles",
            "line",
            "assertions",
            "undeclared",
            "withheld",
            "JSON object",
        ):
            assert word in FINDINGS_INSTRUCTION


class TestLedgerPiece:
    """The ledger piece's contents, order and caps (docs/findings.md#the-ledger-piece)."""

    def test_sections_in_order(self) -> None:
        """Header, facts, conflicts, ruled out, open, counts and the ask come in that order."""
        fold = fold_ledger(
            None,
            [
                BasisRow(
                    tool_call_id="r1",
                    tool_name="probe",
                    turn=1,
                    iteration=1,
                    proposition="DNS is broken",
                ),
                standing("f1", "fact", ("host", "db-1", "status", "down"), tool_name="probe"),
                standing("f2", "fact", ("host", "db-1", "status", "up")),
                standing("f3", "fact", tool_name="probe"),
                standing("r1", "ruled-out", line="DNS resolves fine"),
                standing("o1", "open", settles="a second probe"),
                standing("n1", "noise"),
            ],
        )
        window = [U(TASK), *R("f1"), *R("u1")]
        piece = ledger_piece(window, fold, FindingsConfig(answer_ask="quote-facts"))
        assert piece is not None
        lines = piece.split("\n")
        assert lines == [
            LEDGER_HEADER,
            "Facts you stand on:",
            "- host db-1 status down (tool:f1)",
            "- host db-1 status up (tool:f2)",
            "- probe result tool:f3 stands as a fact, with no assertions",
            "Conflicting facts (one subject and predicate, different values):",
            "- host db-1 status: down (tool:f1); up (tool:f2)",
            "Ruled out:",
            "- tool:r1: DNS resolves fine (the call tested: DNS is broken)",
            "Open:",
            "- tool:o1: would be decided by: a second probe",
            "Counts: results judged noise 1; results in view with no standing 1.",
            "When you give your final answer, quote the ledger facts it relies on.",
        ]

    def test_header_says_whose_words(self) -> None:
        """The header says the piece is the model's own record, not instructions or the person's."""
        assert "not instructions" in LEDGER_HEADER and "person" in LEDGER_HEADER

    def test_values_and_texts_render_on_one_line(self) -> None:
        """Non-string values show as JSON; line breaks in texts become spaces."""
        fold = fold_ledger(
            None,
            [
                standing("a", "fact", ("n", "x", "ok", True), ("n", "x", "load", 1.5)),
                standing("b", "open", settles="line one\nline two"),
                standing("c", "ruled-out"),
            ],
        )
        piece = ledger_piece([], fold, DEFAULT)
        assert piece is not None
        assert "- n x ok true (tool:a)" in piece
        assert "- n x load 1.5 (tool:a)" in piece
        assert "- tool:b: would be decided by: line one line two" in piece
        assert "- tool:c: (no line given)" in piece

    @pytest.mark.parametrize(("total", "statement"), [(20, None), (27, "(and 7 more not shown)")])
    def test_lists_are_capped(self, total: int, statement: str | None) -> None:
        """Each list shows at most the cap, oldest first, and states how many it did not show."""
        fold = fold_ledger(None, [standing(f"o{i}", "open") for i in range(total)])
        piece = ledger_piece([], fold, DEFAULT)
        assert piece is not None
        shown = [line for line in piece.split("\n") if line.startswith("- tool:o")]
        assert len(shown) == FINDINGS_LIST_CAP
        assert shown[0].startswith("- tool:o0:")
        assert ("not shown" in piece) == (statement is not None)
        assert statement is None or statement in piece

    def test_facts_cap_counts_assertions(self) -> None:
        """The facts list caps entries, counting each assertion and each bare fact."""
        rows = [
            standing(f"f{i}", "fact", ("k", str(i), "p", 1), ("k", str(i), "q", 2))
            for i in range(15)
        ]
        piece = ledger_piece([], fold_ledger(None, rows), DEFAULT)
        assert piece is not None
        assert "(and 10 more not shown)" in piece

    def test_no_piece_without_a_standing(self) -> None:
        """With no standing in the fold there is no piece."""
        assert ledger_piece([U(TASK)], EMPTY_FOLD, DEFAULT) is None

    def test_piece_is_deterministic(self) -> None:
        """The piece is a function of the window and the fold only."""
        again = fold_ledger(
            None,
            [standing("c1", "fact", ("host", "db-1", "status", "down")), standing("c2", "noise")],
        )
        assert ledger_piece(CASE_18, FOLD_18, DEFAULT) == ledger_piece(CASE_18, again, DEFAULT)

    def test_conflict_witnesses_are_capped(self) -> None:
        """A conflict with more witnesses than the cap shows the cap and counts the rest."""
        rows = [standing(f"w{i}", "fact", ("host", "db-1", "status", i)) for i in range(23)]
        piece = ledger_piece([], fold_ledger(None, rows), DEFAULT)
        assert piece is not None
        (line,) = [x for x in piece.split("\n") if x.startswith("- host db-1 status:")]
        assert line.endswith("19 (tool:w19); and 3 more not shown")
