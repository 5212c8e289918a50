"""``afp scenario run``: an offline scenario file, its result JSON (docs/scenarios.md)."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import structlog

from afp_runtime.cli._exits import EXIT_OK, UsageError
from afp_runtime.cli._show import write_json
from afp_runtime.errors import NotFound
from afp_runtime.scenario import decode_scenario, encode_result, run_scenario


async def cmd_scenario_run(args: Any) -> int:
    """Run a scenario file offline and print or write its result JSON."""
    if not args.verbose:
        # Scripted failures (tool errors, 5xx replies) log warnings by design: errors only.
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    try:
        data = await anyio.Path(args.file).read_bytes()
    except OSError as exc:
        raise NotFound(f"cannot read {args.file}: {exc}", what="file", value=args.file) from exc
    scenario = decode_scenario(data)
    if args.db is not None:
        result = await run_scenario(scenario, db_path=args.db)
    else:
        folder = await anyio.to_thread.run_sync(tempfile.mkdtemp)
        try:
            result = await run_scenario(scenario, db_path=Path(folder) / "scenario.db")
        finally:
            await anyio.to_thread.run_sync(shutil.rmtree, folder)
    encoded = encode_result(result)
    if args.out is not None:
        try:
            await anyio.Path(args.out).write_bytes(encoded)
        except OSError as exc:
            raise UsageError(f"cannot write --out {args.out}: {exc.strerror or exc}") from exc
    else:
        write_json(encoded.removesuffix(b"\n"))  # write_json ends the line again
    return EXIT_OK
