"""The agent options are declared once (docs/config.md#one-declaration): the key table of
docs/config.md, ``afp.Agent``'s signature and the attributes the loop reads are held to the
declaration, and ``scripts/config_table.py`` rewrites the table from it."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any, get_type_hints

import msgspec
import pytest

from afp_runtime.agents import Agent
from afp_runtime.agents.config import build_definition, load_config
from afp_runtime.agents.options import PYTHON_ONLY, AgentConfig, declared, keys_table
from afp_runtime.cost import Budget, Price
from afp_runtime.errors import AgentDefinitionError
from afp_runtime.loop import Definition
from afp_runtime.models import ScriptedModel

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs/config.md"
SCRIPT = REPO / "scripts" / "config_table.py"

# Options the agent keeps as a value derived from several, under another name: the loop reads
# ``output`` (with its retries), ``fact_limit`` and ``extensions``; ``tools`` and ``mcp`` are
# read through the ``tools`` property.
DERIVED = {"output_retries", "keep_ledger_facts", "permissions", "findings", "time", "mcp"}
# Kept by the agent for the host and the embedded store, never read by the loop.
DERIVED |= {"schedules"}
# Becomes a tool and an extension (docs/schedules.md#the-schedulewakeup-tool).
DERIVED |= {"schedule_wakeup"}
# Becomes a tool and an extension (docs/recall.md#the-recall-tool).
DERIVED |= {"recall"}
# What the loop reads that is not a plain value of options (adapters, state of the definition).
NOT_VALUES = {"model", "extensions", "warned", "resources", "output"}


def model() -> ScriptedModel:
    return ScriptedModel([], model="main")


def test_the_key_table_of_the_page_is_the_declaration() -> None:
    """docs/config.md's agent key table is the one the declaration makes, row for row."""
    text = PAGE.read_text(encoding="utf-8")
    table = text.split("## Agent keys\n", 1)[1].lstrip("\n").split("\n\n", 1)[0] + "\n"
    assert table == keys_table()
    assert [row.split("`")[1] for row in table.splitlines()[2:]] == [
        option.key for option in declared()
    ]


def test_the_keys_are_those_a_file_may_set() -> None:
    """The table's keys are the TOML schema's: every key of an agent table, camelCase."""
    schema = msgspec.json.schema(AgentConfig)
    properties = schema["$defs"]["AgentConfig"]["properties"]
    assert list(properties) == [option.key for option in declared()]
    assert "maxIterations" in properties and "max_iterations" not in properties


def test_the_signature_of_agent_is_the_declaration() -> None:
    """``Agent(...)`` has one keyword per option (its default the declaration's) plus the
    keywords only code can set, and nothing else."""
    parameters = dict(inspect.signature(Agent.__init__).parameters)
    del parameters["self"]
    signature = {name: p.default for name, p in parameters.items()}
    wanted = {
        option.keyword: inspect.Parameter.empty if option.required else option.default
        for option in declared()
    }
    assert signature == {**wanted, **PYTHON_ONLY}
    assert list(parameters)[:2] == ["agent_id", "model"]
    assert all(p.kind is p.KEYWORD_ONLY for p in list(parameters.values())[2:])


def test_every_value_the_loop_reads_is_kept_by_the_agent() -> None:
    """Each attribute of ``Definition`` is set on a built agent, and each option is either one
    of them by its keyword or one of the named derived ones."""
    hints = get_type_hints(Definition)
    agent = Agent("ops", model())
    assert [name for name in hints if not hasattr(agent, name)] == []
    keywords = {option.keyword for option in declared()}
    assert sorted(keywords - set(hints) - {"tools"}) == sorted(DERIVED)
    assert agent.durability == "sync" and agent.max_stall_s == 86_400.0
    assert agent.budgets == () and dict(agent.pricing) == {} and agent.output is None


@pytest.mark.parametrize(
    ("given", "message", "field"),
    [
        ({"agent_id": "Ops"}, "agent id must match ^[a-z0-9][a-z0-9._-]{0,63}$, not 'Ops'", "id"),
        ({"max_iterations": 0}, "maxIterations must be an int >= 1, not 0", "maxIterations"),
        ({"max_recoveries": True}, "maxRecoveries must be an int >= 0, not True", "maxRecoveries"),
        ({"wrap_up": 1}, "wrapUp must be a bool, not 1", "wrapUp"),
        (
            {"durability": "never"},
            "durability must be sync, iteration or turn, not 'never'",
            "durability",
        ),
        (
            {"on_turn_failure": "drop"},
            "onTurnFailure must be hold or skip, not 'drop'",
            "onTurnFailure",
        ),
        (
            {"pause_timeout_s": float("inf")},
            "pauseTimeoutS must be a finite number of seconds > 0, not inf",
            "pauseTimeoutS",
        ),
        ({"time": {"zone": "UTC"}}, "time must be a TimeConfig, not {'zone': 'UTC'}", "time"),
        (
            {"budgets": [Budget(limit=1.0, per="turn")]},
            "budgets need pricing: without prices every call's cost is unknown, so no budget "
            "could ever be reached",
            "budgets",
        ),
    ],
)
def test_agent_refuses_a_bad_option_naming_its_key(
    given: dict[str, Any], message: str, field: str
) -> None:
    """Each option's check refuses as ``Agent`` always has: same message, same field."""
    arguments: dict[str, Any] = {"agent_id": "ops", "model": model(), **given}
    with pytest.raises(AgentDefinitionError) as caught:
        Agent(**arguments)
    assert caught.value.message == message
    assert caught.value.context["field"] == field


def test_a_file_is_checked_by_the_same_declaration(tmp_path: Path) -> None:
    """A file's value is checked by the option's check, its key path leading the message."""
    text = '[[agents]]\nid = "ops"\nmaxStallS = -1\nmodel = {provider = "scripted", model = "m"}\n'
    config = load_config(tmp_path / "agents.toml", text)
    with pytest.raises(AgentDefinitionError) as caught:
        build_definition(config.agents[0], model=model())
    assert caught.value.message == (
        "agents[0].maxStallS: maxStallS must be a finite number of seconds > 0, not -1.0"
    )


def test_a_file_and_python_build_the_same_agent(tmp_path: Path) -> None:
    """Every option a file sets reaches the agent as the Python keyword would set it."""
    text = (
        '[[agents]]\nid = "ops"\nmaxIterations = 3\nwrapUp = false\nshared = true\n'
        'onTurnFailure = "skip"\nmaxStallS = 60\npauseTimeoutS = 5\noutputRetries = 1\n'
        'model = {provider = "scripted", model = "m"}\n'
        "[agents.pricing.m]\ninput = 1.0\noutput = 2.0\n"
    )
    config = load_config(tmp_path / "agents.toml", text)
    built = build_definition(config.agents[0], model=model())
    written = Agent(
        "ops",
        model(),
        max_iterations=3,
        wrap_up=False,
        shared=True,
        on_turn_failure="skip",
        max_stall_s=60,
        pause_timeout_s=5,
        output_retries=1,
        pricing={"m": Price(input=1.0, output=2.0)},
    )
    values = [name for name in get_type_hints(Definition) if name not in NOT_VALUES]
    assert {name: getattr(built, name) for name in values} == {
        name: getattr(written, name) for name in values
    }
    assert (built.max_stall_s, built.pause_timeout_s, built.shared) == (60.0, 5.0, True)
    assert built.fingerprint() == written.fingerprint()


def test_the_script_rewrites_the_table(tmp_path: Path) -> None:
    """``scripts/config_table.py PATH`` puts the declaration's table back into a page whose
    table drifted, and leaves the rest of the page as it was."""
    text = PAGE.read_text(encoding="utf-8")
    drifted = text.replace("| `maxIterations` | 10 |", "| `maxIterations` | 12 |")
    drifted = drifted.replace("| `mcp` | `[]` |", "| `mcpServers` | `[]` |")
    assert drifted != text
    page = tmp_path / "agent-keys.txt"
    page.write_text(drifted, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(page)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert page.read_text(encoding="utf-8") == text
    assert "rewritten" in done.stdout
