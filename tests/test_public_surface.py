"""Each layer package is a curated surface with a sorted ``__all__``
(docs/architecture.md#layers).

Layer packages are found on disk (every folder of ``afp_runtime`` with an ``__init__.py``), so a
new layer is checked as soon as it exists.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

import afp_runtime

SOURCE_ROOT = Path(next(iter(afp_runtime.__path__))).resolve()

LAYER_PACKAGES = sorted(
    folder.name
    for folder in SOURCE_ROOT.iterdir()
    if folder.is_dir() and (folder / "__init__.py").is_file()
)


@pytest.fixture(name="package", params=LAYER_PACKAGES)
def fixture_package(request: pytest.FixtureRequest) -> ModuleType:
    """One layer package, imported."""
    return importlib.import_module(f"afp_runtime.{request.param}")


def _exported(package: ModuleType) -> list[str]:
    names = getattr(package, "__all__", None)
    assert names is not None, f"{package.__name__} has no __all__"
    return list(names)


def test_layer_packages_are_found() -> None:
    """Discovery finds the layers that exist today, so the checks below are not vacuous."""
    assert {"messages", "records", "served", "models", "tools", "store", "loop"} <= set(
        LAYER_PACKAGES
    )


def test_all_exists(package: ModuleType) -> None:
    """Every layer package declares __all__ as a list of strings."""
    names = _exported(package)
    assert all(isinstance(name, str) for name in names), package.__name__


def test_all_is_sorted(package: ModuleType) -> None:
    """Every layer package's __all__ is in sorted() order (upper case before lower case)."""
    names = _exported(package)
    assert names == sorted(names), f"{package.__name__}.__all__ should be {sorted(names)}"


def test_all_has_no_duplicates(package: ModuleType) -> None:
    """No name appears twice in a layer package's __all__."""
    names = _exported(package)
    twice = sorted({name for name in names if names.count(name) > 1})
    assert not twice, f"{package.__name__}.__all__ repeats {twice}"


def test_every_exported_name_exists(package: ModuleType) -> None:
    """Every name in a layer package's __all__ is an attribute of the package."""
    missing = [name for name in _exported(package) if not hasattr(package, name)]
    assert not missing, f"{package.__name__}.__all__ names missing attributes {missing}"


def test_no_private_name_is_exported(package: ModuleType) -> None:
    """No layer package exports a name that starts with an underscore."""
    private = [name for name in _exported(package) if name.startswith("_")]
    assert not private, f"{package.__name__}.__all__ exports private names {private}"


def test_every_public_name_is_exported(package: ModuleType) -> None:
    """Every public name a layer's __init__ brings in is listed in __all__ (submodules aside)."""
    exported = set(_exported(package))
    stray = sorted(
        name
        for name, value in vars(package).items()
        if not name.startswith("_")
        and name not in exported
        and not isinstance(value, ModuleType)
        # ``from __future__ import annotations`` leaves a feature object behind.
        and type(value).__module__ != "__future__"
    )
    assert not stray, f"{package.__name__} imports public names missing from __all__: {stray}"
