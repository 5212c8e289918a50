"""The application layer's names load at first use (docs/architecture.md#the-application-layer):
whatever was imported before, each exported name is the use case or value, never a submodule
that happens to share its name (which ``from afp_runtime.app import findings`` would otherwise
return once ``afp_runtime.app.findings`` had been imported)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types

import afp_runtime.app as app


def test_no_exported_name_is_shadowed_by_a_submodule() -> None:
    for module in pkgutil.iter_modules(app.__path__):
        importlib.import_module(f"afp_runtime.app.{module.name}")
    shadowed = [name for name in app.__all__ if isinstance(getattr(app, name), types.ModuleType)]
    assert shadowed == []


def test_importing_the_layer_loads_no_use_case() -> None:
    probe = (
        "import sys, afp_runtime.app\n"
        "print(sorted(m for m in sys.modules if m.startswith('afp_runtime.app.')"
        " or m == 'afp_runtime.loop'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
