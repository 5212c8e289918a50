"""Finding an agent's n-th call among its runs (docs/served.md#the-agent-wide-call-number): the
right run and epoch for every number, none for a number no run made, and about log2 of the
runs' logs read, whatever runs without a call lie between."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.records import RunLog
from afp_runtime.served import find_agent_call

from ._log import RunSim, TestEncoder, answer, call, tool


def _runs(calls_per_run: list[int]) -> dict[str, RunLog]:
    """Runs in start order, the i-th making ``calls_per_run[i]`` model calls."""
    logs: dict[str, RunLog] = {}
    made = 0
    for index, count in enumerate(calls_per_run):
        run = RunSim(
            f"run-{index}", agent_call=made, tools=[tool("alpha_tool")], encoder=TestEncoder()
        )
        if count:
            run.run([call(f"c{i}", "alpha_tool") for i in range(count - 1)] + [answer("done")])
        else:
            run.seed()
        logs[run.run_id] = run.log
        made += count
    return logs


class _Reader:
    """A store's ``read_run`` over in-memory logs, counting the logs it reads."""

    def __init__(self, logs: dict[str, RunLog]) -> None:
        self.logs = logs
        self.reads = 0

    async def __call__(self, run_id: str, read: Callable[[RunLog], Any]) -> Any:
        self.reads += 1
        return read(self.logs[run_id])


def _find(logs: dict[str, RunLog], n: int) -> tuple[tuple[int, int] | None, int]:
    reader = _Reader(logs)

    async def main() -> tuple[int, int] | None:
        found = await find_agent_call(list(logs), n, reader)
        return None if found is None else (found[0], found[1])

    return anyio.run(main), reader.reads


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), max_size=24))
def test_every_call_is_found_in_its_run_and_no_other_number_is(counts: list[int]) -> None:
    """Call k sits in the run that made it, at its epoch; 0 and one past the last are found
    nowhere."""
    logs = _runs(counts)
    expected: dict[int, tuple[int, int]] = {}
    for index, count in enumerate(counts):
        for epoch in range(1, count + 1):
            expected[len(expected) + 1] = (index, epoch)
    for n, where in expected.items():
        assert _find(logs, n)[0] == where
    assert _find(logs, 0)[0] is None
    assert _find(logs, len(expected) + 1)[0] is None


def test_a_long_life_is_searched_in_about_log2_of_its_runs() -> None:
    """Among 200 runs of one call each, any call, or one past the last, is found after at most
    ⌈log2 201⌉ = 8 log reads, where a scan of the runs would read up to 200."""
    logs = _runs([1] * 200)
    bound = math.ceil(math.log2(201))
    for n in (1, 2, 57, 100, 199, 200, 201):
        found, reads = _find(logs, n)
        assert reads <= bound
        assert found == ((n - 1, 1) if n <= 200 else None)
