"""Agent definitions: the model, instructions, tools and limits of one standing agent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime._logging import get_logger

# AGENT_ID is the declaration's (the id option's check), named here too where it always was.
from afp_runtime.agents.options import AGENT_ID as AGENT_ID
from afp_runtime.agents.options import check_options
from afp_runtime.cost import Budget, Price
from afp_runtime.errors import TimeNotEnabled
from afp_runtime.extensions import Extension
from afp_runtime.findings import FindingsConfig
from afp_runtime.loop import Definition, Durability, TurnFailure
from afp_runtime.mcp import McpServer, McpTools
from afp_runtime.messages import ModelParams, canonical_json, sha256_hex
from afp_runtime.models import Model, RetryPolicy
from afp_runtime.permissions import GateFn, Rule
from afp_runtime.schedules import Schedule
from afp_runtime.store import DefinitionSummary
from afp_runtime.time import TimeConfig, message_time_from_wire
from afp_runtime.tools import Tool
from afp_runtime.window import WindowStrategy

log = get_logger()


class Agent(Definition):
    """One standing agent: what it sends, what it may call, and its limits.

    Args:
        agent_id: matches ``^[a-z0-9][a-z0-9._-]{0,63}$``.
        model: the Model adapter.
        tools: the agent's tools; names must be unique.
        system_prompt: the agent's instructions ('' for none); never part of history.
        max_iterations: model calls of a turn that may still be followed by tools (int >= 1).
        wrap_up: when the budget runs out with calls pending, make one more call with tools
            withheld (True) or end the turn with the reply's text (False).
        durability: ``sync`` (default), ``iteration`` or ``turn`` (docs/loop.md#durability-modes).
        max_concurrent_tools: bound on concurrently running parallel-safe calls.
        params: sampling dials sent with every call.
        retry: how failed model sends are retried.
        max_recoveries: recovery runs per turn before it is held as a crash loop.
        window: the window strategy visited at every iteration (None: the window stage is a
            no-op and requests are byte-identical to a runtime without the window family).
        compaction: shorthand for ``window=summarize_oldest(...)``; setting both is refused.
        keep_last_tool_results: the last-tool-result pin's ceiling (int >= 0, or False = off).
        findings: arms the agent (docs/findings.md#arming-an-agent): the model may declare
            standings through a reserved ``_findings`` argument; None leaves the agent
            byte-identical to a runtime without the findings family.
        shared: skip the owner check: any principal may post and answer
            (docs/host.md#ownership-and-leases).
        on_turn_failure: ``hold`` (default: a held turn waits for an operator and later
            messages wait behind it) or ``skip`` (a held turn is dismissed at once and the
            queue moves on), docs/host.md#stalled-and-held-turns.
        max_stall_s: how long a turn may stay stalled, counted from its first stall, before it
            is held (``stall-limit``); default 24 h.
        time: enables the time layer (docs/time.md): the person's words are read for time
            windows, tools that declare periods are filled, bound or refused with a
            ``call-window`` row, and every request carries the time line. None: off, and
            requests are byte-identical to an agent without it.
        pause_timeout_s: abandon a paused turn's open questions this long after they were
            asked (on the injected clock); None (default) waits for ever.
        keep_ledger_facts: the agent-level ledger-fact pin ceiling; ``findings``'s own value
            wins when set (docs/findings.md#the-keep-ledger-facts-dial). Validated even when
            unarmed.
        extensions: further extensions of the loop (docs/loop.md#extensions), whose hooks are
            called after those of ``time`` and ``findings``.
        repeated_call_note: when a call (same tool, same arguments) returns exactly the same
            result for the second time or more in a turn, the tool message carries a note saying
            so (docs/loop.md#repeated-calls); False leaves results as the tools returned them.
        pricing: prices per token by model id (``afp.cost.Price``; docs/cost.md#prices): each
            model call's cost is priced from its reported usage.
        permissions: a permission gate per tool call (docs/permissions.md): a list of
            ``afp.permissions.Rule`` (first match wins; no match allows) or a function
            ``(call) -> "allow" | "deny" | "ask" | "halt" | afp.permissions.Verdict``, sync or
            async. Every decision is a ``permission`` row of the ledger.
        output: the typed final answer (docs/loop.md#typed-answers): a msgspec Struct class, a
            dataclass or a JSON schema (dict). The answer is decoded against it; one that does
            not decode is asked for again, saying what was wrong, up to ``output_retries``
            times. ``TurnResult.value`` holds the decoded value.
        output_retries: retries of an answer the output schema refuses (int >= 0, default 2).
        budgets: spending limits per turn or per UTC day (``afp.cost.Budget``;
            docs/cost.md#budgets), each warning or halting the turn.
        mcp: MCP servers the agent takes tools from (``afp.mcp.stdio``, ``afp.mcp.http``;
            docs/mcp.md); their tools join ``tools`` once the host has listed them.
        schedules: the agent's declared wake-ups (``afp.schedule``; docs/python.md#schedules):
            each delivers its text to the inbox when due, from the sender ``schedule:NAME``.

    The keywords are the options declared once in ``afp_runtime.agents.options``
    (docs/config.md#one-declaration), plus ``compaction`` and ``extensions``; each is checked
    there.

    Raises:
        AgentDefinitionError: a field is invalid; the message names it.
    """

    def __init__(
        self,
        agent_id: str,
        model: Model,
        *,
        tools: Sequence[Tool] = (),
        system_prompt: str = "",
        max_iterations: int = 10,
        wrap_up: bool = True,
        durability: Durability = "sync",
        max_concurrent_tools: int = 4,
        params: ModelParams | None = None,
        retry: RetryPolicy | None = None,
        max_recoveries: int = 3,
        window: WindowStrategy | None = None,
        compaction: WindowStrategy | None = None,
        keep_last_tool_results: int | bool = 2,
        findings: FindingsConfig | None = None,
        keep_ledger_facts: int | bool | msgspec.UnsetType = msgspec.UNSET,
        shared: bool = False,
        on_turn_failure: TurnFailure = "hold",
        max_stall_s: float = 86_400.0,
        pause_timeout_s: float | None = None,
        time: TimeConfig | None = None,
        extensions: Sequence[Extension] = (),
        mcp: Sequence[McpServer] = (),
        repeated_call_note: bool = True,
        pricing: Mapping[str, Price] | None = None,
        budgets: Sequence[Budget] = (),
        permissions: Sequence[Rule] | GateFn | None = None,
        output: type | dict[str, Any] | None = None,
        output_retries: int = 2,
        schedules: Sequence[Schedule] = (),
        schedule_wakeup: bool = False,
        recall: bool = False,
    ) -> None:
        # The keywords are the declaration's (tests/loop/test_config_options.py holds them to it);
        # each is checked by it, and what it keeps becomes an attribute typed by Definition.
        kept = check_options({name: value for name, value in locals().items() if name != "self"})
        own_tools: tuple[Tool, ...] = tuple(kept.pop("tools"))
        servers: tuple[McpServer, ...] = kept.pop("mcp")
        self.findings: FindingsConfig | None = kept.pop("findings")
        self.time: TimeConfig | None = kept.pop("time")
        self.schedules: tuple[Schedule, ...] = kept.pop("schedules")
        for name, value in kept.items():
            setattr(self, name, value)
        self._own_tools = self._all_tools = own_tools
        self._own_by_name = self._all_by_name = {tool.name: tool for tool in own_tools}
        self.mcp: McpTools | None = McpTools(servers, agent_id=agent_id) if servers else None
        self._mcp_version: tuple[int, ...] = ()
        # MCP tool-name clashes already warned about (the loop's own warnings are kept per run,
        # docs/loop.md#what-a-run-carries).
        self.warned: set[str] = set()
        # Adapters this definition owns besides its model (a configured summarizer).
        self.resources: list[Any] = []

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The agent's tools: its own, then those its MCP servers list now (docs/mcp.md)."""
        self._join_mcp_tools()
        return self._all_tools

    @property
    def tools_by_name(self) -> dict[str, Tool]:
        """``tools`` by name."""
        self._join_mcp_tools()
        return self._all_by_name

    def _join_mcp_tools(self) -> None:
        if self.mcp is None or self.mcp.version == self._mcp_version:
            return
        self._mcp_version = self.mcp.version
        joined = dict(self._own_by_name)
        for tool in self.mcp.tools():
            if tool.name in joined:
                if f"mcp-clash:{tool.name}" not in self.warned:
                    self.warned.add(f"mcp-clash:{tool.name}")
                    log.warning(
                        "mcp tool left out: the agent has a tool of that name",
                        agent_id=self.agent_id,
                        tool=tool.name,
                    )
                continue
            joined[tool.name] = tool
        self._all_by_name = joined
        self._all_tools = tuple(joined.values())

    def check_message_time(self, time: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The ``time`` of an inbox message, checked strictly (docs/time.md#the-clock-row), as it
        is stored.

        Raises:
            TimeNotEnabled: the agent does not have time enabled.
            InvalidValue: a field is wrong (named ``time.now``, ``time.zone``, ``time.window``…).
        """
        if time is None:
            return None
        if self.time is None:
            raise TimeNotEnabled(
                f"agent {self.agent_id!r} does not have time enabled; send the message "
                "without time",
                field="time",
            )
        message_time_from_wire(time)
        return dict(time)

    async def aclose(self) -> None:
        """Close the model adapter and every adapter the definition owns, once each."""
        await self.model.aclose()
        for resource in self.resources:
            if resource is not self.model:
                await resource.aclose()

    def fingerprint(self) -> str:
        """SHA-256 of the body-shaping parts: instructions, tool schemas, model, params."""
        shape = {
            "systemPrompt": self.system_prompt,
            "tools": [tool.schema() for tool in self.tools],
            "model": self.model.model,
            "provider": self.model.provider,
            "params": self.params,
            "window": self.window.name if self.window is not None else None,
            "keepLastToolResults": self.keep_last_tool_results,
        }
        if self.output is not None:
            shape["output"] = self.output.shape()
        if not self.repeated_call_note:
            # Only when off: the default keeps every fingerprint taken before the note existed.
            shape["repeatedCallNote"] = False
        for extension in self.extensions:
            # Only when enabled: an agent without an extension keeps its fingerprint
            # (docs/time.md#time-disabled).
            shape[extension.name] = extension.shape()
        return sha256_hex(canonical_json(shape))

    def profile(self) -> DefinitionSummary:
        """The loop's summary with the time layer's zone."""
        summary = super().profile()
        if self.time is None:
            return summary
        return msgspec.structs.replace(summary, time_zone=self.time.zone)

    def summary(self) -> dict[str, Any]:
        """The run constant ``definition``: fingerprint and tool names."""
        return {"fingerprint": self.fingerprint(), "toolNames": [t.name for t in self.tools]}
