"""cercore (Cython and Python backends) against pycer, the CORE authors' C++ engine, on the
paper's stock queries over the bundled trace, measured in one run on the same events.

    python bench/bench_peers.py [--pycer-python /path/to/python3.13] [--repeat R]

pycer ships wheels for CPython 3.13 only, so it runs in its own interpreter through
``cercore/bench/pycer_driver.py`` (found via ``--pycer-python``, ``$CERCORE_PYCER_PYTHON`` or
``/work/peers/py313/bin/python``; skipped with a note when absent). Before any number is
reported, the complex events' [start_time, end_time] intervals of every engine must be equal
as multisets. Timed: cercore ``engine.process`` consumed to the end (every complex event
built), best of R with a fresh engine; pycer ``send_events`` + ``get_output`` (its output text
holds every complex event), best of R with a fresh server, event construction excluded.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cercore  # noqa: E402
from cercore.bench.peers import find_pycer, run_pycer  # noqa: E402
from cercore.cli.demo import data_path, stock_schema, stock_trace  # noqa: E402
from cercore.runtime.backend import CYTHON_AVAILABLE  # noqa: E402

QUERIES = {
    "S3": data_path("s3_sell_buy_buy.ceql").read_text(),
    "S3 no-output": data_path("s3_sell_buy_buy.ceql").read_text().replace("'QQQ'", "'NONE'"),
    "S3 w=2T": data_path("s3_sell_buy_buy.ceql").read_text().replace("10000", "20000"),
}


def run_cercore(query, table, backend: str, repeat: int) -> tuple[float, list]:
    best, intervals = float("inf"), []
    for _ in range(repeat):
        engine = query.engine(backend)
        t0 = time.perf_counter()
        ces = list(engine.process(table, workers=1))
        best = min(best, time.perf_counter() - t0)
        intervals = sorted([ce.start_time, ce.end_time] for ce in ces)
    return best, intervals


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pycer-python", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    schema = stock_schema()
    table = stock_trace(schema)
    pycer_python = find_pycer(args.pycer_python)
    decl = data_path("stocks.decl").read_text()
    if pycer_python is None:
        print("pycer: no Python 3.13 with pycer found (--pycer-python); comparing backends only")
    backends = ["python"] + (["cython"] if CYTHON_AVAILABLE else [])
    n = table.num_rows
    print(f"stock trace: {n:,} events; best of {args.repeat}; events/second (ratio to pycer)")
    print(f"{'query':<14}{'outputs':>10}" + "".join(f"{b:>20}" for b in backends)
          + f"{'pycer':>14}")
    for name, text in QUERIES.items():
        q = cercore.compile(text, schema)
        results = {b: run_cercore(q, table, b, args.repeat) for b in backends}
        ref = results["python"][1]
        assert all(r[1] == ref for r in results.values()), f"{name}: backends disagree"
        peer = None
        if pycer_python:
            peer = run_pycer(pycer_python, decl, text, table, args.repeat)
            assert peer["intervals"] == ref, f"{name}: pycer and cercore disagree"
        cells = []
        for b in backends:
            rate = n / results[b][0]
            ratio = f" ({peer['seconds'] / results[b][0]:.1f}x)" if peer else ""
            cells.append(f"{rate:>,.0f}{ratio}")
        print(f"{name:<14}{len(ref):>10,}" + "".join(f"{c:>20}" for c in cells)
              + (f"{n / peer['seconds']:>14,.0f}" if peer else f"{'-':>14}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
