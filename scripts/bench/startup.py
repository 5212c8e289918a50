"""Start-up cost: how long a fresh interpreter takes to import the package, to reach the names a
program uses, and to start the ``afp`` command, next to ``python -c pass``.

    .venv/bin/python scripts/bench/startup.py [--runs 5]

Prints one JSON object: the median of ``--runs`` runs of each command, in milliseconds, and each
one's ratio to the bare interpreter.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "pass": [sys.executable, "-c", "pass"],
    "importAfpRuntime": [sys.executable, "-c", "import afp_runtime"],
    "agentToolOpen": [
        sys.executable,
        "-c",
        "import afp_runtime as afp; afp.Agent, afp.tool, afp.open, afp.ScriptedModel",
    ],
    "afpHelp": [sys.executable, "-m", "afp_runtime.cli", "--help"],
}


def median_ms(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    medians = {name: median_ms(command, args.runs) for name, command in COMMANDS.items()}
    bare = medians["pass"]
    figures = {
        "runs": args.runs,
        "medianMs": medians,
        "overPass": {name: round(ms / bare, 2) for name, ms in medians.items() if name != "pass"},
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
