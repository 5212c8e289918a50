"""Peeling and lenient validation of declarations (docs/findings.md#peeling-before-the-tool-sees-it,
docs/findings.md#what-counts-as-a-valid-declaration, docs/findings.md#basis-rows,
docs/findings.md#declarations-on-the-final-answer)."""

from __future__ import annotations

import copy
import math
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from afp_runtime.findings import FINDINGS_ARG, StandingRow, rows_to_wire, validate_rows
from afp_runtime.findings.declare import (
    MISSING,
    Declaration,
    answer_rows,
    declaration_rows,
    peel,
    peel_answer,
)
from afp_runtime.findings.limits import TEXT_CAP
from tests.findings._build import wire

KNOWN = frozenset({"c1", "c2", "c3"})
NAMES = {"c1": "probe", "c2": "probe", "c3": "look"}


def declare(raw: Any, *, call: str = "c9", iteration: int = 2) -> Declaration:
    """``declaration_rows`` for call ``call`` (tool ``probe``), turn 1, known ids c1-c3."""
    return declaration_rows(
        raw,
        tool_call_id=call,
        tool_name="probe",
        turn=1,
        iteration=iteration,
        known_ids=KNOWN,
        name_of=NAMES.get,
    )


def entry(ident: str = "c1", judged: str = "fact", **fields: Any) -> dict[str, Any]:
    """One ``previous`` entry."""
    return {"toolCallId": ident, "standing": judged, **fields}


def one_standing(*entries: dict[str, Any]) -> StandingRow:
    """The single standing row a declaration with ``entries`` files."""
    (row,) = declare({"basis": "direct", "previous": list(entries)}).standings
    return row


def assertion(
    kind: Any = "host", ident: Any = "db-1", predicate: Any = "status", value: Any = "up"
):
    """One raw assertion as the model writes it."""
    return {"subject": {"kind": kind, "id": ident}, "predicate": predicate, "value": value}


class TestPeel:
    """``_findings`` leaves the arguments before anything else sees them
    (docs/findings.md#peeling-before-the-tool-sees-it)."""

    def test_case_3_peel(self) -> None:
        """Case 3: the tool receives {"host": "db-1"}; the original arguments stay verbatim."""
        raw = {"basis": "direct", "expect": "high", "proposition": "db-1 is down"}
        args = {"host": "db-1", FINDINGS_ARG: raw}
        before = copy.deepcopy(args)
        clean, peeled = peel(args)
        assert clean == {"host": "db-1"}
        assert peeled == raw
        assert args == before

    def test_clean_arguments_are_a_deep_copy(self) -> None:
        """Changing the tool's copy never reaches the committed arguments."""
        args = {"tags": ["a"], FINDINGS_ARG: {"basis": "direct"}}
        clean, _ = peel(args)
        clean["tags"].append("b")
        assert args["tags"] == ["a"]

    def test_absent_findings_is_missing(self) -> None:
        """Arguments without _findings peel to MISSING, the rest copied unchanged."""
        assert peel({"host": "db-1"}) == ({"host": "db-1"}, MISSING)

    @pytest.mark.parametrize("raw", ["yes", None, [], 3])
    def test_malformed_findings_is_still_peeled(self, raw: Any) -> None:
        """Case 4 (peel part): even a malformed value is peeled; the tool still gets its args."""
        clean, peeled = peel({"host": "db-1", FINDINGS_ARG: raw})
        assert clean == {"host": "db-1"}
        assert peeled == raw


class TestBasisRow:
    """The basis row of one call (docs/findings.md#basis-rows)."""

    def test_case_3_basis_row(self) -> None:
        """Case 3: the basis row carries the identity, basis, expect and proposition only."""
        raw = {"basis": "direct", "expect": "high", "proposition": "db-1 is down"}
        made = declare(raw, call="c1", iteration=1)
        assert wire(made.basis) == {
            "kind": "basis",
            "toolCallId": "c1",
            "toolName": "probe",
            "turn": 1,
            "iteration": 1,
            "basis": "direct",
            "expect": "high",
            "proposition": "db-1 is down",
        }
        assert made.standings == ()

    def test_case_4_malformed_parts(self) -> None:
        """Case 4: bad basis, expect and proposition are dropped and counted; predicts is cut."""
        raw = {"basis": "sure", "expect": "very", "proposition": 42, "predicts": "x" * 300}
        assert wire(declare(raw, call="c1", iteration=1).basis) == {
            "kind": "basis",
            "toolCallId": "c1",
            "toolName": "probe",
            "turn": 1,
            "iteration": 1,
            "predicts": "x" * 240,
            "cut": ["predicts"],
            "malformed": 3,
        }

    def test_case_4_container_not_an_object(self) -> None:
        """Case 4: _findings = "yes" files a basis row with only identity fields and malformed 1."""
        assert wire(declare("yes", call="c1", iteration=1).basis) == {
            "kind": "basis",
            "toolCallId": "c1",
            "toolName": "probe",
            "turn": 1,
            "iteration": 1,
            "malformed": 1,
        }

    def test_missing_basis_is_counted(self) -> None:
        """A declaration without basis (required by the schema) counts one malformed part."""
        assert declare({"expect": "low"}).basis.malformed == 1

    def test_unknown_keys_are_counted(self) -> None:
        """Each unknown key of the container counts once; known parts are kept."""
        basis = declare({"basis": "direct", "why": 1, "note": "x"}).basis
        assert (basis.basis, basis.malformed) == ("direct", 2)

    def test_previous_not_an_array_is_counted_once(self) -> None:
        """A previous that is not an array is ignored and counted once."""
        made = declare({"basis": "direct", "previous": {"toolCallId": "c1", "standing": "fact"}})
        assert (made.standings, made.basis.malformed) == ((), 1)

    def test_dropped_entries_are_counted_on_the_basis_row(self) -> None:
        """Entries without a non-empty string id or a valid standing are dropped and counted."""
        bad = [
            entry(""),
            entry(judged="maybe"),
            "c1",
            {"standing": "fact"},
            entry(ident=7),  # type: ignore[arg-type]
        ]
        made = declare({"basis": "direct", "previous": [*bad, entry("c2", "noise")]})
        assert [r.tool_call_id for r in made.standings] == ["c2"]
        assert made.basis.malformed == 5

    def test_texts_at_the_cap_are_not_cut(self) -> None:
        """A text of exactly 240 code points is kept whole and not listed in cut."""
        basis = declare({"basis": "direct", "proposition": "é" * TEXT_CAP}).basis
        assert basis.proposition == "é" * TEXT_CAP
        assert basis.cut is msgspec.UNSET


class TestStandingRows:
    """Standing rows of valid previous entries (docs/findings.md#what-counts-as-a-valid-declaration,
    docs/findings.md#the-four-standings, docs/findings.md#standing-rows,
    docs/findings.md#known-and-unknown-ids)."""

    def test_fact_assertions_are_asserted_with_provenance(self) -> None:
        """A fact's assertions get stratum asserted and provenance tool:<judged id>."""
        row = one_standing(entry("c1", "fact", assertions=[assertion(value="down")]))
        assert wire(row) == {
            "kind": "standing",
            "toolCallId": "c1",
            "toolName": "probe",
            "standing": "fact",
            "assertions": [
                {
                    "subject": {"kind": "host", "id": "db-1"},
                    "predicate": "status",
                    "value": "down",
                    "stratum": "asserted",
                    "provenance": "tool:c1",
                }
            ],
            "declaredOn": {"toolCallId": "c9"},
            "turn": 1,
            "iteration": 2,
        }

    @pytest.mark.parametrize("judged", ["open", "ruled-out"])
    def test_open_and_ruled_out_assertions_are_quoted(self, judged: str) -> None:
        """Assertions on open and ruled-out results are kept with stratum quoted."""
        row = one_standing(entry("c1", judged, assertions=[assertion()]))
        assert [a.stratum for a in row.assertions] == ["quoted"]

    def test_noise_ignores_assertions_without_counting(self) -> None:
        """Case 6 (row part): noise carries [] and garbage assertions are not counted."""
        row = one_standing(entry("c1", "noise", assertions=[assertion(), "junk"]))
        assert (row.assertions, row.malformed) == ((), msgspec.UNSET)
        row = one_standing(entry("c1", "noise", assertions="junk"))
        assert (row.assertions, row.malformed) == ((), msgspec.UNSET)

    def test_settles_only_on_open(self) -> None:
        """settles is kept on open and omitted and counted on any other standing."""
        assert one_standing(entry("c1", "open", settles="a retry")).settles == "a retry"
        row = one_standing(entry("c1", "fact", settles="a retry"))
        assert (row.settles, row.malformed) == (msgspec.UNSET, 1)

    def test_line_only_on_ruled_out(self) -> None:
        """line is kept on ruled-out and omitted and counted on any other standing."""
        assert one_standing(entry("c1", "ruled-out", line="not DNS")).line == "not DNS"
        row = one_standing(entry("c1", "open", line="not DNS"))
        assert (row.line, row.malformed) == (msgspec.UNSET, 1)

    def test_non_string_settles_is_counted(self) -> None:
        """A settles that is not a string is omitted and counted."""
        row = one_standing(entry("c1", "open", settles=["x"]))
        assert (row.settles, row.malformed) == (msgspec.UNSET, 1)

    def test_sought_must_be_a_boolean(self) -> None:
        """sought is kept when boolean; otherwise omitted and counted."""
        assert one_standing(entry(sought=False)).sought is False
        row = one_standing(entry(sought="yes"))
        assert (row.sought, row.malformed) == (msgspec.UNSET, 1)

    @pytest.mark.parametrize(
        "bad",
        [
            assertion(value=None),
            assertion(value=math.nan),
            assertion(value=math.inf),
            assertion(value=[1]),
            assertion(value={"a": 1}),
            assertion(kind=1),
            assertion(ident=None),
            assertion(predicate=5),
            {"subject": "host", "predicate": "p", "value": 1},
            {"predicate": "p", "value": 1},
            "host db-1 down",
        ],
    )
    def test_invalid_assertion_is_dropped_and_counted(self, bad: Any) -> None:
        """An assertion breaking any rule is dropped whole and counted on the standing row."""
        row = one_standing(entry(assertions=[bad, assertion()]))
        assert len(row.assertions) == 1
        assert row.malformed == 1

    @pytest.mark.parametrize("value", ["up", 3, 2.5, -0.0, True, False, 10**30])
    def test_valid_values(self, value: Any) -> None:
        """Strings, finite numbers (ints of any size) and booleans are valid values, as given."""
        (kept,) = one_standing(entry(assertions=[assertion(value=value)])).assertions
        assert kept.value == value
        assert type(kept.value) is type(value)

    def test_assertions_not_an_array_is_counted_once(self) -> None:
        """An assertions value that is not an array is ignored and counted once."""
        row = one_standing(entry(assertions={"subject": {}}))
        assert (row.assertions, row.malformed) == ((), 1)

    def test_unknown_keys_inside_an_entry_are_counted(self) -> None:
        """Unknown keys in an entry, an assertion and its subject count; the rest is kept."""
        extra = {**assertion(), "stratum": "asserted"}
        extra["subject"] = {**extra["subject"], "name": "db"}
        row = one_standing(entry(assertions=[extra], note="x"))
        assert len(row.assertions) == 1
        assert row.assertions[0].stratum == "asserted"
        assert row.malformed == 3

    def test_cut_paths_name_the_rows_assertions(self) -> None:
        """Cut paths index the row's own assertions list (after dropped ones)."""
        long = "v" * 300
        row = one_standing(
            entry(
                "c1",
                "open",
                settles=long,
                assertions=[None, assertion(), assertion(kind=long, ident=long, value=long)],
            )
        )
        assert row.cut == (
            "settles",
            "assertions[1].subject.kind",
            "assertions[1].subject.id",
            "assertions[1].value",
        )
        assert all(len(a.subject.kind) <= TEXT_CAP for a in row.assertions)
        assert row.malformed == 1

    def test_ids_are_kept_as_written(self) -> None:
        """A long judged id is neither cut nor resolved; it is kept exactly."""
        ident = "z" * 300
        row = one_standing(entry(ident, "open"))
        assert row.tool_call_id == ident

    def test_case_8_unknown_id(self) -> None:
        """Case 8: an id known nowhere files {zz, fact, [], unknownId true} without toolName."""
        row = one_standing(entry("zz", "fact"))
        data = wire(row)
        assert data["unknownId"] is True
        assert "toolName" not in data
        assert (data["toolCallId"], data["standing"], data["assertions"]) == ("zz", "fact", [])

    def test_tool_name_is_the_judged_results(self) -> None:
        """toolName names the judged result's tool, not the declaring call's."""
        assert one_standing(entry("c3", "noise")).tool_name == "look"

    def test_known_but_unnameable_result_has_no_tool_name(self) -> None:
        """A known id that cannot be named files no toolName and no unknownId."""
        made = declaration_rows(
            {"basis": "direct", "previous": [entry("c1")]},
            tool_call_id="c9",
            tool_name="probe",
            turn=1,
            iteration=2,
            known_ids={"c1"},
            name_of=lambda _: None,
        )
        data = wire(made.standings[0])
        assert "toolName" not in data and "unknownId" not in data

    def test_entry_order_is_kept(self) -> None:
        """Standing rows follow the entries' order, including repeated ids."""
        made = declare(
            {"basis": "direct", "previous": [entry("c2"), entry("c1", "noise"), entry("c2")]}
        )
        assert [(r.tool_call_id, r.standing) for r in made.standings] == [
            ("c2", "fact"),
            ("c1", "noise"),
            ("c2", "fact"),
        ]


class TestAnswer:
    """Declarations on the final answer (docs/findings.md#declarations-on-the-final-answer)."""

    CONTENT = (
        '{"answer":"db-1 is down","_findings":{"previous":[{"toolCallId":"c1","standing":"fact"}]}}'
    )

    def test_case_19_answer(self) -> None:
        """Case 19: the delivered answer drops _findings; the standing is declared on the answer."""
        content = self.CONTENT
        delivered, raw = peel_answer(content)
        assert msgspec.json.decode(delivered) == {"answer": "db-1 is down"}
        made = answer_rows(raw, turn=1, iteration=3, known_ids=KNOWN, name_of=NAMES.get)
        assert [wire(r) for r in made.standings] == [
            {
                "kind": "standing",
                "toolCallId": "c1",
                "toolName": "probe",
                "standing": "fact",
                "assertions": [],
                "declaredOn": "answer",
                "turn": 1,
                "iteration": 3,
            }
        ]
        assert made.dropped == 0
        assert content == self.CONTENT

    def test_delivered_is_compact_and_keeps_order(self) -> None:
        """The delivered answer is the same JSON value, compact, other keys in their order."""
        content = '  \n{"b": [1, 2.5, true], "_findings": {}, "a": {"x": null}}\n'
        assert peel_answer(content)[0] == '{"b":[1,2.5,true],"a":{"x":null}}'

    @pytest.mark.parametrize(
        "content",
        [
            "db-1 is down",
            '{"answer": "db-1 is down"}',
            '[{"_findings": {}}]',
            '{"_findings": {}} and more',
            '{"_findings": ',
            "",
            '"_findings"',
            '{"nested": {"_findings": {}}}',
        ],
    )
    def test_other_answers_are_untouched(self, content: str) -> None:
        """Answers that are not one JSON object with a top-level _findings come back as is."""
        assert peel_answer(content) == (content, MISSING)

    def test_null_member_is_peeled_and_counted(self) -> None:
        """A _findings member that is null is still peeled and counts as dropped."""
        delivered, raw = peel_answer('{"a": 1, "_findings": null}')
        assert (delivered, raw) == ('{"a":1}', None)
        made = answer_rows(raw, turn=1, iteration=1, known_ids=KNOWN, name_of=NAMES.get)
        assert (made.standings, made.dropped) == ((), 1)

    def test_only_previous_is_read(self) -> None:
        """Other members of the answer's _findings are ignored and not counted."""
        raw = {"basis": "nonsense", "note": 1, "previous": [entry("c2", "noise"), entry("")]}
        made = answer_rows(raw, turn=2, iteration=1, known_ids=KNOWN, name_of=NAMES.get)
        assert [r.tool_call_id for r in made.standings] == ["c2"]
        assert made.dropped == 1


# --- garbage never raises ------------------------------------------------------------------------


def _values(floats: st.SearchStrategy[float]) -> st.SearchStrategy[Any]:
    """JSON-like values: scalars (huge ints, long texts), lists and objects."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers(min_value=-(10**40), max_value=10**40)
        | floats
        | st.text(max_size=300),
        lambda inner: (
            st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=12), inner, max_size=6)
        ),
        max_leaves=40,
    )


json_values = _values(st.floats(allow_nan=False, allow_infinity=False))
any_values = _values(st.floats())
KEYS = st.sampled_from(
    sorted(
        {
            "basis",
            "expect",
            "proposition",
            "predicts",
            "previous",
            "toolCallId",
            "standing",
            "sought",
            "assertions",
            "settles",
            "line",
            "subject",
            "predicate",
            "value",
            "kind",
            "id",
        }
    )
)
WORDS = st.sampled_from(["direct", "high", "fact", "open", "noise", "ruled-out", "c1", "zz"])
near_declarations = st.recursive(
    any_values | WORDS,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(KEYS, inner, max_size=8),
    max_leaves=60,
)
# Long texts made by repeating a short one: drawing 20,000 characters one by one costs most of
# the test's time on a loaded machine, and the length is what matters here, not the variety.
long_texts = st.builds(
    lambda piece, times: (piece * times)[:20_000],
    st.text(min_size=1, max_size=40),
    st.integers(min_value=5000, max_value=20_000),
).filter(lambda text: len(text) >= 5000)
declarations = st.one_of(any_values, near_declarations, long_texts)
own_args = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=declarations, own=own_args)
@example(raw={"previous": [{"toolCallId": "c1", "standing": "fact", "assertions": "x"}]}, own={})
@example(raw={"basis": "direct", "proposition": "p" * 100_000}, own={"host": "db-1"})
def test_garbage_declarations_never_raise(raw: Any, own: dict[str, Any]) -> None:
    """Any _findings value files valid rows, never raises and never changes the tool's args."""
    args = {**own, FINDINGS_ARG: raw}
    before = copy.deepcopy(own)
    clean, peeled = peel(args)
    assert clean == {k: v for k, v in before.items() if k != FINDINGS_ARG}
    assert {k: v for k, v in args.items() if k != FINDINGS_ARG} == clean
    assert peeled is raw
    made = declare(peeled)
    answered = answer_rows(peeled, turn=1, iteration=1, known_ids=KNOWN, name_of=NAMES.get)
    rows = [made.basis, *made.standings, *answered.standings]
    assert validate_rows(rows_to_wire(rows)) == tuple(rows)


@settings(max_examples=200, deadline=None)
@given(member=near_declarations.filter(lambda v: not _non_finite(v)), body=own_args)
def test_garbage_answers_never_raise(member: Any, body: dict[str, Any]) -> None:
    """An answer object with any _findings member delivers the same object without it."""
    body = {k: v for k, v in body.items() if k != FINDINGS_ARG}
    content = msgspec.json.encode({**body, FINDINGS_ARG: member}).decode()
    delivered, raw = peel_answer(content)
    assert msgspec.json.decode(delivered) == body
    assert raw == member
    made = answer_rows(raw, turn=1, iteration=1, known_ids=KNOWN, name_of=NAMES.get)
    assert validate_rows(rows_to_wire(made.standings)) == made.standings


@given(content=st.text(max_size=200))
def test_any_text_answer_never_raises(content: str) -> None:
    """Peeling any text either leaves it untouched or removes a top-level member."""
    delivered, raw = peel_answer(content)
    assert (delivered, raw) == (content, MISSING) or FINDINGS_ARG not in msgspec.json.decode(
        delivered
    )


def _non_finite(value: Any) -> bool:
    """Whether a JSON-like value holds a NaN or an infinity (JSON cannot carry them)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_non_finite(v) for v in value)
    return False
