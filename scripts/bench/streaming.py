"""First-token latency through the HTTP API, against a local stand-in that streams like OpenAI.

A stand-in chat-completions server (in this process) answers every request with server-sent
events: after ``--first-ms`` it sends the reply's text in ``--fragments`` chunks ``--gap-ms``
apart, then the usage chunk and ``data: [DONE]``, noting when it wrote the first text chunk.
``afp serve`` runs in a process of its own with one agent on that server (``stream = true``,
SQLite). For each of ``--rounds`` messages this process subscribes to the agent's event stream
(``GET /v1/agents/{id}/events?types=model.``), posts the message and notes when the first
``model.delta`` frame with text arrives. The same stand-in is also read directly by a bare
httpx streaming client, which is the ceiling: what any client pays to see the first chunk.

Prints JSON: per path, p50/p99/max milliseconds from the stand-in writing its first text chunk
to the reader seeing it (``apiOverFirstChunkMs`` through afp's API, ``directMs`` the ceiling),
and from the post to the first fragment (``postToFirstFragmentMs``, which includes the agent's
turn start, the receipt's commit and ``--first-ms``).

    .venv/bin/python scripts/bench/streaming.py [--rounds 30] [--quick]

Both clocks are this process's ``time.perf_counter``: the stand-in and both readers run here.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import anyio
import httpx
import uvicorn
from _common import percentile

REPO = Path(__file__).resolve().parents[2]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
    choices = [] if usage is not None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body: dict[str, Any] = {"id": "chatcmpl-b", "object": "chat.completion.chunk"}
    body["choices"] = choices
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class StandIn:
    """An OpenAI-compatible chat-completions endpoint that streams a fixed reply slowly."""

    def __init__(self, first_s: float, gap_s: float, fragments: int) -> None:
        self.first_s, self.gap_s, self.fragments = first_s, gap_s, fragments
        self.first_sent: list[float] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send(
            {"type": "http.response.body", "body": chunk({"role": "assistant"}), "more_body": True}
        )
        await anyio.sleep(self.first_s)
        for index in range(self.fragments):
            if index == 0:
                self.first_sent.append(time.perf_counter())
            piece = chunk({"content": f"word{index} "})
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            await anyio.sleep(self.gap_s)
        tail = chunk({}, "stop") + chunk({}, usage={"prompt_tokens": 20, "completion_tokens": 9})
        await send({"type": "http.response.body", "body": tail + b"data: [DONE]\n\n"})


def agents_toml(base_url: str) -> str:
    return f"""
[[agents]]
id = "talker"
systemPrompt = "You answer briefly."
maxIterations = 2
durability = "sync"

[agents.model]
provider = "openai-compatible"
model = "stand-in"
baseUrl = "{base_url}"
stream = true
"""


async def direct(client: httpx.AsyncClient, url: str, stand_in: StandIn) -> float:
    """Milliseconds from the stand-in's first text chunk to a bare client reading it."""
    body = {"model": "stand-in", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    seen: float | None = None
    async with client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if seen is None and line.startswith("data: ") and '"content"' in line:
                seen = time.perf_counter()
    if seen is None:
        raise RuntimeError("the stand-in sent no text")
    return (seen - stand_in.first_sent[-1]) * 1000


async def through_api(
    client: httpx.AsyncClient, round_: int, stand_in: StandIn
) -> tuple[float, float]:
    """(first chunk → first model.delta frame, post → first frame) in milliseconds."""
    first: float | None = None
    posted = 0.0
    async with client.stream(
        "GET", "/v1/agents/talker/events", params={"types": "model.,turn."}
    ) as events:
        lines = events.aiter_lines()
        async for line in lines:
            if line.startswith(": open"):
                break
        posted = time.perf_counter()
        answer = await client.post(
            "/v1/agents/talker/inbox", json={"text": f"Say something, {round_}"}
        )
        answer.raise_for_status()
        async for line in lines:
            if (
                first is None
                and line.startswith("data: ")
                and '"model.delta"' in line
                and '"text"' in line
            ):
                first = time.perf_counter()
            if line.startswith("data: ") and '"turn.ended"' in line:
                break
    if first is None:
        raise RuntimeError("no model.delta reached the event stream")
    return (first - stand_in.first_sent[-1]) * 1000, (first - posted) * 1000


def figures(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 50), 2),
        "p99": round(percentile(values, 99), 2),
        "max": round(max(values), 2),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--first-ms", type=float, default=50.0)
    parser.add_argument("--gap-ms", type=float, default=10.0)
    parser.add_argument("--fragments", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="10 rounds")
    options = parser.parse_args()
    rounds = 10 if options.quick else options.rounds
    stand_in = StandIn(options.first_ms / 1000, options.gap_ms / 1000, options.fragments)
    model_port, api_port = free_port(), free_port()
    server = uvicorn.Server(
        uvicorn.Config(stand_in, host="127.0.0.1", port=model_port, log_level="warning")
    )
    with tempfile.TemporaryDirectory() as scratch:
        agents = Path(scratch) / "agents.toml"
        agents.write_text(agents_toml(f"http://127.0.0.1:{model_port}/v1"), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "AFP_API_TOKEN"}
        command = [sys.executable, "-m", "afp_runtime.cli", "serve", "--agents", str(agents)]
        command += ["--db", str(Path(scratch) / "afp.db"), "--port", str(api_port)]
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve)
            host = await anyio.open_process(command, cwd=REPO, env=env, stderr=subprocess.DEVNULL)
            try:
                api = httpx.AsyncClient(base_url=f"http://127.0.0.1:{api_port}", timeout=30)
                async with api, httpx.AsyncClient(timeout=30) as bare:
                    for _ in range(300):
                        try:
                            if (await api.get("/v1/health")).status_code == 200:
                                break
                        except httpx.TransportError:
                            pass
                        await anyio.sleep(0.1)
                    url = f"http://127.0.0.1:{model_port}/v1/chat/completions"
                    ceiling = [await direct(bare, url, stand_in) for _ in range(rounds)]
                    measured = [await through_api(api, n, stand_in) for n in range(rounds)]
            finally:
                host.terminate()
                await host.wait()
                server.should_exit = True
    print(
        json.dumps(
            {
                "rounds": rounds,
                "standIn": {
                    "firstMs": options.first_ms,
                    "gapMs": options.gap_ms,
                    "fragments": options.fragments,
                },
                "apiOverFirstChunkMs": figures([m[0] for m in measured]),
                "directMs": figures(ceiling),
                "postToFirstFragmentMs": figures([m[1] for m in measured]),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    anyio.run(main)
