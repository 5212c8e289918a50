"""The agent options, declared once (docs/config.md#one-declaration).

``AgentConfig`` is the declaration: each field is one option, with its TOML key (the field's
camelCase name), its type and default in a file, and an ``Option`` carrying its doc sentence,
its check and what ``afp.Agent`` takes for it when that differs. From it come the TOML schema
(the Struct itself), the checks of ``afp.Agent`` (``check_options``), the values the loop reads
(``Definition``'s attributes) and the key table of docs/config.md (``keys_table``).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, Literal, get_args, get_type_hints

import msgspec

from afp_runtime.agents.recall_tool import RECALL_ENTRY, RecallExtension
from afp_runtime.agents.schedules import check_declared_schedules
from afp_runtime.agents.tables import ConfigStruct, ModelConfig, ToolConfig, WindowConfig
from afp_runtime.agents.wakeup import WAKEUP_ENTRY, WakeupExtension
from afp_runtime.cost import Budget, Price, check_budgets, check_pricing
from afp_runtime.errors import AgentDefinitionError, shown
from afp_runtime.findings import (
    FindingsConfig,
    FindingsExtension,
    resolve_fact_limit,
    validate_findings_config,
)
from afp_runtime.loop import Durability, OutputSpec
from afp_runtime.mcp import McpServer, checked_servers
from afp_runtime.messages import ModelParams
from afp_runtime.models import RetryPolicy
from afp_runtime.permissions import Permissions, PermissionsExtension, Rule
from afp_runtime.schedules import Schedule
from afp_runtime.time import TimeConfig, TimeExtension
from afp_runtime.window import validate_keep_last_tool_results, validate_strategy

AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")

Check = Callable[[str, Any], Any]
"""An option's check: ``(key, value) -> the value the agent keeps``; raises
``AgentDefinitionError`` naming the key."""

SAME: Any = msgspec.UNSET
"""``Option.default`` when ``Agent(...)``'s default is the file's."""


class Option(msgspec.Struct, frozen=True, kw_only=True):
    """What the declaration says of an option besides its key, type and file default.

    Attributes:
        doc: the sentence of docs/config.md's key table.
        see: the docs/ page (and heading) the table links the sentence to, cited as code cites
            pages, so the docs-reference test checks it too.
        check: what ``Agent(...)`` checks of the value, and turns it into (None: kept as given).
        shown: the default as the table shows it, when the file's default does not say it.
        keyword: ``Agent(...)``'s keyword, when not the field's name (``id`` is ``agent_id``).
        default: ``Agent(...)``'s default, when not the file's.
    """

    doc: str
    see: str | None = None
    check: Check | None = None
    shown: str | None = None
    keyword: str | None = None
    default: Any = SAME


def _agent_id(key: str, value: Any) -> str:
    if not isinstance(value, str) or not AGENT_ID.match(value):
        raise AgentDefinitionError(
            f"agent id must match {AGENT_ID.pattern}, not {shown(value)}", field=key
        )
    return value


def _int_at_least(minimum: int) -> Check:
    def check(key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise AgentDefinitionError(
                f"{key} must be an int >= {minimum}, not {shown(value)}", field=key
            )
        return value

    return check


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise AgentDefinitionError(f"{key} must be a bool, not {shown(value)}", field=key)
    return value


def _one_of(*choices: str) -> Check:
    spelled = f"{', '.join(choices[:-1])} or {choices[-1]}"

    def check(key: str, value: Any) -> str:
        if value not in choices:
            raise AgentDefinitionError(f"{key} must be {spelled}, not {shown(value)}", field=key)
        return str(value)

    return check


def _seconds(key: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise AgentDefinitionError(
            f"{key} must be a finite number of seconds > 0, not {shown(value)}", field=key
        )
    return float(value)


def _seconds_or_none(key: str, value: Any) -> float | None:
    return None if value is None else _seconds(key, value)


def _time(key: str, value: Any) -> TimeConfig | None:
    if value is not None and not isinstance(value, TimeConfig):
        raise AgentDefinitionError(f"{key} must be a TimeConfig, not {shown(value)}", field=key)
    return value


def _keep_last(key: str, value: Any) -> Any:
    validate_keep_last_tool_results(value)
    # Kept as given: the value is part of the fingerprint.
    return value


def _findings(key: str, value: Any) -> FindingsConfig | None:
    return None if value is None else validate_findings_config(value)


def _params(key: str, value: Any) -> ModelParams:
    return value or ModelParams()


def _retry(key: str, value: Any) -> RetryPolicy:
    return value or RetryPolicy()


def _pricing(key: str, value: Any) -> dict[str, Price]:
    return check_pricing(value if value is not None else {})


def _budgets(key: str, value: Any) -> tuple[Budget, ...]:
    return check_budgets(value)


def _permissions(key: str, value: Any) -> Permissions | None:
    return Permissions(value) if value is not None else None


def _schedules(key: str, value: Any) -> tuple[Schedule, ...]:
    return check_declared_schedules(key, value)


def _servers(key: str, value: Any) -> tuple[McpServer, ...]:
    return checked_servers(value)


class AgentConfig(ConfigStruct):
    """One standing agent as a config file declares it, and every option of ``afp.Agent``:
    the declaration (docs/config.md#one-declaration). The order is the key table's."""

    id: Annotated[
        str, Option(doc="`^[a-z0-9][a-z0-9._-]{0,63}$`", check=_agent_id, keyword="agent_id")
    ]
    model: Annotated[ModelConfig, Option(doc="the model table (below)")]
    system_prompt: Annotated[str, Option(doc="the agent's instructions")] = ""
    tools: Annotated[
        list[ToolConfig], Option(doc="`[[agents.tools]]` entries (below)", default=())
    ] = msgspec.field(default_factory=list)
    max_iterations: Annotated[
        int,
        Option(doc="model calls of a turn that may still lead to tools", check=_int_at_least(1)),
    ] = 10
    wrap_up: Annotated[
        bool,
        Option(
            doc="when the budget runs out with calls pending, one more call with tools withheld",
            check=_bool,
        ),
    ] = True
    durability: Annotated[
        Durability | None,
        Option(
            doc="`sync`, `iteration` or `turn`",
            see="docs/loop.md#durability-modes",
            check=_one_of("sync", "iteration", "turn"),
            shown='the host\'s, else `"sync"`',
            default="sync",
        ),
    ] = None
    max_concurrent_tools: Annotated[
        int, Option(doc="parallel-safe calls running at once", check=_int_at_least(1))
    ] = 4
    max_recoveries: Annotated[
        int,
        Option(
            doc="recovery runs of one turn before it is held as a crash loop",
            check=_int_at_least(0),
        ),
    ] = 3
    params: Annotated[
        ModelParams,
        Option(
            doc="sampling: `temperature`, `topP`, `maxTokens`, `stop`, `toolChoice`, "
            "`reasoningBudget`",
            check=_params,
            shown="none",
            default=None,
        ),
    ] = msgspec.field(default_factory=ModelParams)
    retry: Annotated[
        RetryPolicy,
        Option(
            doc="`maxAttempts` (5), `baseS` (1), `capS` (30), `retryAfterCapS` (300)",
            check=_retry,
            shown="",
            default=None,
        ),
    ] = msgspec.field(default_factory=RetryPolicy)
    window: Annotated[WindowConfig | None, Option(doc="the window table (below)")] = None
    keep_last_tool_results: Annotated[
        int | bool,
        Option(doc="the last-tool-result pin's ceiling, or `false`", check=_keep_last),
    ] = 2
    pricing: Annotated[
        dict[str, Price] | None,
        Option(
            doc="prices per token by model id: `input`, `output`, `cacheRead`, `cacheWrite`",
            see="docs/cost.md#prices",
            check=_pricing,
            shown="the file's `[pricing]`",
        ),
    ] = None
    permissions: Annotated[
        list[Rule] | None,
        Option(
            doc="the permission rule table: `{tool, decision, args?, name?, reason?}` entries",
            see="docs/permissions.md",
            check=_permissions,
        ),
    ] = None
    output: Annotated[
        dict[str, Any] | None,
        Option(doc="the typed final answer's JSON schema", see="docs/loop.md#typed-answers"),
    ] = None
    output_retries: Annotated[int, Option(doc="retries of an answer the output schema refuses")] = 2
    budgets: Annotated[
        list[Budget],
        Option(
            doc='`{limit, per = "turn"\\|"day", action = "warn"\\|"halt"}` entries',
            see="docs/cost.md#budgets",
            check=_budgets,
            default=(),
        ),
    ] = msgspec.field(default_factory=list)
    repeated_call_note: Annotated[
        bool,
        Option(
            doc="a result a call (same tool, same arguments) returns again in a turn carries a "
            "note saying so",
            see="docs/loop.md#repeated-calls",
            check=_bool,
        ),
    ] = True
    findings: Annotated[
        FindingsConfig | None,
        Option(
            doc="arms the agent: `serve`, `keepLedgerFacts`, `answerAsk`",
            see="docs/findings.md",
            check=_findings,
        ),
    ] = None
    keep_ledger_facts: Annotated[
        int | bool | msgspec.UnsetType,
        Option(
            doc="the agent-level fact pin ceiling (the findings table's own value wins)",
            shown="",
        ),
    ] = msgspec.UNSET
    time: Annotated[
        dict[str, Any] | None,
        Option(
            doc="enables time windows: `zone`, `maxAnswerRepeats`, `policy`, `reader`",
            see="docs/time.md",
            check=_time,
        ),
    ] = None
    shared: Annotated[
        bool, Option(doc="any principal may post and answer (no owner check)", check=_bool)
    ] = False
    on_turn_failure: Annotated[
        Literal["hold", "skip"],
        Option(
            doc='`"skip"` dismisses a held turn at once so the queue moves on',
            check=_one_of("hold", "skip"),
        ),
    ] = "hold"
    max_stall_s: Annotated[
        float, Option(doc="how long a turn may stay stalled before it is held", check=_seconds)
    ] = 86_400.0
    pause_timeout_s: Annotated[
        float | None,
        Option(doc="abandon a paused turn's questions after this long", check=_seconds_or_none),
    ] = None
    mcp: Annotated[
        list[McpServer],
        Option(
            doc="`[[agents.mcp]]` servers the agent takes tools from (below)",
            check=_servers,
            default=(),
        ),
    ] = msgspec.field(default_factory=list)
    schedules: Annotated[
        list[dict[str, Any]],
        Option(
            doc="`[[agents.schedules]]` wake-ups: `{name, text, at\\|cron\\|every, zone, catchUp}`",
            see="docs/config.md#schedules",
            check=_schedules,
            default=(),
        ),
    ] = msgspec.field(default_factory=list)
    schedule_wakeup: Annotated[
        bool,
        Option(
            doc="offers the model the built-in `scheduleWakeup` tool: it may set its own "
            "once wake-ups",
            see="docs/schedules.md#the-schedulewakeup-tool",
            check=_bool,
        ),
    ] = False
    recall: Annotated[
        bool,
        Option(
            doc="offers the model the built-in `recall` tool: it may search the messages that "
            "left its window",
            see="docs/recall.md#the-recall-tool",
            check=_bool,
        ),
    ] = False


PYTHON_ONLY: Mapping[str, Any] = {"compaction": None, "extensions": ()}
"""``Agent(...)``'s keywords no file can set, with their defaults: ``compaction`` (the file's
``window`` covers it) and ``extensions`` (code)."""


class Declared(msgspec.Struct, frozen=True):
    """One option as declared: ``AgentConfig``'s field, read back."""

    name: str
    key: str
    keyword: str
    required: bool
    file_default: Any
    default: Any
    option: Option


@functools.cache
def declared() -> tuple[Declared, ...]:
    """Every option of the declaration, in its order."""
    return tuple(_read_declaration())


def _read_declaration() -> Iterator[Declared]:
    hints = get_type_hints(AgentConfig, include_extras=True)
    for field in msgspec.structs.fields(AgentConfig):
        option = next(a for a in get_args(hints[field.name])[1:] if isinstance(a, Option))
        required = field.required
        file_default = (
            field.default_factory()
            if field.default_factory is not msgspec.NODEFAULT
            else field.default
        )
        yield Declared(
            name=field.name,
            key=field.encode_name,
            keyword=option.keyword or field.name,
            required=required,
            file_default=None if required else file_default,
            default=file_default if option.default is SAME else option.default,
            option=option,
        )


def check_options(given: Mapping[str, Any]) -> dict[str, Any]:
    """The values an agent keeps, from ``Agent(...)``'s keyword arguments: each option checked
    by its declaration, in the declaration's order, then the checks that span options.

    Raises:
        AgentDefinitionError: an option is invalid; the error names it (wire key).
        ConfigError: a window or findings setting is invalid (WindowConfigError,
            FindingsConfigError).
    """
    kept: dict[str, Any] = {}
    for option in declared():
        value = given[option.keyword]
        check = option.option.check
        kept[option.keyword] = check(option.key, value) if check is not None else value
    return _across(given, kept)


def _across(given: Mapping[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    """The checks that span options, and the values derived from several."""
    if kept["budgets"] and not kept["pricing"]:
        raise AgentDefinitionError(
            "budgets need pricing: without prices every call's cost is unknown, so no "
            "budget could ever be reached",
            field="budgets",
        )
    output, retries = kept.pop("output"), kept.pop("output_retries")
    kept["output"] = OutputSpec(output, retries) if output is not None else None
    window, compaction = kept["window"], given["compaction"]
    if window is not None and compaction is not None:
        raise AgentDefinitionError(
            f"a window strategy is already set by window= ({window.name!r}); "
            "compaction= would set a second one",
            field="compaction",
        )
    strategy = kept["window"] = window if window is not None else compaction
    if strategy is not None:
        model = given["model"]
        validate_strategy(strategy, agent_model_port=model, agent_model=model.model)
    findings: FindingsConfig | None = kept["findings"]
    fact_limit = resolve_fact_limit(
        findings.keep_ledger_facts if findings is not None else msgspec.UNSET,
        kept.pop("keep_ledger_facts"),
    )
    # The fact pin applies only to an armed agent with a window strategy
    # (docs/findings.md#the-keep-ledger-facts-dial).
    kept["fact_limit"] = fact_limit if findings is not None and strategy is not None else 0
    # The built-in tools switched on join the agent's own; a tool of such a name is a clash.
    built_in = {"schedule_wakeup": WAKEUP_ENTRY, "recall": RECALL_ENTRY}
    kept["tools"] = (*kept["tools"], *(t for key, t in built_in.items() if kept.pop(key)))
    names: set[str] = set()
    for tool in kept["tools"]:
        if tool.name in names:
            raise AgentDefinitionError(
                f"two tools are named {tool.name!r}; tool names must be unique",
                field="tools",
                agent_id=kept["agent_id"],
            )
        names.add(tool.name)
    time, gate = kept["time"], kept.pop("permissions")
    # The agent's extensions, in the order their hooks are called (docs/loop.md#extensions).
    kept["extensions"] = (
        *([TimeExtension(time)] if time is not None else []),
        *([FindingsExtension(findings)] if findings is not None else []),
        *([PermissionsExtension(gate)] if gate is not None else []),
        *([WakeupExtension(time.zone if time else None)] if WAKEUP_ENTRY in kept["tools"] else []),
        *([RecallExtension(time.zone if time else None)] if RECALL_ENTRY in kept["tools"] else []),
        *given["extensions"],
    )
    return kept


def keys_table() -> str:
    """docs/config.md's table of agent keys, from the declaration (``scripts/config_table.py``
    writes it there; a test holds the two equal)."""
    rows = ["| key | default | meaning |", "| --- | --- | --- |"]
    rows += [f"| `{o.key}` | {_shown_default(o)} | {_meaning(o.option)} |" for o in declared()]
    return "\n".join(rows) + "\n"


def _meaning(option: Option) -> str:
    if option.see is None:
        return option.doc
    # A page of docs/ with its anchor, linked from the key table beside it: [page](page#anchor).
    target = option.see.removeprefix("docs/")
    return f"{option.doc} ([{target.partition('#')[0]}]({target}))"


def _shown_default(option: Declared) -> str:
    value = option.file_default
    if option.option.shown is not None:
        return option.option.shown
    if option.required:
        return "required"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, int | float):
        return f"{value:g}"
    if value == []:
        return "`[]`"
    raise TypeError(f"option {option.key} needs Option.shown: no spelling for {value!r}")
