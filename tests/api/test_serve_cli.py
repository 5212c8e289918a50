"""``afp serve`` as a real process: binding refusals, the token, a message answered over HTTP,
and a clean exit on SIGTERM (docs/api.md#server-rules, docs/api.md#the-afp-command, case 30)."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .conftest import BUSY, TOKEN, free_port

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "configs" / "demo.toml"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("AFP_API_TOKEN", None)
    return env


def afp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env or _env(),
        cwd=REPO,
    )


def test_case_30_serving_a_public_address_without_a_token_exits_2(tmp_path: Path) -> None:
    """Case 30: `afp serve --host 0.0.0.0` without a token refuses to start, exit 2, naming
    api.token, and creates no database."""
    db = tmp_path / "afp.db"
    done = afp("serve", "--agents", str(DEMO), "--db", str(db), "--host", "0.0.0.0")
    assert done.returncode == 2, done.stderr
    assert "api.token" in done.stderr
    assert not db.exists()


def test_a_short_token_is_refused(tmp_path: Path) -> None:
    """A token under 32 characters (from the environment) is refused with exit 2."""
    env = {**_env(), "AFP_API_TOKEN": "too-short"}
    done = afp("serve", "--agents", str(DEMO), "--db", str(tmp_path / "afp.db"), env=env)
    assert done.returncode == 2 and "api.token" in done.stderr


def test_serve_answers_over_http_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """`afp serve` with a token file serves health openly, refuses requests without the token,
    answers a posted message, takes its lease id from --host-id, and exits 0 on SIGTERM."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    port = free_port()
    args = ["--agents", str(DEMO), "--db", str(tmp_path / "afp.db"), "--port", str(port)]
    args += ["--host-id", "host-b"]
    process = subprocess.Popen(
        [sys.executable, "-m", "afp_runtime.cli", "serve", *args, "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=REPO,
    )
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, process.communicate()[1]
                try:
                    if client.get("/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.05)
            with sqlite3.connect(tmp_path / "afp.db") as conn:
                leases = conn.execute("SELECT host_id FROM host_leases").fetchall()
            assert leases == [("host-b",)]
            assert client.get("/v1/agents").status_code == 401
            agents = client.get("/v1/agents", headers=auth).json()["items"]
            assert [a["agentId"] for a in agents] == ["demo"]
            posted = client.post(
                "/v1/agents/demo/inbox", json={"text": "Where is order 1042?"}, headers=auth
            )
            assert posted.status_code == 202
            path = f"/v1/agents/demo/inbox/{posted.json()['messageId']}"
            while (one := client.get(path, headers=auth).json())["status"] in BUSY:
                assert time.monotonic() < deadline + 30, one
                time.sleep(0.05)
            assert one["status"] == "answered" and "1042" in one["answer"]
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert f"127.0.0.1:{port}" in stderr


def test_a_client_leaving_mid_replay_is_logged_once(tmp_path: Path) -> None:
    """A client that resumes a busy stream and goes away mid-replay stops the stream: one log
    line says so, and the server does not write on to the dead socket (no repeated
    ``socket.send() raised exception.``)."""
    port = free_port()
    log_path = tmp_path / "serve.log"
    args = ["--agents", str(DEMO), "--db", str(tmp_path / "afp.db"), "--port", str(port)]
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "afp_runtime.cli", "-v", "serve", *args],
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
            env=_env(),
            cwd=REPO,
        )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, log_path.read_text()
                try:
                    if client.get("/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline
                time.sleep(0.05)
            for n in range(25):  # about 30 events a turn: the ring holds hundreds
                assert client.post("/v1/agents/demo/inbox", json={"text": f"order {n}?"}).is_success
            while any(
                m["status"] in BUSY
                for m in client.get("/v1/agents/demo/inbox?limit=500").json()["items"]
            ):
                assert time.monotonic() < deadline + 60
                time.sleep(0.1)
            with client.stream("GET", "/v1/events", headers={"Last-Event-ID": "x-1"}) as first:
                boot = (
                    next(line for line in first.iter_lines() if line.startswith("id: "))
                    .removeprefix("id: ")
                    .rsplit("-", 1)[0]
                )
        with socket.create_connection(("127.0.0.1", port)) as raw:
            raw.sendall(
                f"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Last-Event-ID: {boot}-1\r\n\r\n".encode()
            )
            assert raw.recv(256)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        time.sleep(1.0)
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    text = log_path.read_text(encoding="utf-8")
    assert text.count("socket.send() raised exception") <= 1, text[-2000:]
    assert 1 <= text.count("event stream client went away") <= 2, text[-2000:]


def test_the_start_up_line_names_a_few_agents_and_counts_the_rest(tmp_path: Path) -> None:
    """With more than five agents the start-up line gives their count and the first five ids,
    not every id."""
    agents = tmp_path / "agents.toml"
    agents.write_text(
        "".join(
            f'[[agents]]\nid = "agent-{i:02d}"\n[agents.model]\nprovider = "scripted"\n'
            'model = "m"\nscript = "afp_runtime.demo:demo_script"\n'
            for i in range(12)
        ),
        encoding="utf-8",
    )
    args = ["--agents", str(agents), "--db", str(tmp_path / "afp.db"), "--port", "0"]
    process = subprocess.Popen(
        [sys.executable, "-m", "afp_runtime.cli", "serve", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=REPO,
    )
    try:
        assert process.stderr is not None
        # The line comes once the host runs; a process that fails ends its stderr instead.
        line = next((x for x in process.stderr if x.startswith("afp: serving")), "")
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "serving 12 agents (agent-00, agent-01, agent-02, agent-03, agent-04 and 7 more)" in line
    assert "agent-05" not in line


def _with_api_table(tmp_path: Path, table: str) -> Path:
    config = tmp_path / "agents.toml"
    config.write_text(DEMO.read_text(encoding="utf-8") + f"\n[api]\n{table}\n", encoding="utf-8")
    return config


def test_a_bad_api_limit_is_refused_naming_it(tmp_path: Path) -> None:
    """An ``[api]`` bound that is no positive number stops ``afp serve`` before it listens,
    exit 2, naming the key (docs/api.md#connection-limits)."""
    config = _with_api_table(tmp_path, "headerTimeoutS = 0")
    done = afp("serve", "--agents", str(config), "--db", str(tmp_path / "afp.db"))
    assert done.returncode == 2, done.stderr
    assert "api.headerTimeoutS" in done.stderr


def test_serve_closes_a_silent_connection_after_its_header_timeout(tmp_path: Path) -> None:
    """``afp serve`` takes its bounds from the ``[api]`` table: a connection that sends nothing
    is closed after ``headerTimeoutS``, while health is answered."""
    config = _with_api_table(tmp_path, "headerTimeoutS = 0.3")
    port = free_port()
    args = ["--agents", str(config), "--db", str(tmp_path / "afp.db"), "--port", str(port)]
    process = subprocess.Popen(
        [sys.executable, "-m", "afp_runtime.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=REPO,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, process.communicate()[1]
                try:
                    if client.get("/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.05)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as silent:
            # The server's default header timeout is 10 s: this read would time out first.
            silent.settimeout(5)
            assert silent.recv(1024) == b""
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr


def test_afp_token_add_and_serve_with_the_token_file_beside_the_store(tmp_path: Path) -> None:
    """`afp token add` prints a new token once and keeps its hash beside the --db file (a name
    twice is exit 2); `afp serve` on that store takes the file's principals: no token is 401,
    alice's token serves and may not name bob (403). A --tokens file that is missing is exit 2
    naming api.tokens."""
    db = tmp_path / "afp.db"
    added = afp("token", "add", "alice", "--db", str(db))
    again = afp("token", "add", "alice", "--db", str(db))
    missing = afp("serve", "--agents", str(DEMO), "--db", str(db), "--tokens", str(tmp_path / "x"))
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    stored = (tmp_path / "afp.db.tokens").read_text(encoding="utf-8")
    assert len(token) >= 43 and token not in stored and stored.startswith("alice user ")
    assert "afp.db.tokens" in added.stderr and token not in added.stderr
    assert again.returncode == 2 and "'alice' already" in again.stderr
    assert missing.returncode == 2 and "api.tokens" in missing.stderr
    port = free_port()
    args = ["--agents", str(DEMO), "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(
        [sys.executable, "-m", "afp_runtime.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=REPO,
    )
    auth = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, process.communicate()[1]
                try:
                    if client.get("/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.05)
            anonymous = client.get("/v1/agents")
            agents = client.get("/v1/agents", headers=auth)
            posing = client.post(
                "/v1/agents/demo/inbox", json={"text": "hi", "from": "bob"}, headers=auth
            )
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert anonymous.status_code == 401 and agents.status_code == 200
    assert posing.status_code == 403 and posing.json()["error"]["code"] == "not-your-principal"
    assert process.returncode == 0, stderr
