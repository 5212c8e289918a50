"""Agent config files: TOML decoded with msgspec into camelCase Structs, then built into the
same ``Agent`` Python code builds, by one builder (``build_definition``), which scenarios use too.

An unknown key or a bad value is a ``ConfigError`` naming the key path (e.g.
``agents[0].model.baseUrl``). A file holds one or several agents under ``[[agents]]``.

Code is referenced as ``ref = "module:attr"`` (tools, a scripted model's script, a summarizer's
script). The module is looked for first beside the config file, then in the working directory,
then on ``sys.path``, so no ``PYTHONPATH`` is needed; a module that fails while importing, with
any exception, is a ``ConfigError`` naming the ref and the exception. A tool ref names either a
``Tool`` (the options the file sets are applied to a copy), a typed function (its schema comes
from its type hints, as ``@tool`` builds it) or, with ``inputSchema``, an ``(args, ctx)`` function
(docs/config.md#tools).
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from afp_runtime.agents.definition import Agent
from afp_runtime.agents.options import AgentConfig as AgentConfig
from afp_runtime.agents.options import declared
from afp_runtime.agents.refs import resolve_ref
from afp_runtime.agents.registries import build_model, build_window, provider_builder
from afp_runtime.agents.tables import ConfigStruct, ToolConfig
from afp_runtime.agents.tables import ModelConfig as ModelConfig
from afp_runtime.agents.tables import WindowConfig as WindowConfig
from afp_runtime.cost import Price
from afp_runtime.errors import AgentDefinitionError, ConfigError, error_context, shown
from afp_runtime.loop import Durability
from afp_runtime.models import Model
from afp_runtime.telemetry import TelemetryConfig
from afp_runtime.time import period_from_wire, time_config_from_wire
from afp_runtime.tools import Tool, tool
from afp_runtime.window import WindowStrategy


class HostConfig(ConfigStruct):
    """The ``[host]`` table of an agents file (docs/host.md#running-a-host): settings of the
    standing host.

    ``durability`` is the default of every agent that does not set its own.
    """

    max_active_turns: int = 8
    shutdown_grace_s: float = 30.0
    poll_interval_s: float = 1.0
    lease_ttl_s: float = 30.0
    host_id: str | None = None
    durability: Durability | None = None
    telemetry: TelemetryConfig | None = None


class ApiConfig(ConfigStruct):
    """The ``[api]`` table of an agents file (docs/api.md#connection-limits): how long a client
    of ``afp serve`` may take and how many may connect. A key left out keeps the server's
    default; the server checks the values (``ConfigError`` naming ``api.<key>``)."""

    header_timeout_s: float | None = None
    body_timeout_s: float | None = None
    keep_alive_s: float | None = None
    max_connections: int | None = None
    max_connections_per_client: int | None = None

    def given(self) -> dict[str, Any]:
        """The keys the file set, by their Python names."""
        return {
            name: value
            for name in self.__struct_fields__
            if (value := getattr(self, name)) is not None
        }


class ConfigFile(ConfigStruct):
    """A config file: its agents, optionally the host's and the API server's settings, and the
    prices of the models its agents use (the default of every agent that sets no ``pricing`` of
    its own)."""

    agents: list[AgentConfig]
    host: HostConfig = msgspec.field(default_factory=HostConfig)
    api: ApiConfig = msgspec.field(default_factory=ApiConfig)
    pricing: dict[str, Price] = msgspec.field(default_factory=dict)


def load_config(path: str | Path, text: str) -> ConfigFile:
    """Decode a config file's text.

    Raises:
        ConfigError: not TOML, an unknown key, or a bad value; names the key path.
    """
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}", path=str(path)) from exc
    _check_periods(raw)
    try:
        config = msgspec.convert(raw, ConfigFile)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {exc}", path=str(path)) from exc
    if not config.agents:
        raise ConfigError(f"{path} declares no agents", path=str(path))
    return config


def _check_periods(raw: dict[str, Any]) -> None:
    """Decode every ``agents[i].tools[j].period`` first, so that a bad declaration raises
    ``PeriodDeclarationError`` naming its key path (docs/time.md#validation-at-definition-time)."""
    agents = raw.get("agents")
    for i, agent in enumerate(agents if isinstance(agents, list) else []):
        tools = agent.get("tools") if isinstance(agent, dict) else None
        for j, entry in enumerate(tools if isinstance(tools, list) else []):
            if isinstance(entry, dict) and entry.get("period") is not None:
                with error_context(path=f"agents[{i}].tools[{j}].period"):
                    period_from_wire(entry["period"])


def build_tool(config: ToolConfig, *, field: str, base_dir: Path | None = None) -> Tool:
    """The tool a tool config references, with the file's options applied.

    Raises:
        ConfigError: the ref does not resolve, or an option cannot apply (names the key).
        ToolDefinitionError: the function or an option is not a valid declaration.
    """
    target = resolve_ref(config.ref, field=f"{field}.ref", base_dir=base_dir)
    options = config.options()
    with error_context(path=field):
        if isinstance(target, Tool):
            if config.input_schema is not None:
                raise ConfigError(
                    f"{field}.inputSchema cannot apply: {config.ref!r} names a Tool, which "
                    "has its own schema",
                    path=f"{field}.inputSchema",
                )
            return dataclasses.replace(target, **options) if options else target
        if not callable(target):
            raise ConfigError(
                f"{field}.ref names neither a Tool nor a function ({shown(target)})",
                path=f"{field}.ref",
            )
        if config.input_schema is None:
            return tool(target, **options)
        return tool(input_schema=config.input_schema, **options)(target)


def build_definition(
    config: AgentConfig,
    *,
    field: str = "agents[0]",
    durability: Durability = "sync",
    base_dir: Path | None = None,
    model: Model | None = None,
    summarizer: Model | None = None,
    tools: Sequence[Tool] | None = None,
    pricing: dict[str, Price] | None = None,
) -> Agent:
    """The agent an agent config describes: the one builder of config files and scenarios.

    Args:
        config: the decoded agent config.
        field: the config's key path, for error messages.
        durability: the host's default, used when the agent sets none.
        base_dir: the config file's directory; refs are looked for there first.
        model: stands in for ``config.model`` (a scenario's scripted model).
        summarizer: stands in for ``config.window.summarizer``.
        tools: stand in for ``config.tools`` (a scenario's scripted tools).
        pricing: the file's ``[pricing]`` table, used when the agent sets none.

    Raises:
        ConfigError: a ref or option of the file is wrong (names its key path).
        AgentDefinitionError, WindowConfigError, ToolDefinitionError: the definition the file
            describes is invalid.
    """
    resources: list[Any] = []
    window = (
        build_window(
            config.window,
            field=f"{field}.window",
            resources=resources,
            summarizer=summarizer,
            base_dir=base_dir,
        )
        if config.window
        else None
    )
    if tools is None:
        tools = [
            build_tool(t, field=f"{field}.tools[{i}]", base_dir=base_dir)
            for i, t in enumerate(config.tools)
        ]
    if config.pricing is None and pricing:
        config = msgspec.structs.replace(config, pricing=pricing)
    try:
        definition = _agent(config, field, durability, base_dir, model, tools, window)
    except AgentDefinitionError as exc:
        raise _at_key(field, exc) from None
    definition.resources.extend(resources)
    return definition


def _at_key(field: str, error: AgentDefinitionError) -> AgentDefinitionError:
    """The error with its message led by the whole key path (``agents[0].maxIterations``)."""
    key = error.context.get("field")
    path = f"{field}.{key}" if key else field
    error.message = f"{path}: {error.message}"
    error.args = (error.message,)
    error.context["field"] = path
    return error


def _agent(
    config: AgentConfig,
    field: str,
    durability: Durability,
    base_dir: Path | None,
    model: Model | None,
    tools: Sequence[Tool],
    window: WindowStrategy | None,
) -> Agent:
    # Every other option of the declaration is given to Agent as the file holds it.
    built = ("id", "model", "tools", "window", "durability", "time", "mcp")
    options = {
        option.keyword: getattr(config, option.name)
        for option in declared()
        if option.name not in built
    }
    # A stdio server of a file runs in the file's directory (or its cwd, read from there).
    mcp = [
        msgspec.structs.replace(server, cwd=str(base_dir / (server.cwd or ".")))
        if server.command is not None and base_dir is not None
        else server
        for server in config.mcp
    ]
    if model is None:
        model = build_model(config.model, field=f"{field}.model", base_dir=base_dir)
    else:
        # A stand-in model (a scenario's) still leaves no unknown provider name unreported.
        provider_builder(config.model, field=f"{field}.model")
    return Agent(
        config.id,
        model,
        tools=tools,
        window=window,
        durability=config.durability or durability,
        time=time_config_from_wire(config.time) if config.time is not None else None,
        mcp=mcp,
        **options,
    )


def read_config(path: str | Path) -> tuple[ConfigFile, list[Agent]]:
    """Read an agents file and build every agent it declares (refs resolved beside it).

    Reads the file and imports modules: call it off the event loop.

    Raises:
        ConfigError: the file cannot be read, is not TOML, or a key is wrong (names it).
        AfpError: a definition the file describes is invalid.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc}", path=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config {path} is not UTF-8 text (byte {exc.start})", path=str(path)
        ) from None
    config = load_config(path, text)
    default = config.host.durability or "sync"
    base_dir = path.resolve().parent
    seen: dict[str, int] = {}
    for index, agent in enumerate(config.agents):
        if agent.id in seen:
            field = f"agents[{index}].id"
            raise ConfigError(
                f"{path}: {field} {agent.id!r} is already the id of agents[{seen[agent.id]}]; "
                "agent ids must be unique",
                path=str(path),
                field=field,
            )
        seen[agent.id] = index
    agents = [
        build_definition(
            agent,
            field=f"agents[{index}]",
            durability=default,
            base_dir=base_dir,
            pricing=config.pricing,
        )
        for index, agent in enumerate(config.agents)
    ]
    return config, agents


def load_agents(path: str | Path) -> list[Agent]:
    """The agents an agents file (TOML) declares, built as Python code would build them.

    Refs (tools, scripts, summarizers) are looked for beside the file first. The file's
    ``[host]`` table gives the default ``durability`` of agents that set none. Reads the file
    and imports modules: call it before the event loop starts, or in a worker thread.

    Raises:
        ConfigError: the file cannot be read, is not TOML, a key or value is wrong, or a ref
            does not import (each names the key path).
        AfpError: a definition the file describes is invalid.
    """
    return read_config(path)[1]
