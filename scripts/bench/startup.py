"""Start-up cost: how long a fresh interpreter takes to import the package, to reach the names a
program uses, to print ``afp --help`` and to run a read command (``afp runs``) on a small store
(one demo conversation), next to ``python -c pass``.

    .venv/bin/python scripts/bench/startup.py [--runs 5]

Prints one JSON object: the median of ``--runs`` runs of each command, in milliseconds, and each
one's ratio to the bare interpreter.
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "pass": [sys.executable, "-c", "pass"],
    "importAfpRuntime": [sys.executable, "-c", "import afp_runtime"],
    "agentToolOpen": [
        sys.executable,
        "-c",
        "import afp_runtime as afp; afp.Agent, afp.tool, afp.open, afp.ScriptedModel",
    ],
    "afpHelp": [sys.executable, "-m", "afp_runtime.cli", "--help"],
    "afpRuns": [sys.executable, "-m", "afp_runtime.cli", "runs", "--db", "{db}"],
}


def median_ms(command: list[str], runs: int) -> float:
    times = []
    subprocess.run(command, check=True, capture_output=True)  # warm the file cache once
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    # An installed package has its bytecode compiled (pip does it); a source tree may not, and
    # PYTHONDONTWRITEBYTECODE would then recompile every module at every start.
    compileall.compile_dir(str(Path(__file__).resolve().parents[2] / "afp_runtime"), quiet=1)
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "afp.db")
        demo = Path(__file__).resolve().parents[2] / "configs" / "demo.toml"
        subprocess.run(
            [sys.executable, "-m", "afp_runtime.cli", "demo", "--db", db, "--config", str(demo)],
            check=True,
            capture_output=True,
        )
        medians = {
            name: median_ms([part.format(db=db) for part in command], args.runs)
            for name, command in COMMANDS.items()
        }
    bare = medians["pass"]
    figures = {
        "runs": args.runs,
        "medianMs": medians,
        "overPass": {name: round(ms / bare, 2) for name, ms in medians.items() if name != "pass"},
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
