"""A config file chooses its model provider and window kind by name from one registry each
(docs/config.md#the-model-table, docs/config.md#the-window-table): an unknown name is refused
naming the key and the known names, and every built-in is registered under its own name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import afp_runtime
from afp_runtime import models
from afp_runtime.agents import PROVIDERS, WINDOW_KINDS, ModelConfig, build_model, load_agents
from afp_runtime.errors import ConfigError
from afp_runtime.window import strategies

CONFIG_PAGE = Path(__file__).resolve().parents[2] / "docs/config.md"

SCRIPTED = (
    'model = {provider = "scripted", model = "demo", script = "afp_runtime.demo:demo_script"}'
)


def _file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(f'[[agents]]\nid = "ops"\n{body}\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("provider", ["gemini", "Anthropic", ""])
def test_an_unknown_provider_is_refused_naming_the_known_ones(
    tmp_path: Path, provider: str
) -> None:
    """Before the registry, a name no built-in answered to fell through to Anthropic in
    ``build_model``; the file now fails naming the key and every known provider."""
    path = _file(tmp_path, f'model = {{provider = "{provider}", model = "m"}}')
    with pytest.raises(ConfigError) as caught:
        afp_runtime.load_agents(path)
    text = str(caught.value)
    assert "agents[0].model.provider" in text
    assert repr(provider) in text
    assert "anthropic, extractive, openai-compatible, scripted" in text


def test_build_model_never_falls_back_to_anthropic() -> None:
    """A config built in Python (no decoding) with an unknown provider is refused, too."""
    with pytest.raises(ConfigError, match=r"m\.provider is 'gemini'.*known: anthropic"):
        build_model(ModelConfig(provider="gemini", model="claude-x"), field="m")


def test_an_unknown_summarizer_provider_is_refused_at_its_key(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        f'{SCRIPTED}\nwindow = {{kind = "summarizeOldest", thresholdTokens = 100, '
        'summarizer = {provider = "llama", model = "m"}}',
    )
    with pytest.raises(ConfigError, match=r"agents\[0\]\.window\.summarizer\.provider is 'llama'"):
        load_agents(path)


@pytest.mark.parametrize("kind", ["lru", "sliding-window", "SlidingWindow"])
def test_an_unknown_window_kind_is_refused_naming_the_known_ones(tmp_path: Path, kind: str) -> None:
    path = _file(tmp_path, f'{SCRIPTED}\nwindow = {{kind = "{kind}", thresholdTokens = 100}}')
    with pytest.raises(ConfigError) as caught:
        load_agents(path)
    text = str(caught.value)
    assert f"agents[0].window.kind is {kind!r}" in text
    assert "known: slidingWindow, summarizeOldest, tokenBudget" in text


def test_a_stand_in_model_does_not_hide_an_unknown_provider() -> None:
    """``build_definition(model=...)`` (scenarios) still checks the file's provider name."""
    from afp_runtime.agents import build_definition, load_config

    config = load_config("a.toml", '[[agents]]\nid = "ops"\nmodel = {provider = "x", model = "m"}')
    with pytest.raises(ConfigError, match=r"agents\[0\]\.model\.provider is 'x'"):
        build_definition(config.agents[0], model=models.ScriptedModel([], model="m"))


# --- the registries hold every built-in, under its own name --------------------------------


def _adapter_classes() -> dict[str, type]:
    """The model adapters ``afp_runtime.models`` exports, by their ``provider`` name."""
    found: dict[str, type] = {}
    for name in models.__all__:
        value = getattr(models, name)
        provider = getattr(value, "provider", None)
        if isinstance(value, type) and isinstance(provider, str):
            found[provider] = value
    return found


def test_every_model_adapter_is_a_registered_provider() -> None:
    """An adapter added to ``afp_runtime.models`` without a registry entry fails here."""
    assert set(_adapter_classes()) == set(PROVIDERS)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_each_provider_builds_the_adapter_of_its_name(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFP_TEST_KEY", "k")
    config = ModelConfig(
        provider=provider,
        model="m",
        base_url="http://127.0.0.1:9/v1",
        api_key_env="AFP_TEST_KEY",
        script="afp_runtime.demo:demo_script",
    )
    built = build_model(config, field="m")
    assert type(built) is _adapter_classes()[provider]
    assert built.provider == provider


def _strategy_factories() -> set[str]:
    """The built-in strategy names (``sliding-window``...) the window package builds."""
    kinds = (strategies.SlidingWindow, strategies.TokenBudget, strategies.SummarizeOldest)
    return {cls.name for cls in kinds}


def test_every_builtin_strategy_has_a_window_kind(tmp_path: Path) -> None:
    """Each kind builds the strategy its camelCase name spells, and every built-in strategy of
    the window package has a kind."""
    built = {}
    for kind in WINDOW_KINDS:
        path = _file(
            tmp_path,
            f'{SCRIPTED}\nwindow = {{kind = "{kind}", thresholdTokens = 100, keepRecentTurns = 2, '
            'summarizer = {provider = "extractive", model = "extractive/1"}}',
        )
        strategy = load_agents(path)[0].window
        assert strategy is not None
        built[kind] = strategy.name
    assert {kind: re.sub(r"-(\w)", lambda m: m[1].upper(), n) for kind, n in built.items()} == {
        kind: kind for kind in WINDOW_KINDS
    }
    assert set(built.values()) == _strategy_factories()


def _table_row(table: str, key: str) -> str:
    text = CONFIG_PAGE.read_text(encoding="utf-8")
    section = text.split(f"## {table}\n", 1)[1].split("\n## ", 1)[0]
    return next(line for line in section.splitlines() if line.startswith(f"| `{key}` |"))


@pytest.mark.parametrize(
    ("table", "key", "registry"),
    [("The model table", "provider", PROVIDERS), ("The window table", "kind", WINDOW_KINDS)],
)
def test_docs_list_exactly_the_registered_names(table: str, key: str, registry: object) -> None:
    """docs/config.md names every registered provider and kind, and no other."""
    row = _table_row(table, key)
    listed = set(re.findall(r"`([\w-]+)`", row)) - {key}
    assert listed == set(registry)  # type: ignore[call-overload]
