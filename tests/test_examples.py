"""The programs in ``examples/`` run as a user runs them: real processes on real files, the
scripted model, and for the OpenAI-compatible one a local server speaking that wire format."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def run_example(name: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_support_agent_answers_and_goes_on_next_time(tmp_path: Path) -> None:
    """Two answered messages per run; a second run continues the same conversation."""
    first = run_example("support_agent.py", cwd=tmp_path)
    assert first.count("answered: Here is what I found:") == 2
    assert '"order_id":"1042"' in first and "refunded within 30 days" in first
    second = run_example("support_agent.py", cwd=tmp_path)
    assert "4 runs on support.db" in second


class _OpenAIStandIn(BaseHTTPRequestHandler):
    """Chat completions as an OpenAI-compatible server sends them: a tool call for a person's
    message, an answer once a tool result came back."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.seen.append({"path": self.path, "auth": self.headers.get("authorization"), **body})
        last = body["messages"][-1]
        if last["role"] == "tool":
            message: dict[str, Any] = {"role": "assistant", "content": f"Found: {last['content']}"}
            finish = "stop"
        else:
            arguments = json.dumps({"order_id": "1042"})
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": arguments},
                    }
                ],
            }
            finish = "tool_calls"
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(name="openai_server")
def fixture_openai_server() -> Iterator[str]:
    """A local OpenAI-compatible server, its base URL."""
    _OpenAIStandIn.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAIStandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_openai_compatible_example_talks_the_wire_format(
    tmp_path: Path, openai_server: str
) -> None:
    """Endpoint, model and key variable come from the environment; the key is sent."""
    out = run_example(
        "openai_compatible.py",
        "openai.db",
        "Where is order 1042?",
        cwd=tmp_path,
        env={
            "AFP_BASE_URL": openai_server,
            "AFP_MODEL": "small-model",
            "AFP_API_KEY_ENV": "SHOP_KEY",
            "SHOP_KEY": "sk-test-123",
        },
    )
    assert out.startswith('answered: Found: {"order_id":"1042"')
    assert "tokens: 80 in, 16 out" in out
    seen = _OpenAIStandIn.seen
    assert [s["path"] for s in seen] == ["/v1/chat/completions"] * 2
    assert {s["model"] for s in seen} == {"small-model"}
    assert {s["auth"] for s in seen} == {"Bearer sk-test-123"}
    assert [t["function"]["name"] for t in seen[0]["tools"]] == ["lookup_order", "refund_window"]


def test_the_standing_host_serves_until_sigterm(tmp_path: Path) -> None:
    """The host answers a message posted over HTTP and exits 0 on SIGTERM."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "standing_host.py"), "host.db"],
        cwd=tmp_path,
        env={**os.environ, "AFP_PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, process.communicate()
                try:
                    if client.get("/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the host did not come up"
                time.sleep(0.05)
            posted = client.post("/v1/agents/support/inbox", json={"text": "Where is order 7?"})
            assert posted.status_code == 202, posted.text
            message = f"/v1/agents/support/inbox/{posted.json()['messageId']}"
            while client.get(message).json()["status"] != "answered":
                assert time.monotonic() < deadline, "the message was not answered"
                time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert "stopped cleanly" in stderr


def test_auditing_a_call_shows_the_view_its_verdicts_and_a_diff(tmp_path: Path) -> None:
    """The audit example finds call 3, verifies every epoch of its run, and diffs two."""
    out = run_example("audit_a_call.py", cwd=tmp_path)
    assert "call 3 is epoch 1 of run run-" in out
    assert "epoch 1: verified\nepoch 2: verified" in out
    assert "epoch 1 -> 2: 6 kept, 3 added:" in out


def test_a_fold_from_april_is_recovered_in_july(tmp_path: Path) -> None:
    """Three months on the virtual clock, a new process reads back what was folded."""
    out = run_example("recover_a_fold.py", cwd=tmp_path)
    assert "10 Jul: 1 folds" in out
    assert "user      'Reconcile March.'" in out
    assert "tool      'ledger page 1:" in out
