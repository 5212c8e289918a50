"""Models: the Model port and its adapters (scripted, extractive, OpenAI-compatible,
Anthropic)."""

from afp_runtime.models.anthropic import AnthropicModel
from afp_runtime.models.base import EncodedRequest, Model, TokenSink
from afp_runtime.models.encoders import encoder_for
from afp_runtime.models.extractive import ExtractiveSummarizer
from afp_runtime.models.openai_compat import OpenAICompatModel
from afp_runtime.models.retry import Attempt, RetryPolicy, backoff_s, send_with_retries
from afp_runtime.models.scripted import ScriptedModel, ScriptEntry, ScriptHandler

__all__ = [
    "AnthropicModel",
    "Attempt",
    "EncodedRequest",
    "ExtractiveSummarizer",
    "Model",
    "OpenAICompatModel",
    "RetryPolicy",
    "ScriptEntry",
    "ScriptHandler",
    "ScriptedModel",
    "TokenSink",
    "backoff_s",
    "encoder_for",
    "send_with_retries",
]
