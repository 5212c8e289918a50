"""The names a config file chooses code by, each from one registry: model providers (the model
table's ``provider``) and window strategy kinds (the window table's ``kind``)
(docs/config.md#the-model-table, docs/config.md#the-window-table).

A registry maps a name to its builder. ``build_model`` and ``build_window`` look the name up and
nothing else chooses: a name the registry does not hold is a ``ConfigError`` naming the key and
the known names, never a fallback to another provider or kind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from afp_runtime import models
from afp_runtime.agents.refs import resolve_ref
from afp_runtime.errors import ConfigError, error_context
from afp_runtime.models import ExtractiveSummarizer, Model, ScriptedModel
from afp_runtime.window import WindowStrategy, sliding_window, summarize_oldest, token_budget

if TYPE_CHECKING:
    from afp_runtime.agents.config import ModelConfig, WindowConfig


_T = TypeVar("_T")


def known_name(registry: Mapping[str, _T], name: str, *, key: str, what: str) -> _T:
    """The entry ``name`` of ``registry``.

    Raises:
        ConfigError: the registry holds no such name; names ``key``, the value and the known
            names.
    """
    entry = registry.get(name)
    if entry is None:
        known = ", ".join(sorted(registry))
        raise ConfigError(
            f"{key} is {name!r}, which is not a known {what} (known: {known})", path=key
        )
    return entry


# --- providers ------------------------------------------------------------------------------

ProviderBuilder = Callable[["ModelConfig", str, "Path | None"], Model]


def _extractive(config: ModelConfig, field: str, base_dir: Path | None) -> Model:
    # An id ``extractive/N`` picks that version; any other id gives version 1, as it did before
    # versions were read from the id (docs/window.md#the-extractive-summarizer).
    if not config.model.startswith("extractive/"):
        return ExtractiveSummarizer()
    versions = {model: model for model in ExtractiveSummarizer.MODELS}
    known_name(versions, config.model, key=f"{field}.model", what="extractive summarizer")
    return ExtractiveSummarizer(config.model)


def _scripted(config: ModelConfig, field: str, base_dir: Path | None) -> Model:
    if config.script is None:
        raise ConfigError(f"{field}.script is required for a scripted model", field=field)
    return ScriptedModel(
        resolve_ref(config.script, field=f"{field}.script", base_dir=base_dir), model=config.model
    )


def _check_api_key_env(config: ModelConfig, field: str) -> None:
    # A network provider's key variable is checked when the file is read, not at the first call.
    if config.api_key_env is not None and config.api_key_env not in os.environ:
        raise ConfigError(
            f"{field}.apiKeyEnv names {config.api_key_env!r}, which is not set in the environment",
            field=f"{field}.apiKeyEnv",
        )


def _openai_compatible(config: ModelConfig, field: str, base_dir: Path | None) -> Model:
    _check_api_key_env(config, field)
    if config.base_url is None:
        raise ConfigError(f"{field}.baseUrl is required for openai-compatible", field=field)
    # models.* loads the HTTP adapters at this first use (configs are read off the loop).
    return models.OpenAICompatModel(
        base_url=config.base_url,
        model=config.model,
        api_key_env=config.api_key_env,
        max_tokens=config.max_tokens,
        timeout_s=config.timeout_s,
        stream=config.stream,
    )


def _anthropic(config: ModelConfig, field: str, base_dir: Path | None) -> Model:
    _check_api_key_env(config, field)
    return models.AnthropicModel(
        model=config.model,
        api_key_env=config.api_key_env or "ANTHROPIC_API_KEY",
        base_url=config.base_url or "https://api.anthropic.com",
        max_tokens=config.max_tokens or 4096,
        timeout_s=config.timeout_s,
        stream=config.stream,
    )


# Each name is the built model's own ``provider`` (tests hold them equal).
PROVIDERS: Mapping[str, ProviderBuilder] = MappingProxyType(
    {
        "anthropic": _anthropic,
        "extractive": _extractive,
        "openai-compatible": _openai_compatible,
        "scripted": _scripted,
    }
)


def provider_builder(config: ModelConfig, *, field: str) -> ProviderBuilder:
    """The builder of ``config.provider``.

    Raises:
        ConfigError: not a known provider (names ``FIELD.provider`` and the known ones).
    """
    return known_name(PROVIDERS, config.provider, key=f"{field}.provider", what="provider")


def build_model(config: ModelConfig, *, field: str, base_dir: Path | None = None) -> Model:
    """The adapter a model config describes.

    Raises:
        ConfigError: an unknown provider, or a key the provider needs is missing or wrong
            (names its key path).
    """
    return provider_builder(config, field=field)(config, field, base_dir)


# --- window strategy kinds ------------------------------------------------------------------


class WindowBuilder(Protocol):
    """Builds one kind's strategy. ``options`` holds the shared ``keep_recent_turns`` when the
    file sets it; ``summarizer`` stands in for the config's; a summarizer built here is appended
    to ``resources`` (its owner closes it)."""

    def __call__(
        self,
        config: WindowConfig,
        *,
        field: str,
        options: dict[str, Any],
        resources: list[Any] | None,
        summarizer: Model | None,
        base_dir: Path | None,
    ) -> WindowStrategy: ...


def _threshold(config: WindowConfig, field: str) -> float:
    if config.threshold_tokens is None:
        raise ConfigError(f"{field}.thresholdTokens is required for {config.kind}", path=field)
    return config.threshold_tokens


def _sliding_window(
    config: WindowConfig,
    *,
    field: str,
    options: dict[str, Any],
    resources: list[Any] | None,
    summarizer: Model | None,
    base_dir: Path | None,
) -> WindowStrategy:
    return sliding_window(**options)


def _token_budget(
    config: WindowConfig,
    *,
    field: str,
    options: dict[str, Any],
    resources: list[Any] | None,
    summarizer: Model | None,
    base_dir: Path | None,
) -> WindowStrategy:
    return token_budget(threshold_tokens=_threshold(config, field), **options)


def _summarize_oldest(
    config: WindowConfig,
    *,
    field: str,
    options: dict[str, Any],
    resources: list[Any] | None,
    summarizer: Model | None,
    base_dir: Path | None,
) -> WindowStrategy:
    threshold = _threshold(config, field)
    if summarizer is None:
        if config.summarizer is None:
            raise ConfigError(f"{field}.summarizer is required for summarizeOldest", path=field)
        summarizer = build_model(config.summarizer, field=f"{field}.summarizer", base_dir=base_dir)
        if resources is not None:
            resources.append(summarizer)
    return summarize_oldest(
        threshold_tokens=threshold,
        summarizer=summarizer,
        model=config.model or summarizer.model,
        retain=config.retain,
        **options,
    )


# The config's camelCase kinds; each builds one of the window's built-in strategies.
WINDOW_KINDS: Mapping[str, WindowBuilder] = MappingProxyType(
    {
        "slidingWindow": _sliding_window,
        "summarizeOldest": _summarize_oldest,
        "tokenBudget": _token_budget,
    }
)


def build_window(
    config: WindowConfig,
    *,
    field: str,
    resources: list[Any] | None = None,
    summarizer: Model | None = None,
    base_dir: Path | None = None,
) -> WindowStrategy:
    """The window strategy a window config describes; option errors name the key path.

    ``summarizer`` stands in for ``config.summarizer`` (a scenario's scripted one). A
    summarizer built here is appended to ``resources``: its owner must close it.

    Raises:
        ConfigError: an unknown kind (names ``FIELD.kind`` and the known ones), or a key the
            kind needs is missing.
        WindowConfigError: an option's value is refused by the strategy.
    """
    builder = known_name(WINDOW_KINDS, config.kind, key=f"{field}.kind", what="window kind")
    options: dict[str, Any] = {}
    if config.keep_recent_turns is not None:
        options["keep_recent_turns"] = config.keep_recent_turns
    with error_context(path=field):
        return builder(
            config,
            field=field,
            options=options,
            resources=resources,
            summarizer=summarizer,
            base_dir=base_dir,
        )
