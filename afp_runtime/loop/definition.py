"""What the loop reads of an agent definition (the definitions themselves, with their options and
extensions, are built in ``afp_runtime.agents``; the options are declared once in
``afp_runtime.agents.options``, docs/config.md#one-declaration)."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Literal

from afp_runtime.cost import Budget, Price
from afp_runtime.extensions import Extension
from afp_runtime.loop.output import OutputSpec
from afp_runtime.messages import ModelParams
from afp_runtime.models import Model, RetryPolicy
from afp_runtime.store import DefinitionSummary
from afp_runtime.tools import Tool
from afp_runtime.window import WindowStrategy

Durability = Literal["sync", "iteration", "turn"]
TurnFailure = Literal["hold", "skip"]


class Definition(abc.ABC):
    """One standing agent's definition, as the loop and the host drive it: the types of the
    values ``afp.Agent`` keeps of its options, which it inherits. Each attribute below is an
    option of the declaration by the same name, or a value derived from several (``output``,
    ``fact_limit``, ``extensions``); tests/loop/test_config_options.py holds the two together."""

    agent_id: str
    model: Model

    @property
    @abc.abstractmethod
    def tools(self) -> tuple[Tool, ...]:
        """The tools offered now (an MCP server's list may change between iterations)."""

    @property
    @abc.abstractmethod
    def tools_by_name(self) -> dict[str, Tool]:
        """``tools`` by name."""

    system_prompt: str
    max_iterations: int
    wrap_up: bool
    durability: Durability
    max_concurrent_tools: int
    params: ModelParams
    retry: RetryPolicy
    max_recoveries: int
    shared: bool
    on_turn_failure: TurnFailure
    max_stall_s: float
    pause_timeout_s: float | None
    window: WindowStrategy | None
    keep_last_tool_results: int | bool
    repeated_call_note: bool
    """Whether a result repeated within a turn carries the note (docs/loop.md#repeated-calls)."""
    pricing: Mapping[str, Price]
    """Prices per token by model id (docs/cost.md#prices)."""
    budgets: tuple[Budget, ...]
    """Spending limits (docs/cost.md#budgets)."""
    output: OutputSpec | None
    """The typed final answer's schema (docs/loop.md#typed-answers), or None."""
    fact_limit: int
    """The ledger-fact pin ceiling of the window (0: off)."""
    extensions: tuple[Extension, ...]
    """The agent's extensions, in the order their hooks are called (docs/loop.md#extensions)."""
    resources: list[Any]

    @abc.abstractmethod
    def summary(self) -> dict[str, Any]:
        """The run constant ``definition``: fingerprint and tool names."""

    def profile(self) -> DefinitionSummary:
        """What the store keeps of this definition, for doors that do not run the agent
        (docs/storage.md#definition-summaries)."""
        return DefinitionSummary(
            model=self.model.model,
            provider=self.model.provider,
            tool_names=tuple(tool.name for tool in self.tools),
            max_iterations=self.max_iterations,
            durability=self.durability,
            window_strategy=self.window.name if self.window is not None else None,
        )

    @abc.abstractmethod
    def check_message_time(self, time: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """An inbox message's ``time``, checked strictly, as it is stored."""
