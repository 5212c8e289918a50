"""Train the zstd dictionary the writes codec compresses bundle rows with
(docs/storage.md#the-writes-codec).

    PYTHONPATH=$PWD python scripts/codec_dictionary.py OUT.zdict [--store PATH ...] [--n 400]

Without ``--store`` it first makes its training stores in a temporary directory: every offline
scenario of ``tests/scenarios/`` and the one-agent benchmark's two afp loops
(``scripts/bench/compare.py --child afp-sliding`` and ``afp-full-history``, ``--n`` iterations
each). Every bundle row of those SQLite stores is read back through the codec and re-encoded as
the MessagePack the codec compresses; each 64-character hex digest and uuid in it is replaced
by a random one of the same shape first, so the dictionary learns the rows' shape and words,
never one store's digests or ids. It prints, as JSON, what it trained on and the sizes it gets.

A shipped dictionary is never replaced (rows name it): to use a new one, add it to
``afp_runtime/store/dictionaries/`` under a new name and give it the next format byte in
``codec.DICTIONARIES`` and ``codec.WRITE_WITH``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import sys
import tempfile
from pathlib import Path

import anyio
import msgspec
import zstandard

from afp_runtime.scenario import run_scenario
from afp_runtime.store import codec

ROOT = Path(__file__).resolve().parents[1]
_HEX = re.compile(rb"[0-9a-f]{64}")
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


async def _make_stores(into: Path, n: int) -> list[Path]:
    """The scenarios' stores and the benchmark loops' stores, made under ``into``."""
    stores: list[Path] = []
    for scenario in sorted((ROOT / "tests" / "scenarios").glob("*.json")):
        if scenario.name.endswith(".expected.json"):
            continue
        path = into / f"{scenario.stem}.sqlite"
        await run_scenario(await anyio.Path(scenario).read_text(), db_path=path)
        stores.append(path)
    for child in ("afp-sliding", "afp-full-history"):
        out = into / child
        await anyio.Path(out).mkdir()
        compare = str(ROOT / "scripts" / "bench" / "compare.py")
        args = ["--child", child, "--n", str(n), "--dir", str(out)]
        await anyio.run_process([sys.executable, compare, *args], check=True)
        stores.append(out / "afp.db")
    return stores


def _samples(stores: list[Path], rng: random.Random) -> list[bytes]:
    """Every bundle row of ``stores`` as the MessagePack the codec compresses, digests and
    uuids replaced by random ones (same length, so the MessagePack stays well formed)."""
    encoder = msgspec.msgpack.Encoder()
    found: list[bytes] = []
    for path in stores:
        db = sqlite3.connect(path)
        try:
            for (blob,) in db.execute("SELECT writes FROM bundles ORDER BY run, seq"):
                packed = encoder.encode(codec.decode(bytes(blob)))
                packed = _HEX.sub(lambda _: rng.randbytes(32).hex().encode(), packed)
                packed = _UUID.sub(lambda _: _uuid(rng).encode(), packed)
                found.append(packed)
        finally:
            db.close()
    return found


def _uuid(rng: random.Random) -> str:
    h = rng.randbytes(16).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the dictionary file to write")
    parser.add_argument("--store", type=Path, action="append", help="a SQLite store to train on")
    parser.add_argument("--n", type=int, default=400, help="iterations of each benchmark loop")
    parser.add_argument("--size", type=int, default=16384, help="the dictionary's bytes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stores = args.store or await _make_stores(Path(tmp), args.n)
        samples = _samples(stores, random.Random(0))
    trained = zstandard.train_dictionary(args.size, samples, level=19)
    await anyio.Path(args.out).write_bytes(trained.as_bytes())
    params = zstandard.ZstdCompressionParameters.from_level(
        3, format=zstandard.FORMAT_ZSTD1_MAGICLESS, write_checksum=0, write_dict_id=0
    )
    compressor = zstandard.ZstdCompressor(dict_data=trained, compression_params=params)
    compressed = sum(min(len(compressor.compress(s)), len(s)) for s in samples)
    report = {
        "stores": len(stores),
        "rows": len(samples),
        "plainBytes": sum(map(len, samples)),
        "compressedBytes": compressed,
        "dictionaryBytes": len(trained.as_bytes()),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    anyio.run(main)
