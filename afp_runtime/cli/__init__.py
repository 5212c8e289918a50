"""The ``afp`` command (docs/api.md#the-afp-command): one module per group of commands, each
imported only when one of its commands runs."""

from afp_runtime.cli._main import main

__all__ = ["main"]
