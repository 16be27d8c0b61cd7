"""LIKE against a hostile string: ``FILTER A[x LIKE '(a+)+$']`` on one event whose ``x`` is ``n``
``a``s and a ``b`` -- exponential in ``n`` under a backtracking engine, linear under RE2 (what
cercore runs, DESIGN.md "Filters") -- pushed and in bulk, on each backend.

    python bench/bench_like.py [--sizes 26,10000,1000000] [--pattern '(a|aa)+c']

Process CPU time per event, each path on a fresh engine (so the per-pattern memo of the scalar
form never answers).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


import cercore  # noqa: E402
from cercore.runtime.backend import CYTHON_AVAILABLE  # noqa: E402

SCHEMA = "CREATE STREAM S { EVENT A { x:string } }"
QUERY = "SELECT * FROM S WHERE A FILTER A[x LIKE '{pattern}']"


def cpu_seconds(run) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def measure(n: int, backend: str, pattern: str) -> dict[str, float]:
    """Seconds of CPU for one hostile event through ``push`` and through bulk ``process``."""
    event = {"x": "a" * n + "b"}
    query = cercore.compile(QUERY.format(pattern=pattern.replace("'", "''")), SCHEMA)
    push_engine, bulk_engine = query.engine(backend), query.engine(backend)
    return {"push": cpu_seconds(lambda: push_engine.push("A", event)),
            "bulk": cpu_seconds(lambda: list(bulk_engine.process([("A", event)])))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="26,10000,1000000",
                        help="comma-separated counts of 'a' before the 'b'")
    parser.add_argument("--pattern", default="(a+)+$",
                        help="the LIKE pattern ('(a|aa)+c' must scan the whole string)")
    args = parser.parse_args(argv)
    backends = ["python"] + (["cython"] if CYTHON_AVAILABLE else [])
    print(f"{'n':>9}  {'backend':<7}  {'push (s)':>10}  {'bulk (s)':>10}")
    for n in (int(s) for s in args.sizes.split(",")):
        for backend in backends:
            got = measure(n, backend, args.pattern)
            print(f"{n:>9}  {backend:<7}  {got['push']:>10.6f}  {got['bulk']:>10.6f}", flush=True)


if __name__ == "__main__":
    main()
