"""Commit bundles: the writes of one stage execution, appended to its run's commit log."""

from __future__ import annotations

import msgspec

from afp_runtime.records.writes import AnyWrite

STAGES: tuple[str, ...] = (
    "seed",
    "settle",
    "window",
    "context",
    "receipt",
    "call-model",
    "tool-calls",
    "wrap-up",
    "final",
    "halt",
    "output-retry",
)

# Keys whose values are message lists: the store keeps them as references to stored bodies.
MESSAGE_LIST_KEYS: frozenset[str] = frozenset({"history"})


class CommitBundle(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The writes of one stage execution (docs/loop.md#commit-bundles).

    Attributes:
        run_id: the run (wire ``runId``).
        seq: 0-based commit position in the run; equals the stage execution index.
        stage: the stage name.
        runtime_stage_id: ``<stage>#<seq>`` (wire ``runtimeStageId``).
        iteration: the iteration the stage belongs to.
        writes: the writes, in order (typed: ``records/writes.py``).
        committed_at_ms: injected clock at commit, epoch milliseconds.
    """

    run_id: str
    seq: int
    stage: str
    runtime_stage_id: str
    iteration: int
    writes: tuple[AnyWrite, ...]
    committed_at_ms: int


def runtime_stage_id(stage: str, seq: int) -> str:
    """The id ``<stage>#<n>`` of a stage execution."""
    return f"{stage}#{seq}"


def parse_runtime_stage_id(text: str) -> tuple[str, int]:
    """Split ``<stage>#<n>`` at its last ``#``; refuses unknown stages and leading zeros."""
    stage, sep, number = text.rpartition("#")
    if (
        not sep
        or stage not in STAGES
        or not number.isdigit()
        or (len(number) > 1 and number.startswith("0"))
    ):
        raise ValueError(f"not a runtime stage id: {text!r}")
    return stage, int(number)
