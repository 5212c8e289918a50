"""A standing host with the local HTTP API, from Python: the support agent answers whatever
arrives in its inbox until SIGTERM or Ctrl-C (a second one skips the shutdown grace).

    python examples/standing_host.py [DATABASE]        # AFP_PORT picks the port (8765)

Then, from another terminal:

    curl -s -X POST localhost:8765/v1/agents/support/inbox -d '{"text": "Where is order 7?"}' \\
        -H 'content-type: application/json'
    afp inbox support --db host.db
"""

from __future__ import annotations

import os
import sys

import anyio
from support_agent import scripted_support, support_agent

import afp_runtime as afp


async def main(database: str, port: int) -> None:
    agent = support_agent(afp.ScriptedModel(scripted_support))
    async with afp.open(database) as store:
        print(f"serving agent 'support' on http://127.0.0.1:{port}", file=sys.stderr, flush=True)
        await store.serve([agent], port=port, shutdown_grace_s=5)
    print("stopped cleanly", file=sys.stderr)


if __name__ == "__main__":
    anyio.run(
        main, sys.argv[1] if len(sys.argv) > 1 else "host.db", int(os.environ.get("AFP_PORT", 8765))
    )
