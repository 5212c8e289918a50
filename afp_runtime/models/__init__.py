"""Models: the Model port and its adapters (scripted, extractive, OpenAI-compatible,
Anthropic).

The HTTP adapters (and httpx under them) load at their first use, so a program on the scripted
model, or one that only reads a database, never imports an HTTP client.
"""

from __future__ import annotations

import typing as _typing

from afp_runtime._lazy import lazy_names as _lazy_names
from afp_runtime.models.base import DeltaSink, EncodedRequest, Model, ReplyDelta
from afp_runtime.models.extractive import ExtractiveSummarizer
from afp_runtime.models.retry import Attempt, RetryPolicy, backoff_s, send_with_retries
from afp_runtime.models.scripted import (
    ScriptedModel,
    ScriptEntry,
    ScriptHandler,
    StreamedReply,
)

if _typing.TYPE_CHECKING:
    from afp_runtime.models.anthropic import AnthropicModel
    from afp_runtime.models.encoders import encoder_for
    from afp_runtime.models.openai_compat import OpenAICompatModel

_LAZY = {
    "AnthropicModel": "afp_runtime.models.anthropic",
    "OpenAICompatModel": "afp_runtime.models.openai_compat",
    "encoder_for": "afp_runtime.models.encoders",
}


__getattr__ = _lazy_names("afp_runtime.models", _LAZY, globals())


__all__ = [
    "AnthropicModel",
    "Attempt",
    "DeltaSink",
    "EncodedRequest",
    "ExtractiveSummarizer",
    "Model",
    "OpenAICompatModel",
    "ReplyDelta",
    "RetryPolicy",
    "ScriptEntry",
    "ScriptHandler",
    "ScriptedModel",
    "StreamedReply",
    "backoff_s",
    "encoder_for",
    "send_with_retries",
]
