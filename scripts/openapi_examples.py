"""Capture the OpenAPI document's answer examples from a real ``afp serve``.

    .venv/bin/python scripts/openapi_examples.py

Serves the demo agent (configs/demo.toml) on a fresh store in a temporary directory, sends it
six messages (its window folds), then asks every read operation of the document once and
writes each answer, lists cut to their first item and long texts shortened, to
``afp_runtime/api/openapi_examples.json``. Run it when an answer's shape changes:
``tests/api/test_openapi.py`` fails while an example no longer decodes as its operation's type.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "afp_runtime" / "api" / "openapi_examples.json"
TEXT_LIMIT = 160
# Query parameters an operation needs to answer at all (a search's words).
QUERIES = {"getAgentsAgentIdRecall": {"q": "order 1042"}}

sys.path.insert(0, str(REPO))
from afp_runtime.api._operations import OPERATIONS  # noqa: E402


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _trimmed(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _trimmed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_trimmed(item) for item in value[:1]]
    if isinstance(value, str) and len(value) > TEXT_LIMIT:
        return value[:TEXT_LIMIT] + "…"
    return value


def _settle(client: httpx.Client, message_id: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if client.get(f"/v1/agents/demo/inbox/{message_id}").json()["status"] == "answered":
            return
        time.sleep(0.05)
    raise SystemExit(f"message {message_id} was not answered within 60 s")


def _ids(client: httpx.Client) -> dict[str, str]:
    runs = client.get("/v1/agents/demo/runs").json()["items"]
    folded = client.get("/v1/agents/demo/folded").json()["items"]
    return {
        "agentId": "demo",
        "runId": runs[-1]["runId"],
        "messageId": runs[-1]["messageId"],
        "epoch": "1",
        "n": "1",
        "summaryFingerprint": folded[0]["summaryFingerprint"],
    }


def capture(base: str) -> dict[str, Any]:
    examples: dict[str, Any] = {}
    with httpx.Client(base_url=base, timeout=30) as client:
        for number in range(6):
            posted = client.post(
                "/v1/agents/demo/inbox", json={"text": f"Where is order {1042 + number}?"}
            )
            _settle(client, posted.json()["messageId"])
        ids = _ids(client)
        for op in OPERATIONS:
            if op.method != "GET" or op.stream:
                continue
            # A diff needs a call before call n: the second against the first.
            names = {**ids, "n": "2"} if op.path.endswith("/diff") else ids
            path = re.sub(
                r"\{(\w+)\}", lambda m, names=names: names.get(m.group(1), m.group(0)), op.path
            )
            if "{" in path:
                continue
            answer = client.get(path, params=QUERIES.get(op.operation_id))
            if answer.status_code == 200 and answer.json().get("items") != []:
                examples[op.operation_id] = _trimmed(answer.json())
    return examples


def main() -> None:
    port = _port()
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "afp_runtime.cli",
                "serve",
                "--agents",
                str(REPO / "configs" / "demo.toml"),
                "--db",
                str(Path(folder) / "afp.db"),
                "--port",
                str(port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{base}/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                time.sleep(0.1)
            examples = capture(base)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    OUT.write_text(
        json.dumps(examples, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )
    print(json.dumps({"written": str(OUT.relative_to(REPO)), "operations": sorted(examples)}))


if __name__ == "__main__":
    main()
