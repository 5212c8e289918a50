"""Names a package exports but imports only when first used, so importing the package stays
cheap (docs/python.md#import-cost)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_names(
    package: str, homes: Mapping[str, str], namespace: MutableMapping[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``homes`` is imported from its home
    module at first use and kept in ``namespace`` (the package's globals) from then on."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(home)
        # A name whose home is the subpackage of that name is the subpackage (``afp.mcp``).
        value = module if home == f"{package}.{name}" else getattr(module, name)
        namespace[name] = value
        return value

    return __getattr__
