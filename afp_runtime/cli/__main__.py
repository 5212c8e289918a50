"""``python -m afp_runtime.cli``."""

import sys

from afp_runtime.cli._main import main

sys.exit(main())
