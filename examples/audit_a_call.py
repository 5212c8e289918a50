"""Auditing past model calls: what exactly was the model sent, does it match the receipt taken
when it was sent, and what changed between two calls.

    python examples/audit_a_call.py [DATABASE]

It first has the support agent answer two messages (so there is something to audit), then
reads everything back from the database, as a person would weeks later.
"""

from __future__ import annotations

import sys

import anyio
from support_agent import scripted_support, support_agent

import afp_runtime as afp


async def main(database: str) -> None:
    agent = support_agent(afp.ScriptedModel(scripted_support))
    async with afp.open(database) as store:
        for question in ("Where is order 1042?", "And order 2210?"):
            await store.run(agent, question)

        # The agent's third model call over its whole life, wherever it sits.
        run_id, epoch, view = await store.call(agent, 3)
        print(f"call 3 is epoch {epoch} of run {run_id}; it was sent:")
        for message in view.messages.as_sent:
            print(f"  {message.role:9} {message.content[:70]!r}")
        print(f"  tools: {', '.join(view.tools.names)}")

        # Every call of that run, checked against the receipt digested before it was sent.
        for report in await store.conform(run_id):
            print(f"epoch {report.epoch}: {report.verdict}")

        # What the model saw change from the run's first call to its second.
        diff = await store.diff(run_id, 1, 2)
        print(f"epoch {diff.before} -> {diff.after}: {diff.kept} kept, {len(diff.added)} added:")
        for message in diff.added:
            print(f"  + {message.role:9} {message.content[:70]!r}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "audit.db")
