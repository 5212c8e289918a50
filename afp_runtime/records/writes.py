"""Commit writes and their registry (docs/loop.md#commit-bundles): one frozen Struct per key a
stage writes, the union of them, and the one decoder of their wire form.

A write is a msgspec tagged union: its class names its key (the tag, wire field ``key``), then
come ``verb`` and ``value`` — so the wire form, ``{"key", "verb", "value"}``, and the bytes a
store holds are the ones an untyped write had. A key with one verb has it as the default; its
``value`` has the type the stage writes. Records whose schema another page owns (a receipt, a
window record, a served piece) stay their wire maps here: their readers check them field by
field (docs/served.md#receipt-fields, docs/window.md#record-schemas).

Readers match on the class (``isinstance`` or ``match``), never on the key's text; ``key`` is
there for what stores a write by key (the key index) and for what prints one.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, cast, get_args

import msgspec

from afp_runtime.errors import InvalidValue
from afp_runtime.messages import Usage
from afp_runtime.records.conversation import ListRef, MessageRef

Verb = Literal["set", "append", "delete"]

_SET = Literal["set"]
_SET_APPEND = Literal["set", "append"]


class Write(msgspec.Struct, frozen=True, kw_only=True, rename="camel", tag_field="key"):
    """The base of every commit write; its class's tag is the key it writes. Each class
    narrows ``verb`` and ``value`` to what its key takes."""

    verb: Verb
    value: Any = None

    @property
    def key(self) -> str:
        """The key written (the class's tag)."""
        tag: str = self.__struct_config__.tag  # type: ignore[assignment]
        return tag

    def __getitem__(self, name: Literal["key", "verb", "value"]) -> Any:
        """A wire field by its wire name: what code written against the untyped wire maps of
        earlier versions reads (the golden scenarios' receipt law does). The runtime's own
        readers match on the class."""
        if name == "key":
            return self.key
        if name in ("verb", "value"):
            return getattr(self, name)
        raise KeyError(name)


# -- seed: what the run is -------------------------------------------------------------------


class RunIdWrite(Write, frozen=True, kw_only=True, tag="runId"):
    verb: _SET = "set"
    value: str


class AgentIdWrite(Write, frozen=True, kw_only=True, tag="agentId"):
    verb: _SET = "set"
    value: str


class TurnWrite(Write, frozen=True, kw_only=True, tag="turn"):
    verb: _SET = "set"
    value: int


class RunKindWrite(Write, frozen=True, kw_only=True, tag="runKind"):
    verb: _SET = "set"
    value: str


class RecoveredFromWrite(Write, frozen=True, kw_only=True, tag="recoveredFrom"):
    verb: _SET = "set"
    value: str


class UserMessageWrite(Write, frozen=True, kw_only=True, tag="userMessage"):
    verb: _SET = "set"
    value: str


class HistoryWrite(Write, frozen=True, kw_only=True, tag="history"):
    """The conversation: committed as a ``ListRef``; a run log reads it back as the
    ``MessageRef`` tuple it names (docs/served.md#the-runlog-interface)."""

    verb: _SET_APPEND
    value: ListRef | tuple[MessageRef, ...]


class IterationWrite(Write, frozen=True, kw_only=True, tag="iteration"):
    verb: _SET = "set"
    value: int


class MaxIterationsWrite(Write, frozen=True, kw_only=True, tag="maxIterations"):
    verb: _SET = "set"
    value: int


class ModelWrite(Write, frozen=True, kw_only=True, tag="model"):
    verb: _SET = "set"
    value: str


class ProviderWrite(Write, frozen=True, kw_only=True, tag="provider"):
    verb: _SET = "set"
    value: str


class DefinitionWrite(Write, frozen=True, kw_only=True, tag="definition"):
    """The definition's summary (docs/loop.md#commit-bundles)."""

    verb: _SET = "set"
    value: dict[str, Any]


class RunUsageWrite(Write, frozen=True, kw_only=True, tag="runUsage"):
    verb: _SET = "set"
    value: Usage


class FoldedSpansWrite(Write, frozen=True, kw_only=True, tag="foldedSpans"):
    """``{"spans": [start, end]}``: the agent's folded spans the run starts with (``set``) or
    that a window visit added (``append``)."""

    verb: _SET_APPEND
    value: dict[str, list[int]]


class FindingsLedgerWrite(Write, frozen=True, kw_only=True, tag="findingsLedger"):
    """``set``: ``{"rows": [start, end]}``, the ledger rows the run starts with; ``append``: new
    rows in their wire form (docs/findings.md)."""

    verb: _SET_APPEND
    value: dict[str, list[int]] | list[dict[str, Any]]


class WrapUpAskedWrite(Write, frozen=True, kw_only=True, tag="wrapUpAsked"):
    verb: _SET = "set"
    value: bool


class StoppedEarlyWrite(Write, frozen=True, kw_only=True, tag="stoppedEarly"):
    verb: _SET = "set"
    value: dict[str, Any] | None


# -- a request, its receipt and the model's reply ----------------------------------------------


class SystemPiecesWrite(Write, frozen=True, kw_only=True, tag="systemPieces"):
    verb: _SET = "set"
    value: list[dict[str, Any]]


class ServedToolsWrite(Write, frozen=True, kw_only=True, tag="servedTools"):
    verb: _SET = "set"
    value: list[dict[str, Any]]


class RequestOnlyWrite(Write, frozen=True, kw_only=True, tag="requestOnly"):
    verb: _SET = "set"
    value: list[dict[str, Any]]


class SubstitutionsWrite(Write, frozen=True, kw_only=True, tag="substitutions"):
    verb: _SET = "set"
    value: list[dict[str, Any]]


class ReceiptWrite(Write, frozen=True, kw_only=True, tag="receipt"):
    """The request receipt (docs/served.md#receipt-fields)."""

    verb: _SET = "set"
    value: dict[str, Any]


class ReplyWrite(Write, frozen=True, kw_only=True, tag="reply"):
    """The model's reply and how many sends it took (the loop's ``CommittedReply``)."""

    verb: _SET = "set"
    value: dict[str, Any]


class CallCostWrite(Write, frozen=True, kw_only=True, tag="callCost"):
    """One call's cost (docs/cost.md#figures)."""

    verb: _SET = "set"
    value: dict[str, Any]


class CallFailureWrite(Write, frozen=True, kw_only=True, tag="callFailure"):
    verb: _SET = "set"
    value: dict[str, Any]


class ToolResultsWrite(Write, frozen=True, kw_only=True, tag="toolResults"):
    verb: _SET = "set"
    value: list[dict[str, Any]]


class PendingBatchWrite(Write, frozen=True, kw_only=True, tag="pendingBatch"):
    """``{"questionIds", "toolCallIds"}`` of a paused batch; ``delete`` (value null) forgets
    it."""

    verb: Literal["set", "delete"] = "set"
    value: dict[str, list[str]] | None = None


# -- how a run ends ----------------------------------------------------------------------------


class FinalAnswerWrite(Write, frozen=True, kw_only=True, tag="finalAnswer"):
    verb: _SET = "set"
    value: str


class FinalValueWrite(Write, frozen=True, kw_only=True, tag="finalValue"):
    """The answer's typed value: any JSON value the output schema allows."""

    verb: _SET = "set"
    value: Any


class OutputErrorWrite(Write, frozen=True, kw_only=True, tag="outputError"):
    verb: _SET = "set"
    value: dict[str, Any]


class OutputRetryWrite(Write, frozen=True, kw_only=True, tag="outputRetry"):
    verb: _SET = "set"
    value: dict[str, Any]


class IgnoredToolCallsWrite(Write, frozen=True, kw_only=True, tag="ignoredToolCalls"):
    verb: _SET = "set"
    value: list[dict[str, Any]]


class HaltedWrite(Write, frozen=True, kw_only=True, tag="halted"):
    verb: _SET = "set"
    value: dict[str, Any]


class ForcedToolWrite(Write, frozen=True, kw_only=True, tag="forcedTool"):
    """The tool a run forces, a run constant a served view reads
    (docs/served.md#rebuild-order); no stage writes it yet."""

    verb: _SET = "set"
    value: str


# -- window visits -----------------------------------------------------------------------------


class CompactionsWrite(Write, frozen=True, kw_only=True, tag="compactions"):
    """Window records (docs/window.md#record-schemas), appended one per visit."""

    verb: Literal["append"] = "append"
    value: list[dict[str, Any]]


class SummarizerCostWrite(Write, frozen=True, kw_only=True, tag="summarizerCost"):
    verb: _SET = "set"
    value: dict[str, Any]


AnyWrite: TypeAlias = (
    RunIdWrite
    | AgentIdWrite
    | TurnWrite
    | RunKindWrite
    | RecoveredFromWrite
    | UserMessageWrite
    | HistoryWrite
    | IterationWrite
    | MaxIterationsWrite
    | ModelWrite
    | ProviderWrite
    | DefinitionWrite
    | RunUsageWrite
    | FoldedSpansWrite
    | FindingsLedgerWrite
    | WrapUpAskedWrite
    | StoppedEarlyWrite
    | SystemPiecesWrite
    | ServedToolsWrite
    | RequestOnlyWrite
    | SubstitutionsWrite
    | ReceiptWrite
    | ReplyWrite
    | CallCostWrite
    | CallFailureWrite
    | ToolResultsWrite
    | PendingBatchWrite
    | FinalAnswerWrite
    | FinalValueWrite
    | OutputErrorWrite
    | OutputRetryWrite
    | IgnoredToolCallsWrite
    | HaltedWrite
    | ForcedToolWrite
    | CompactionsWrite
    | SummarizerCostWrite
)
"""Every write a stage commits."""

WRITE_TYPES: dict[str, type[Write]] = {cls.__struct_config__.tag: cls for cls in get_args(AnyWrite)}
"""The one write class of each key, by key."""


def writes_from_wire(tree: object) -> tuple[AnyWrite, ...]:
    """The typed writes of a bundle from their wire form (a list of ``{"key", "verb",
    "value"}`` maps, as JSON or MessagePack decode it).

    Raises:
        InvalidValue: it is not a list of writes, a key is not registered, or a value is not
            its key's type (the message names which).
    """
    try:
        return msgspec.convert(tree, tuple[AnyWrite, ...])
    except msgspec.ValidationError as exc:
        raise InvalidValue(f"not a list of commit writes: {exc}", field="writes") from None


def write_of(key: str, verb: Verb, value: Any = None) -> AnyWrite:
    """The write of ``key`` with ``verb`` and ``value``, unchecked (``value`` is taken as it
    is): for a log that already holds checked values.

    Raises:
        InvalidValue: ``key`` is not registered.
    """
    cls = WRITE_TYPES.get(key)
    if cls is None:
        raise InvalidValue(f"no commit write has the key {key!r}", field="key")
    # Every class of WRITE_TYPES is a member of AnyWrite.
    return cast("AnyWrite", cls(verb=verb, value=value))
