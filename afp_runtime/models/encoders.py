"""The built-in adapter for a receipt's wire encoder id, to re-encode a past request.

A conformance check compares a rebuilt request's bytes with the digest taken when it was sent;
any process can do that with the adapter of the same encoder (default settings: a run that used
other settings shows ``encoder-changed``). A streamed request has an encoder id of its own, so
its adapter here streams too and its settings match.
"""

from __future__ import annotations

from afp_runtime.models.anthropic import AnthropicModel
from afp_runtime.models.base import Model
from afp_runtime.models.openai_compat import OpenAICompatModel
from afp_runtime.models.scripted import ScriptedModel


def encoder_for(encoder: str, model: str) -> Model | None:
    """An adapter that encodes as ``encoder`` did (``scripted/1``, ``openai-chat/1``,
    ``anthropic-messages/1``, and the streamed ``openai-chat-stream/1`` and
    ``anthropic-messages-stream/1``) for ``model``; None for an encoder this build does not
    have.

    The adapter never sends: it holds no key and opens no connection.
    """
    if encoder == "scripted/1":
        return ScriptedModel([], model=model)
    if encoder in ("openai-chat/1", "openai-chat-stream/1"):
        streamed = encoder == "openai-chat-stream/1"
        return OpenAICompatModel(
            base_url="http://127.0.0.1", model=model, api_key="unused", stream=streamed
        )
    if encoder in ("anthropic-messages/1", "anthropic-messages-stream/1"):
        streamed = encoder == "anthropic-messages-stream/1"
        return AnthropicModel(model=model, api_key="unused", stream=streamed)
    return None
