"""Which event loop runs a host: uvloop when it is installed, else asyncio's own
(docs/host.md#the-event-loop).

``afp serve`` and ``afp.run`` choose here. ``AFP_LOOP`` (or ``afp serve --loop``) says
``auto`` (the default: uvloop when importable), ``uvloop`` (refused when it is not installed) or
``asyncio`` (asyncio's default loop, e.g. to rule uvloop out while chasing a bug).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, TypeVarTuple, Unpack

import anyio

from afp_runtime.errors import ConfigError

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

LOOP_ENV = "AFP_LOOP"
LOOPS = ("auto", "uvloop", "asyncio")


def uvloop_installed() -> bool:
    """Whether uvloop can be imported (the ``afp-runtime[fast]`` extra)."""
    return importlib.util.find_spec("uvloop") is not None


def chosen_loop(loop: str | None = None) -> str:
    """The loop to run on, ``uvloop`` or ``asyncio``: ``loop``, else ``AFP_LOOP``, else ``auto``.

    Raises:
        ConfigError: an unknown choice, or ``uvloop`` asked for and not installed (field
            ``loop``).
    """
    choice = loop or os.environ.get(LOOP_ENV) or "auto"
    if choice not in LOOPS:
        raise ConfigError(
            f"{LOOP_ENV} must be one of {', '.join(LOOPS)}, not {choice!r}", field="loop"
        )
    if choice == "asyncio":
        return "asyncio"
    if uvloop_installed():
        return "uvloop"
    if choice == "uvloop":
        raise ConfigError(
            "uvloop is not installed: pip install 'afp-runtime[fast]', or choose asyncio",
            field="loop",
        )
    return "asyncio"


def backend_options(loop: str | None = None) -> dict[str, Any]:
    """anyio's asyncio ``backend_options`` for the chosen loop (see ``chosen_loop``)."""
    return {"use_uvloop": True} if chosen_loop(loop) == "uvloop" else {}


def run(main: Callable[[Unpack[Ts]], Awaitable[T]], *args: *Ts, loop: str | None = None) -> T:
    """Run ``main(*args)`` on the chosen loop (uvloop when installed) and return its result:
    ``afp.run(main)`` in place of ``anyio.run(main)`` for a program that serves a host.

    Raises:
        ConfigError: see ``chosen_loop``.
    """
    return anyio.run(main, *args, backend="asyncio", backend_options=backend_options(loop))


def running_loop() -> str:
    """The loop running now: ``uvloop`` or ``asyncio``."""
    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.partition(".")[0] == "uvloop" else "asyncio"
