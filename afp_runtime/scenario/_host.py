"""The in-memory side of a scenario, which a restart or a crash throws away: the open store,
the agent definition (its scripted model adapters, its window strategy and the strategy's
latch) and the driver (docs/scenarios.md)."""

from __future__ import annotations

from pathlib import Path

from afp_runtime.agents import Agent, AgentConfig, ModelConfig, WindowConfig, build_definition
from afp_runtime.app import LocalAgent
from afp_runtime.errors import AfpError, AgentDefinitionError, WindowConfigError
from afp_runtime.models import ScriptedModel
from afp_runtime.scenario._wait import sync_at_open
from afp_runtime.scenario._world import World
from afp_runtime.scenario.format import (
    AGENT_ID,
    SlidingWindowSpec,
    StrategySpec,
    SummarizeOldestSpec,
    TokenBudgetSpec,
    at_path,
    build_tool,
)
from afp_runtime.store import Store, open_store


def _window_config(spec: StrategySpec | None) -> WindowConfig | None:
    """A scenario's strategy (``{kind, options}``) as the config files' window table."""
    if spec is None:
        return None
    if isinstance(spec, SlidingWindowSpec):
        return WindowConfig(kind="slidingWindow", keep_recent_turns=spec.options.keep_recent_turns)
    if isinstance(spec, TokenBudgetSpec):
        return WindowConfig(
            kind="tokenBudget",
            threshold_tokens=spec.options.threshold_tokens,
            keep_recent_turns=spec.options.keep_recent_turns,
        )
    options = spec.options
    return WindowConfig(
        kind="summarizeOldest",
        threshold_tokens=options.threshold_tokens,
        keep_recent_turns=options.keep_recent_turns,
        model=options.model,
        retain=options.retain,
    )


class Host:
    """The in-memory side of a scenario: the store, the agent definition and its driver."""

    def __init__(self, world: World, location: str | Path) -> None:
        self.world = world
        self.location = location
        self.store: Store | None = None
        self.definition: Agent | None = None
        self.driver: LocalAgent | None = None

    async def open(self) -> None:
        """Start a fresh host on the store (start-up, docs/host.md#start-up)."""
        world = self.world
        # The definition first: one the scenario's values refuse leaves no store behind.
        self.definition = self._definition()
        self.store = await open_store(self.location, now_ms=world.clock.now_ms())
        # As a host does at start (docs/host.md#schedules).
        await sync_at_open(self.store, self.definition.schedules, now_ms=world.clock.now_ms())
        self.driver = LocalAgent(
            self.store,
            self.definition,
            clock=world.clock,
            ids=world.ids,
            sinks=[world.on_event],
            rng=world.rng,
            hooks=world.hooks(),
        )

    async def close(self) -> None:
        """Drop every in-memory object; the store file stays."""
        definition, store = self.definition, self.store
        self.driver = self.definition = self.store = None
        try:
            if definition is not None:
                await definition.aclose()
        finally:
            if store is not None:
                await store.aclose()

    def _definition(self) -> Agent:
        """The scenario's agent, built by the config files' builder (``build_definition``):
        the scenario keeps its own file shape, the scripted model, summarizer and tools."""
        scenario = self.world.scenario
        agent = scenario.agent
        tools = [
            build_tool(spec, f"$.tools[{index}]", self.world.tool_fn(index))
            for index, spec in enumerate(scenario.tools)
        ]
        config = AgentConfig(
            id=AGENT_ID,
            model=ModelConfig(provider="scripted", model=agent.model),
            system_prompt=agent.system_prompt or "",
            max_iterations=agent.max_iterations,
            wrap_up=agent.wrap_up,
            repeated_call_note=agent.repeated_call_note,
            pricing=agent.pricing,
            budgets=agent.budgets,
            permissions=agent.permissions,
            durability=agent.durability,
            window=_window_config(scenario.strategy),
            keep_last_tool_results=agent.keep_last_tool_results,
            findings=agent.findings,
            time=agent.time,
            schedules=list(agent.schedules),
            schedule_wakeup=agent.schedule_wakeup,
            recall=agent.recall,
        )
        summarizer = (
            ScriptedModel(self.world.summarize, model=scenario.strategy.options.model)
            if isinstance(scenario.strategy, SummarizeOldestSpec)
            else None
        )
        try:
            return build_definition(
                config,
                field="$.agent",
                model=ScriptedModel(self.world.main_send, model=agent.model),
                summarizer=summarizer,
                tools=tools,
            )
        except WindowConfigError as exc:
            raise at_path("$.strategy.options", exc) from None
        except AgentDefinitionError:
            raise  # the builder names its whole path already ($.agent.maxIterations)
        except AfpError as exc:
            raise at_path("$.agent", exc) from None

    def live(self) -> tuple[Store, LocalAgent]:
        assert self.store is not None and self.driver is not None, "the host is open"
        return self.store, self.driver
