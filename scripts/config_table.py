"""Rewrite docs/config.md's table of agent keys from the declaration of the agent options.

    python scripts/config_table.py [PATH]

The options are declared once, in ``afp_runtime/agents/options.py``
(docs/config.md#one-declaration); the table under "## Agent keys" is made from it. Run this
after changing an option: ``tests/loop/test_config_options.py`` fails while the page and the
declaration differ.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from afp_runtime.agents.options import keys_table  # noqa: E402

# The first table after the heading: its header line and every line of it that follows.
TABLE = re.compile(r"(## Agent keys\n(?:(?!\|).*\n)*)((?:\|.*\n)+)")


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs/config.md"
    text = path.read_text(encoding="utf-8")
    new, count = TABLE.subn(lambda m: m.group(1) + keys_table(), text, count=1)
    if count != 1:
        raise SystemExit(f"{path}: no table under '## Agent keys'")
    path.write_text(new, encoding="utf-8")
    print(f"{path}: agent keys table {'unchanged' if new == text else 'rewritten'}")


if __name__ == "__main__":
    main()
