"""``module:attr`` references of config files, resolved beside the file first
(docs/config.md#tools)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from afp_runtime.errors import ConfigError, shown


def resolve_ref(ref: str, *, field: str, base_dir: Path | None = None) -> Any:
    """Import ``module:attr``, looking for the module beside the config file (``base_dir``),
    then in the working directory, then on ``sys.path``.

    Raises:
        ConfigError: the reference is malformed, its module cannot be found or raises while
            importing (any exception), or it has no such attribute; names the field.
    """
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{field} must look like 'module:attr', not {shown(ref)}", field=field)
    module = _import(module_name, ref=ref, field=field, base_dir=base_dir)
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"{field}: {module_name!r} has no {attr!r}", field=field)
        target = getattr(target, part)
    return target


def _import(module_name: str, *, ref: str, field: str, base_dir: Path | None) -> Any:
    # The config's own directory and the working directory go first, for the import only.
    searched = [str(path) for path in (base_dir, Path.cwd()) if path is not None]
    saved = list(sys.path)
    sys.path[:0] = [path for path in dict.fromkeys(searched) if path not in sys.path]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module_name + ".").startswith(exc.name + "."):
            raise ConfigError(
                f"{field}: importing {module_name!r} for {ref!r} raised ModuleNotFoundError: {exc}",
                field=field,
            ) from exc
        where = ", ".join([*searched, "sys.path"])
        raise ConfigError(
            f"{field}: cannot import {module_name!r} for {ref!r} (looked in {where}): {exc}",
            field=field,
        ) from exc
    except (Exception, SystemExit) as exc:  # SyntaxError, NameError, sys.exit(): it is broken
        raise ConfigError(
            f"{field}: importing {module_name!r} for {ref!r} raised {type(exc).__name__}: {exc}",
            field=field,
        ) from exc
    finally:
        sys.path[:] = saved
