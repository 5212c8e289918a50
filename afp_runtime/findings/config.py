"""Arming an agent with findings, and the ledger-fact dial (docs/findings.md#arming-an-agent,
docs/findings.md#the-keep-ledger-facts-dial).

``FindingsConfig`` is the value given as ``findings=`` on an agent definition, and the same
struct decodes the ``findings`` table of a TOML or JSON config (camelCase keys; an unknown key
fails with its path). Every option is checked when the struct is made, in Python or by
decoding.

Readings settled here:

* One field arms the agent (``findings=``), so "arming twice" cannot arise in this struct; the
  agent definition refuses a second ``findings`` if it ever gains another arming field.
* A ``FindingsConfig`` built in Python with a bad value raises ``FindingsConfigError`` from
  ``__post_init__``; ``findings_config_from_wire`` turns the decoder's own errors (unknown keys,
  wrong types, unknown enum strings) into ``FindingsConfigError`` too, naming the wire path.
* ``resolve_fact_limit`` validates the agent's own ``keep_ledger_facts`` option as well. That
  option belongs to the agent's window settings, so a bad value there raises the window
  family's ``WindowConfigError`` (docs/window.md#definition-time-validation lists it among the
  window option errors); a bad ``FindingsConfig.keep_ledger_facts`` raises ``FindingsConfigError``
  (docs/findings.md#arming-an-agent).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

import msgspec

from afp_runtime.errors import ConfigError, FindingsConfigError, WindowConfigError, shown

ServeMode = Literal["ledger-and-facts", "ledger-only"]
"""``ledger-and-facts`` stubs noise and ruled-out results; ``ledger-only`` stubs facts too."""

AnswerAsk = Literal["none", "quote-facts"]
"""``quote-facts`` closes the ledger piece with an ask to quote the facts the answer uses."""

SERVE_MODES: tuple[str, ...] = get_args(ServeMode)
ANSWER_ASKS: tuple[str, ...] = get_args(AnswerAsk)

DEFAULT_FACT_LIMIT = 4
"""The ledger-fact pin's limit when neither place sets ``keep_ledger_facts``
(docs/findings.md#the-keep-ledger-facts-dial)."""

KeepLedgerFacts = int | Literal[False]
"""A ``keep_ledger_facts`` value: an int >= 0, or ``False`` (the pin off, like ``0``)."""


class FindingsConfig(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    forbid_unknown_fields=True,
):
    """The findings options of an agent; giving one arms the agent
    (docs/findings.md#arming-an-agent).

    Attributes:
        serve: ``"ledger-and-facts"`` (default) or ``"ledger-only"`` (experimental).
        keep_ledger_facts: the ledger-fact pin's limit (wire ``keepLedgerFacts``): an int
            >= 0, ``False``, or UNSET (then the agent option or the default 4 decides,
            docs/findings.md#the-keep-ledger-facts-dial).
        answer_ask: ``"none"`` (default) or ``"quote-facts"`` (wire ``answerAsk``).

    Raises:
        FindingsConfigError: an option has an invalid value (names the option and value).
    """

    serve: ServeMode = "ledger-and-facts"
    keep_ledger_facts: KeepLedgerFacts | msgspec.UnsetType = msgspec.UNSET
    answer_ask: AnswerAsk = "none"

    def __post_init__(self) -> None:
        validate_findings_config(self)


def _refuse(option: str, value: object, why: str) -> FindingsConfigError:
    return FindingsConfigError(
        f"findings option {option} = {shown(value)} is refused: {why}",
        option=option,
        value=shown(value),
    )


def _check_keep(value: object, refuse: type[ConfigError], where: str) -> int:
    """The limit a ``keep_ledger_facts`` value stands for; ``False`` is 0."""
    if value is False:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise refuse(
            f"{where} keep_ledger_facts = {shown(value)} is refused: it must be an int >= 0, "
            "or False",
            option="keep_ledger_facts",
            value=shown(value),
        )
    return value


def validate_findings_config(config: FindingsConfig) -> FindingsConfig:
    """Check every option of ``config``; return it unchanged.

    Raises:
        FindingsConfigError: ``serve`` or ``answer_ask`` is not one of its values, or
            ``keep_ledger_facts`` is not UNSET, ``False`` or an int >= 0 (``True`` refused).
    """
    if not isinstance(config.serve, str) or config.serve not in SERVE_MODES:
        raise _refuse("serve", config.serve, f"it must be one of {', '.join(SERVE_MODES)}")
    if not isinstance(config.answer_ask, str) or config.answer_ask not in ANSWER_ASKS:
        raise _refuse(
            "answer_ask", config.answer_ask, f"it must be one of {', '.join(ANSWER_ASKS)}"
        )
    if config.keep_ledger_facts is not msgspec.UNSET:
        _check_keep(config.keep_ledger_facts, FindingsConfigError, "findings option")
    return config


def findings_config_from_wire(data: Mapping[str, Any]) -> FindingsConfig:
    """Decode the ``findings`` table of a config file (camelCase keys).

    Raises:
        FindingsConfigError: an unknown key, a wrong type or an invalid value; the message
            names the key path as msgspec reports it (e.g. ``$.keepLedgerFacts``).
    """
    try:
        return msgspec.convert(data, type=FindingsConfig)
    except msgspec.ValidationError as exc:
        raise FindingsConfigError(
            f"findings config is refused: {exc}", option="findings", value=shown(dict(data))
        ) from exc


def resolve_fact_limit(
    findings_value: object = msgspec.UNSET, agent_value: object = msgspec.UNSET
) -> int:
    """The ledger-fact pin's limit, resolved once at definition time
    (docs/findings.md#the-keep-ledger-facts-dial).

    A set ``FindingsConfig.keep_ledger_facts`` wins (``False`` is 0); otherwise a set agent
    option (``False`` is 0); otherwise 4. Both values are validated even when the agent is
    unarmed, and UNSET is the only "not set" (``None`` is refused).

    Args:
        findings_value: ``FindingsConfig.keep_ledger_facts``, or UNSET (also when unarmed).
        agent_value: the agent option ``keep_ledger_facts``, or UNSET.

    Raises:
        FindingsConfigError: ``findings_value`` is invalid.
        WindowConfigError: ``agent_value`` is invalid.
    """
    findings_limit = (
        None
        if findings_value is msgspec.UNSET
        else _check_keep(findings_value, FindingsConfigError, "findings option")
    )
    agent_limit = (
        DEFAULT_FACT_LIMIT
        if agent_value is msgspec.UNSET
        else _check_keep(agent_value, WindowConfigError, "agent option")
    )
    return agent_limit if findings_limit is None else findings_limit
