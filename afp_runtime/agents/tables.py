"""The tables of an agents file below an agent (docs/config.md): its model, its window strategy
and its tools, decoded with msgspec into camelCase Structs."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from afp_runtime.time import Period


class ConfigStruct(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Base of config structs: a typo in a file fails with its path."""


class ModelConfig(ConfigStruct):
    """Which model endpoint an agent talks to.

    Attributes:
        provider: a name of the provider registry (``PROVIDERS``): ``anthropic``,
            ``extractive`` (the built-in offline summarizer, model id ``extractive/1`` or
            ``extractive/2``),
            ``openai-compatible`` or ``scripted``; another name is refused when the agent is
            built, naming the known ones.
        model: the model id sent on the wire.
        base_url: the endpoint (wire ``baseUrl``), e.g. ``http://localhost:11434/v1``.
        api_key_env: the environment variable holding the API key (wire ``apiKeyEnv``); keys
            never live in config files.
        max_tokens: default completion limit (wire ``maxTokens``).
        timeout_s: real network timeout per request (wire ``timeoutS``).
        script: ``module:attr`` of a scripted model's replies or reply function.
        stream: ``openai-compatible`` and ``anthropic``: ask for streamed replies
            (docs/loop.md#streaming-replies).
    """

    provider: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    max_tokens: int | None = None
    timeout_s: float = 120.0
    script: str | None = None
    stream: bool = False


class ToolConfig(ConfigStruct):
    """A tool of an agent: a reference to code plus the options the file sets.

    Options left out keep the referenced ``Tool``'s own values (or the defaults, for a
    function); ``inputSchema`` makes a function an ``(args, ctx)`` tool.
    """

    ref: str
    name: str | msgspec.UnsetType = msgspec.UNSET
    description: str | msgspec.UnsetType = msgspec.UNSET
    input_schema: dict[str, Any] | None = None
    idempotent: bool | msgspec.UnsetType = msgspec.UNSET
    parallel_safe: bool | msgspec.UnsetType = msgspec.UNSET
    check_in: bool | msgspec.UnsetType = msgspec.UNSET
    timeout_s: float | msgspec.UnsetType = msgspec.UNSET
    max_result_chars: int | msgspec.UnsetType = msgspec.UNSET
    period: Period | None = None

    def options(self) -> dict[str, Any]:
        """The declaration options the file sets, as ``Tool`` keyword arguments."""
        names = ("name", "description", "idempotent", "parallel_safe", "check_in", "timeout_s")
        chosen = {key: getattr(self, key) for key in (*names, "max_result_chars")}
        if self.period is not None:
            chosen["period"] = self.period
        return {key: value for key, value in chosen.items() if value is not msgspec.UNSET}


class WindowConfig(ConfigStruct):
    """The agent's window strategy (docs/window.md#built-in-strategies), e.g. ``kind =
    "slidingWindow"``.

    Attributes:
        kind: a name of the window kind registry (``WINDOW_KINDS``): ``slidingWindow``,
            ``tokenBudget`` or ``summarizeOldest``; another name is refused when the agent is
            built, naming the known ones.
        keep_recent_turns: turns never removed (wire ``keepRecentTurns``); required for
            ``slidingWindow``, default 6 otherwise.
        threshold_tokens: measured input tokens above which token strategies act (wire
            ``thresholdTokens``).
        model: the summarizer's model id (summarizeOldest).
        retain: ``conversation`` (folded originals kept) or ``discard``.
        summarizer: the summarizer's endpoint (summarizeOldest), e.g. ``provider = "extractive"``.
    """

    kind: str
    keep_recent_turns: int | None = None
    threshold_tokens: float | None = None
    model: str | None = None
    retain: Literal["conversation", "discard"] = "conversation"
    summarizer: ModelConfig | None = None
