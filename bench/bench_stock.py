"""Events/second of cercore on the bundled stock trace, for the demo queries.

    python bench/bench_stock.py [--events N] [--backend auto|python|cython|all] [--repeat R]

The same as the installed ``cercore-bench`` command (``cercore.bench.cli``); this script also
works from a source checkout without installing.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cercore.bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
