"""Agents files build the same ``Agent`` Python code builds: options on a ``Tool`` ref apply to
a copy, refs resolve beside the file, typed functions get their schema from hints, and a ref
whose module fails to import is a config error naming it (exit 2 from ``afp``)."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import afp_runtime as afp
from afp_runtime.errors import ConfigError, ToolDefinitionError

REPO = Path(__file__).resolve().parents[2]
_unique = itertools.count()

TOOLS_MODULE = '''
import afp_runtime as afp
from afp_runtime.testing import answer, call, tool_reply


@afp.tool
def refund(order_id: str, amount_cents: int = 0) -> str:
    """Refund an order.

    Args:
        order_id: the order.
        amount_cents: how much, in cents.
    """
    RAN.append(order_id)
    return f"refunded {order_id}"


RAN: list[str] = []


def plain_lookup(order_id: str, days: int = 3) -> str:
    """Look an order up."""
    return f"{order_id} in {days} days"


SCRIPT = [tool_reply(call("c1", "refund", order_id="9")), answer("Refund done.")]
'''


def agents_file(folder: Path, module: str, tools: str, *, extra: str = "") -> Path:
    path = folder / "agents.toml"
    path.write_text(
        f"""
[[agents]]
id = "desk"
{extra}
[agents.model]
provider = "scripted"
model = "m"
script = "{module}:SCRIPT"
{tools}
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture(name="module")
def fixture_module(tmp_path: Path) -> str:
    """A tools module written beside the config, under a name no other test uses."""
    name = f"desk_tools_{next(_unique)}"
    (tmp_path / f"{name}.py").write_text(TOOLS_MODULE, encoding="utf-8")
    yield name
    sys.modules.pop(name, None)


def test_options_on_a_tool_ref_apply_to_a_copy(tmp_path: Path, module: str) -> None:
    """Every option the file sets on a ``Tool`` ref is applied to a copy of the Tool."""
    config = agents_file(
        tmp_path,
        module,
        f"""
[[agents.tools]]
ref = "{module}:refund"
name = "refund_order"
description = "Refund an order, carefully."
checkIn = true
idempotent = true
parallelSafe = true
timeoutS = 5
maxResultChars = 300
""",
    )
    [agent] = afp.load_agents(config)
    [made] = agent.tools
    original = sys.modules[module].refund
    assert (made.name, made.description) == ("refund_order", "Refund an order, carefully.")
    assert (made.check_in, made.idempotent, made.parallel_safe) == (True, True, True)
    assert (made.timeout_s, made.max_result_chars) == (5, 300)
    assert made.input_schema == original.input_schema
    assert (original.name, original.check_in, original.timeout_s) == ("refund", False, 60.0)


async def test_check_in_from_the_file_asks_before_the_tool_runs(
    tmp_path: Path, module: str
) -> None:
    """``checkIn = true`` on a Tool ref pauses the turn for approval; the tool has not run."""
    tools = f'[[agents.tools]]\nref = "{module}:refund"\ncheckIn = true\n'
    config = await anyio.to_thread.run_sync(agents_file, tmp_path, module, tools)
    [agent] = await anyio.to_thread.run_sync(afp.load_agents, config)
    async with afp.open(tmp_path / "afp.db") as store:
        paused = await store.run(agent, "Refund order 9")
        assert paused.status == "paused"
        assert [q.kind for q in paused.questions] == ["approval"]
        assert sys.modules[module].RAN == []
        done = await store.answer(agent, paused.questions[0].question_id, {"decision": "approve"})
        assert done.answer == "Refund done." and sys.modules[module].RAN == ["9"]


def test_an_option_that_cannot_apply_names_its_key(tmp_path: Path, module: str) -> None:
    """``inputSchema`` on a Tool ref cannot apply: the error names the key path."""
    config = agents_file(
        tmp_path,
        module,
        f'[[agents.tools]]\nref = "{module}:refund"\ninputSchema = {{type = "object"}}\n',
    )
    with pytest.raises(ConfigError, match=r"agents\[0\]\.tools\[0\]\.inputSchema cannot apply"):
        afp.load_agents(config)


def test_a_typed_function_ref_gets_its_schema_from_hints(tmp_path: Path, module: str) -> None:
    """A plain typed function needs no ``name`` or ``inputSchema``: ``@tool`` rules apply."""
    config = agents_file(
        tmp_path, module, f'[[agents.tools]]\nref = "{module}:plain_lookup"\ntimeoutS = 9\n'
    )
    [agent] = afp.load_agents(config)
    [made] = agent.tools
    assert (made.name, made.description, made.timeout_s) == ("plain_lookup", "Look an order up.", 9)
    assert made.input_schema["properties"]["days"] == {"type": "integer", "default": 3}
    assert made.input_schema["required"] == ["order_id"]


def test_a_ref_beside_the_config_resolves_from_another_directory(
    tmp_path: Path, module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config's own directory is searched first, whatever the working directory is."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = agents_file(tmp_path, module, f'[[agents.tools]]\nref = "{module}:refund"\n')
    assert module not in sys.modules
    [agent] = afp.load_agents(config)
    assert [t.name for t in agent.tools] == ["refund"]
    assert str(tmp_path) not in sys.path  # the search path is restored


@pytest.mark.parametrize(
    ("source", "raised"),
    [
        ("raise RuntimeError('no credentials in the vault')", "RuntimeError: no credentials"),
        ("def broken(:\n    pass", "SyntaxError"),
        ("import a_module_that_is_not_there_at_all", "ModuleNotFoundError"),
        ("import sys\nsys.exit(3)", "SystemExit: 3"),
    ],
)
def test_a_module_failing_at_import_is_a_config_error(
    tmp_path: Path, source: str, raised: str
) -> None:
    """Any exception while importing a ref's module is a ConfigError naming the ref."""
    name = f"broken_{next(_unique)}"
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    config = agents_file(tmp_path, name, f'[[agents.tools]]\nref = "{name}:tool"\n')
    with pytest.raises(ConfigError) as caught:
        afp.load_agents(config)
    text = str(caught.value)
    assert f"'{name}:tool'" in text and raised in text
    assert "agents[0].tools[0].ref" in text
    sys.modules.pop(name, None)


def test_an_agents_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are a ConfigError naming the file, not a UnicodeDecodeError."""
    config = tmp_path / "agents.toml"
    config.write_bytes(b"\xff\xfe [[agents]]")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        afp.load_agents(config)


def test_a_missing_module_names_where_it_looked(tmp_path: Path) -> None:
    """A module found nowhere: the error names the ref and the directories searched."""
    config = agents_file(tmp_path, "nowhere_to_be_found", "")
    with pytest.raises(ConfigError, match="cannot import 'nowhere_to_be_found'") as caught:
        afp.load_agents(config)
    assert str(tmp_path) in str(caught.value)


def test_an_untyped_function_ref_is_refused_naming_the_parameter(tmp_path: Path) -> None:
    """A function with an unannotated parameter and no inputSchema cannot be a tool."""
    name = f"untyped_{next(_unique)}"
    (tmp_path / f"{name}.py").write_text(
        "def lookup(order_id):\n    return order_id\nSCRIPT = []\n", encoding="utf-8"
    )
    config = agents_file(tmp_path, name, f'[[agents.tools]]\nref = "{name}:lookup"\n')
    with pytest.raises(ToolDefinitionError, match="parameter 'order_id' has no type annotation"):
        afp.load_agents(config)
    sys.modules.pop(name, None)


@pytest.mark.parametrize(
    "source",
    ["raise RuntimeError('boom at import')", "def broken(:\n    pass", "import sys\nsys.exit(3)"],
)
def test_afp_run_exits_2_without_a_traceback(tmp_path: Path, source: str) -> None:
    """``afp run`` on a config whose ref fails at import exits 2 with one line, no traceback,
    from another directory and without PYTHONPATH."""
    name = f"cli_broken_{next(_unique)}"
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    config = agents_file(tmp_path, name, "")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", "run", str(config), "-m", "hi"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=elsewhere,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ""},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"'{name}:SCRIPT'" in done.stderr
    assert done.stdout == ""


def test_afp_run_resolves_a_ref_beside_the_config(tmp_path: Path, module: str) -> None:
    """``afp run`` from another directory, no PYTHONPATH: the config's own module is found."""
    config = agents_file(tmp_path, module, f'[[agents.tools]]\nref = "{module}:refund"\n')
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", "run", str(config), "-m", "Refund order 9"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=elsewhere,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert "Refund done." in done.stdout


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("*.toml")), ids=lambda p: p.name)
def test_every_config_in_the_repository_loads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The configs the README points to build agents (a key variable they name is set)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    agents = afp.load_agents(path)
    assert agents and all(isinstance(agent, afp.Agent) for agent in agents)
