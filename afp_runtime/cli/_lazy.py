"""Importing a heavy layer inside a command, off the event loop (an import reads files)."""

from __future__ import annotations

import importlib
from types import ModuleType

import anyio.to_thread


async def load(module: str) -> ModuleType:
    """``module`` imported in a worker thread (at once when it is loaded already)."""
    return await anyio.to_thread.run_sync(importlib.import_module, module)
