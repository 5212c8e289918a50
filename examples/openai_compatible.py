"""The support agent of ``support_agent.py`` against any OpenAI-compatible endpoint: OpenAI,
Ollama, vLLM, llama.cpp's server. The environment chooses it:

    AFP_BASE_URL      the endpoint (default http://localhost:11434/v1, a local Ollama)
    AFP_MODEL         the model id (default llama3.1)
    AFP_API_KEY_ENV   the name of the variable that holds the key (none for a local server)

    AFP_API_KEY_ENV=OPENAI_API_KEY AFP_BASE_URL=https://api.openai.com/v1 \\
        AFP_MODEL=gpt-4o-mini python examples/openai_compatible.py [DATABASE] [MESSAGE]
"""

from __future__ import annotations

import os
import sys

import anyio
from support_agent import support_agent

import afp_runtime as afp


async def main(database: str, message: str) -> None:
    model = afp.OpenAICompatModel(
        base_url=os.environ.get("AFP_BASE_URL", "http://localhost:11434/v1"),
        model=os.environ.get("AFP_MODEL", "llama3.1"),
        api_key_env=os.environ.get("AFP_API_KEY_ENV") or None,
        timeout_s=120,
    )
    agent = support_agent(model)
    async with afp.open(database) as store:
        result = await store.run(agent, message)
        print(f"{result.status}: {result.answer or result.error}")
        print(f"tokens: {result.usage.input} in, {result.usage.output} out")


if __name__ == "__main__":
    arguments = sys.argv[1:] + ["openai.db", "Where is order 1042?"][len(sys.argv) - 1 :]
    anyio.run(main, arguments[0], arguments[1])
