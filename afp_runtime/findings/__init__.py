"""Findings: the model's declared standings on tool results — peeling ``_findings``, the ledger
rows, the incremental fold, and what findings serve per request (docs/findings.md)."""

from afp_runtime.findings.config import (
    DEFAULT_FACT_LIMIT,
    AnswerAsk,
    FindingsConfig,
    KeepLedgerFacts,
    ServeMode,
    resolve_fact_limit,
    validate_findings_config,
)
from afp_runtime.findings.declare import FINDINGS_ARG
from afp_runtime.findings.extension import FindingsExtension
from afp_runtime.findings.fold import EMPTY_FOLD, LedgerFold, fold_ledger
from afp_runtime.findings.rows import (
    Assertion,
    BasisRow,
    ConflictRow,
    DeclaredOn,
    ForeignRow,
    LedgerRow,
    StandingRow,
    Subject,
    WitnessRef,
    register_row_kind,
    rows_from_wire,
    rows_to_wire,
    validate_rows,
)

__all__ = [
    "AnswerAsk",
    "Assertion",
    "BasisRow",
    "ConflictRow",
    "DEFAULT_FACT_LIMIT",
    "DeclaredOn",
    "EMPTY_FOLD",
    "FINDINGS_ARG",
    "FindingsConfig",
    "FindingsExtension",
    "ForeignRow",
    "KeepLedgerFacts",
    "LedgerFold",
    "LedgerRow",
    "ServeMode",
    "StandingRow",
    "Subject",
    "WitnessRef",
    "fold_ledger",
    "register_row_kind",
    "resolve_fact_limit",
    "rows_from_wire",
    "rows_to_wire",
    "validate_findings_config",
    "validate_rows",
]
