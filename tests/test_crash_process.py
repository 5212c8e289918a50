"""A real process killed with SIGKILL mid-run, then restarted: nothing committed is lost."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "configs" / "demo.toml"


def afp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def bundle_count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM bundles").fetchone()[0])
    except sqlite3.Error:
        return 0  # not created yet


def kill_after_bundles(db: Path, threshold: int, *args: str) -> bool:
    """Start the demo, SIGKILL it once ``threshold`` bundles are committed; False if it ended."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if bundle_count(db) >= threshold:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
                return True
            time.sleep(0.002)
        return False
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_sigkill_mid_run_then_restart_continues(tmp_path: Path) -> None:
    """Three SIGKILLs mid-run leave a clean file; restarts answer every message exactly once."""
    db = tmp_path / "afp.db"
    rng = random.Random(20261129)
    turns = 30
    demo = ("demo", "--db", str(db), "--config", str(CONFIG))
    kills = 0
    threshold = 0
    first = True
    while kills < 3:
        threshold += rng.randint(5, 40)
        args = (*demo, "--turns", str(turns if first else 0))
        if not kill_after_bundles(db, threshold, *args):
            break
        first = False
        kills += 1
        doctor = afp("doctor", "--db", str(db), "--json")
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        assert json.loads(doctor.stdout)["integrity"] == ["ok"]
    assert kills == 3, "the demo finished before it could be killed three times"

    finished = afp(*demo, "--turns", "0")
    assert finished.returncode == 0, finished.stderr
    inbox = json.loads(afp("inbox", "demo", "--db", str(db), "--json").stdout)["items"]
    assert len(inbox) == turns
    assert all(row["status"] == "answered" for row in inbox)
    runs = json.loads(afp("runs", "demo", "--db", str(db), "--json").stdout)["items"]
    recoveries = [r for r in runs if r["kind"] == "recovery"]
    assert recoveries and all(r["recoveredFrom"] for r in recoveries)
    answered_turns = sorted(r["turn"] for r in runs if r["status"] == "answered")
    assert answered_turns == list(range(1, turns + 1))  # each turn answered exactly once
    agents = json.loads(afp("agents", "--db", str(db), "--json").stdout)
    assert agents[0]["turn"] == turns and agents[0]["status"] == "idle"
    # Each person message is in the conversation exactly once: in the live history or among
    # the originals of a fold (the demo folds its oldest turns).
    checkpoint = json.loads(afp("checkpoint", "demo", "--db", str(db)).stdout)
    messages = checkpoint["history"] + [
        m for span in checkpoint.get("folded", []) for m in span.get("messages", [])
    ]
    asks = [m["content"] for m in messages if m["role"] == "user" and m["content"][:1] != "["]
    answers = [m for m in messages if m["role"] == "assistant" and not m.get("toolCalls")]
    assert len(asks) == turns and len(answers) == turns
    print(f"kills={kills} runs={len(runs)} recoveries={len(recoveries)}")
