"""Agents files (docs/host.md#running-a-host): camelCase keys, the ``[host]`` table, unknown keys
refused."""

from __future__ import annotations

import pytest

from afp_runtime.agents import build_definition, load_config
from afp_runtime.errors import ConfigError

AGENTS = """
[host]
maxActiveTurns = 3
shutdownGraceS = 5
leaseTtlS = 12
hostId = "box-1"
durability = "iteration"

[[agents]]
id = "ops"
model = {provider = "scripted", model = "demo", script = "afp_runtime.demo:demo_script"}
onTurnFailure = "skip"
shared = true
maxStallS = 600
pauseTimeoutS = 3600

[[agents]]
id = "billing"
durability = "sync"
model = {provider = "scripted", model = "demo", script = "afp_runtime.demo:demo_script"}
"""


def test_the_host_table_and_the_host_wide_durability_default() -> None:
    config = load_config("agents.toml", AGENTS)
    host = config.host
    assert (host.max_active_turns, host.shutdown_grace_s, host.lease_ttl_s) == (3, 5.0, 12.0)
    assert host.host_id == "box-1"
    ops, billing = (
        build_definition(agent, durability=host.durability or "sync") for agent in config.agents
    )
    assert ops.durability == "iteration"  # the host's default
    assert billing.durability == "sync"  # its own setting wins
    assert (ops.on_turn_failure, ops.shared, ops.max_stall_s, ops.pause_timeout_s) == (
        "skip",
        True,
        600.0,
        3600.0,
    )


def test_a_file_without_a_host_table_gets_the_defaults() -> None:
    config = load_config("a.toml", AGENTS.split("[[agents]]", 1)[1].join(["[[agents]]", ""]))
    assert config.host.max_active_turns == 8 and config.host.durability is None
    assert build_definition(config.agents[0]).durability == "sync"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (AGENTS.replace("maxActiveTurns", "max_active_turns"), "max_active_turns"),
        (AGENTS.replace('onTurnFailure = "skip"', 'onTurnFailure = "retry"'), "onTurnFailure"),
    ],
)
def test_unknown_keys_and_bad_values_are_refused(text: str, named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_definition(load_config("a.toml", text).agents[0])
    assert named in str(caught.value)


def test_repeated_call_note_is_on_unless_the_file_turns_it_off() -> None:
    """``repeatedCallNote = false`` reaches the agent; without the key the note is on."""
    config = load_config("a.toml", AGENTS)
    assert build_definition(config.agents[0]).repeated_call_note is True
    off = AGENTS.replace('id = "ops"', 'id = "ops"\nrepeatedCallNote = false', 1)
    assert build_definition(load_config("a.toml", off).agents[0]).repeated_call_note is False
