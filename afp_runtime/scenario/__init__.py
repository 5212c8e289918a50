"""Scenarios: offline record/replay of a standing agent (docs/scenarios.md).

A scenario file scripts a conversation, the model's replies, the tools' results and a virtual
clock; ``run_scenario`` runs it on a real SQLite store and returns a deterministic result
(``encode_result`` gives the same bytes for the same file). ``afp scenario run FILE.json`` is
its command. An application-level package like ``cli``: it may import any layer, and no layer
imports it.
"""

from afp_runtime.scenario.format import (
    AGENT_ID,
    SCENARIO_FORMAT,
    Scenario,
    check_scenario,
    decode_scenario,
)
from afp_runtime.scenario.result import (
    RESULT_FORMAT,
    ModelCall,
    RunSummary,
    ScenarioResult,
    StepResult,
    SummarizerCall,
    ToolExecution,
    encode_result,
)
from afp_runtime.scenario.runner import run_scenario

__all__ = [
    "AGENT_ID",
    "ModelCall",
    "RESULT_FORMAT",
    "RunSummary",
    "SCENARIO_FORMAT",
    "Scenario",
    "ScenarioResult",
    "StepResult",
    "SummarizerCall",
    "ToolExecution",
    "check_scenario",
    "decode_scenario",
    "encode_result",
    "run_scenario",
]
