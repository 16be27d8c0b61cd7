"""Cython vs pure-Python backend throughput on the paper's sequence query S3 over the bundled
stock trace, split into what the engine costs end to end and what the evaluator alone costs,
and under each selection strategy. (Window size, stream length and memory over a long stream:
``cercore-bench scaling``.)

    python bench/bench_backends.py [--repeat R]

Two measurements per row:

* ``engine``: ``engine.process(table)`` end to end (decode, letters, partitions, evaluator,
  ``ComplexEvent`` objects), what a user sees;
* ``kernel``: the evaluator alone (``evaluator.run`` over precomputed letters / partition ids /
  times, consuming the (start, end, positions) tuples), i.e. Algorithm 1 + 2 + reclamation.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


import cercore  # noqa: E402
from cercore.cli.demo import stock_schema, stock_trace  # noqa: E402
from cercore.runtime.backend import CYTHON_AVAILABLE  # noqa: E402

S3 = ("SELECT * FROM S WHERE (SELL as T1; BUY as T2; BUY as T3) FILTER T1[name = 'INTC'] "
      "AND T2[name = 'RIMM'] AND T3[name = 'QQQ'] WITHIN {w} [stock_time]")
S3_NO_OUTPUT = S3.replace("'QQQ'", "'NO SUCH NAME'")
T = 10000
# the stock workloads under each selection strategy: a sequence and a Kleene run per stock
STRATEGY_QUERIES = [
    ("S3", S3.format(w=T)),
    ("rising run", "SELECT * FROM S WHERE (BUY as T1; BUY+ as T2; BUY as T3) "
                   "FILTER T1[name = 'MSFT'] AND T2[name = 'MSFT' AND price > 26.0] "
                   "AND T3[name = 'MSFT' AND price > 26.5] WITHIN 1000 [stock_time]"),
]


def engine_rate(query, table, backend: str, repeat: int) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeat):
        engine = query.engine(backend)
        t0 = time.perf_counter()
        count = sum(1 for _ in engine.process(table, workers=1))
        best = min(best, time.perf_counter() - t0)
    return table.num_rows / best, count


def arrays_rate(query, table, backend: str, repeat: int) -> tuple[float, int]:
    """``engine.process_arrays``: the bulk path (numpy out, no object per complex event)."""
    best, count = float("inf"), 0
    for _ in range(repeat):
        engine = query.engine(backend)
        t0 = time.perf_counter()
        count = len(engine.process_arrays(table, workers=1))
        best = min(best, time.perf_counter() - t0)
    return table.num_rows / best, count


def kernel_inputs(query, table):
    """The evaluator's batch inputs as the engine computes them (one batch per Arrow batch)."""
    engine = query.engine("python")
    batches = []
    for batch in engine.input.batches(table):
        args, _, n_read = engine._prepare(batch)
        batches.append(args)
        engine._finish(batch, None, n_read)
    return engine, batches


def kernel_rate(query, table, backend: str, repeat: int) -> tuple[float, int, int]:
    """(events/s, complex events, peak tECS nodes) of the evaluator alone."""
    ref, batches = kernel_inputs(query, table)
    best, count, peak = float("inf"), 0, 0
    for _ in range(repeat):
        engine = query.engine(backend)  # fresh det/encoder/evaluator; letters are interned alike
        for b in ref.encoder.keys:
            engine.encoder.letter(b)
        ev = engine.evaluator
        count = peak = 0
        t0 = time.perf_counter()
        for batch in batches:
            for _ in ev.run(batch):
                count += 1
            peak = max(peak, ev.memory_nodes())
        best = min(best, time.perf_counter() - t0)
    return table.num_rows / best, count, peak


def fmt(x: float) -> str:
    return f"{x:,.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if not CYTHON_AVAILABLE:
        print("the Cython backend is not built (python setup.py build_ext --inplace)")
        return 1
    schema = stock_schema()
    table = stock_trace(schema)
    print(f"stock trace: {table.num_rows:,} events; best of {args.repeat}\n")

    print(f"{'query':<14}{'measure':<8}{'python ev/s':>14}{'cython ev/s':>14}{'ratio':>8}"
          f"{'outputs':>10}")
    for name, text in (("S3", S3), ("S3 no-output", S3_NO_OUTPUT)):
        q = cercore.compile(text.format(w=T), schema)
        for measure, fn in (("engine", engine_rate), ("arrays", arrays_rate),
                            ("kernel", kernel_rate)):
            py = fn(q, table, "python", args.repeat)
            cy = fn(q, table, "cython", args.repeat)
            assert py[1] == cy[1]
            print(f"{name:<14}{measure:<8}{fmt(py[0]):>14}{fmt(cy[0]):>14}"
                  f"{cy[0] / py[0]:>7.1f}x{py[1]:>10,}")

    print("\nSelection strategies (engine, whole trace)")
    print(f"{'query':<22}{'python ev/s':>14}{'cython ev/s':>14}{'ratio':>8}{'outputs':>10}")
    for name, text in STRATEGY_QUERIES:
        for strategy in ("ALL", "STRICT", "NEXT", "LAST", "MAX"):
            q = cercore.compile(text.replace("SELECT *", f"SELECT {strategy} *"), schema)
            py = engine_rate(q, table, "python", args.repeat)
            cy = engine_rate(q, table, "cython", args.repeat)
            assert py[1] == cy[1]
            print(f"{name + ' ' + strategy:<22}{fmt(py[0]):>14}{fmt(cy[0]):>14}"
                  f"{cy[0] / py[0]:>7.1f}x{py[1]:>10,}")

    return 0


if __name__ == "__main__":
    sys.exit(main())
