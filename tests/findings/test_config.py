"""Arming options and the ledger-fact dial (docs/findings.md#arming-an-agent,
docs/findings.md#the-keep-ledger-facts-dial; docs/findings.md#how-this-is-tested cases 2 and 16)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from afp_runtime.errors import ConfigError, FindingsConfigError, WindowConfigError
from afp_runtime.findings import (
    DEFAULT_FACT_LIMIT,
    FindingsConfig,
    resolve_fact_limit,
    validate_findings_config,
)
from afp_runtime.findings.config import findings_config_from_wire

UNSET = msgspec.UNSET


class TestFindingsConfig:
    """``FindingsConfig`` values and their refusals."""

    def test_defaults(self) -> None:
        """The defaults are ledger-and-facts, an unset dial and no answer ask."""
        config = FindingsConfig()
        assert (config.serve, config.keep_ledger_facts, config.answer_ask) == (
            "ledger-and-facts",
            UNSET,
            "none",
        )

    @pytest.mark.parametrize("value", [True, -1])
    def test_case_2_keep_ledger_facts_refused(self, value: object) -> None:
        """Case 2: keep_ledger_facts=True or -1 raises FindingsConfigError naming the option."""
        with pytest.raises(FindingsConfigError) as caught:
            FindingsConfig(keep_ledger_facts=value)  # type: ignore[arg-type]
        assert caught.value.context["option"] == "keep_ledger_facts"
        assert "keep_ledger_facts" in str(caught.value)

    def test_case_2_serve_both_refused(self) -> None:
        """Case 2: serve="both" raises FindingsConfigError naming the option and the value."""
        with pytest.raises(FindingsConfigError) as caught:
            FindingsConfig(serve="both")  # type: ignore[arg-type]
        assert caught.value.context["option"] == "serve"
        assert "'both'" in str(caught.value)

    @pytest.mark.parametrize(
        ("option", "value"),
        [
            ("keep_ledger_facts", 1.5),
            ("keep_ledger_facts", "2"),
            ("keep_ledger_facts", None),
            ("answer_ask", "always"),
            ("answer_ask", None),
            ("serve", 3),
        ],
    )
    def test_other_invalid_values_refused(self, option: str, value: object) -> None:
        """Non-integers, None and unknown enum strings are refused, naming the option."""
        with pytest.raises(FindingsConfigError) as caught:
            FindingsConfig(**{option: value})  # type: ignore[arg-type]
        assert caught.value.context["option"] == option

    def test_error_is_a_config_error(self) -> None:
        """FindingsConfigError belongs to the config family of errors."""
        assert issubclass(FindingsConfigError, ConfigError)

    @pytest.mark.parametrize("value", [0, 7, False])
    def test_valid_dial_values(self, value: int | bool) -> None:
        """0, a positive int and False are valid dial values, kept as given."""
        config = FindingsConfig(keep_ledger_facts=value)
        assert validate_findings_config(config) is config
        assert config.keep_ledger_facts is value

    def test_wire_names_are_camel_case(self) -> None:
        """A config decodes from camelCase keys and encodes set options only."""
        config = findings_config_from_wire(
            {"serve": "ledger-only", "keepLedgerFacts": 3, "answerAsk": "quote-facts"}
        )
        assert config == FindingsConfig(
            serve="ledger-only", keep_ledger_facts=3, answer_ask="quote-facts"
        )
        assert msgspec.to_builtins(FindingsConfig(keep_ledger_facts=False)) == {
            "keepLedgerFacts": False
        }

    @pytest.mark.parametrize(
        ("data", "needle"),
        [
            ({"keepLedgerFact": 3}, "keepLedgerFact"),
            ({"serve": "both"}, "$.serve"),
            ({"keepLedgerFacts": True}, "$.keepLedgerFacts"),
            ({"keepLedgerFacts": "2"}, "$.keepLedgerFacts"),
        ],
    )
    def test_wire_errors_name_the_path(self, data: dict[str, Any], needle: str) -> None:
        """A typo, an unknown enum string or a wrong type in a file names its key path."""
        with pytest.raises(FindingsConfigError) as caught:
            findings_config_from_wire(data)
        assert needle in str(caught.value)

    def test_wire_negative_dial_refused(self) -> None:
        """A negative keepLedgerFacts in a file is refused like one given in Python."""
        with pytest.raises(FindingsConfigError, match="keep_ledger_facts"):
            findings_config_from_wire({"keepLedgerFacts": -2})


class TestResolveFactLimit:
    """The docs/findings.md#the-keep-ledger-facts-dial table, validated in both places."""

    @pytest.mark.parametrize(
        ("findings_value", "agent_value", "limit"),
        [
            (UNSET, UNSET, 4),
            (UNSET, 3, 3),
            (False, 3, 0),
            (0, 3, 0),
            (6, 3, 6),
            (UNSET, False, 0),
        ],
    )
    def test_case_16_dial(self, findings_value: object, agent_value: object, limit: int) -> None:
        """Case 16: the findings value wins, then the agent value, then 4; False is 0."""
        assert resolve_fact_limit(findings_value, agent_value) == limit

    def test_default_is_four(self) -> None:
        """With nothing set the limit is the documented default, 4."""
        assert resolve_fact_limit() == DEFAULT_FACT_LIMIT == 4

    @pytest.mark.parametrize("bad", [-1, 1.5, "2", None, True])
    def test_findings_value_validated_even_when_agent_value_set(self, bad: object) -> None:
        """An invalid findings value is refused with FindingsConfigError whatever the agent says."""
        with pytest.raises(FindingsConfigError, match="keep_ledger_facts"):
            resolve_fact_limit(bad, 3)

    @pytest.mark.parametrize("bad", [-1, 1.5, "2", None, True])
    def test_agent_value_validated_even_when_findings_value_set(self, bad: object) -> None:
        """An invalid agent option is refused (window family error) even when findings decides."""
        with pytest.raises(WindowConfigError, match="keep_ledger_facts"):
            resolve_fact_limit(2, bad)

    def test_case_16_unarmed_agent_value_is_valid(self) -> None:
        """Case 16: an unarmed agent with keep_ledger_facts=7 is valid (the value resolves)."""
        assert resolve_fact_limit(UNSET, 7) == 7
