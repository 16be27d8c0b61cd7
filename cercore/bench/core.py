"""``cercore-bench core``, the quick default experiment of ``cercore-bench``
(``cercore.bench.cli``): events/second of the engine on the bundled stock trace. The paper's
experiments are ``cercore-bench suite`` and ``cercore-bench scaling`` (``cercore.bench``).

For each demo query it runs a warm-up pass, then times ``--repeat`` passes (best kept) with a
fresh engine each and the garbage collector paused (as ``timeit`` does), split into

* ``process``: ``engine.process(table)`` consumed to the end: decoding, predicates, evaluation
  and enumeration of every complex event (positions only);
* ``ce.events``: building ``ce.events`` (the matched events with their attributes) for every
  complex event of one pass, which is what a consumer that reads outputs also pays.

``python bench/bench_stock.py`` runs the same from a source checkout; ``bench/`` also holds the
pytest-benchmark suites (``python -m pytest bench``).
"""

from __future__ import annotations

import argparse
import gc
import time
from dataclasses import dataclass

import cercore
from cercore.cli.demo import demo_queries, stock_schema, stock_trace
from cercore.errors import CercoreError
from cercore.runtime.backend import CYTHON_AVAILABLE


@dataclass
class Result:
    query: str
    backend: str
    events: int
    complex_events: int
    process_s: float
    events_s: float

    @property
    def rate(self) -> float:
        return self.events / self.process_s if self.process_s > 0 else float("inf")


def time_query(query: cercore.CompiledQuery, table, backend: str, repeat: int = 3,
               warmup: bool = True) -> tuple[int, float, float]:
    """(complex events, best process seconds, best seconds to build ``ce.events``)."""
    best_p = best_e = float("inf")
    count = 0
    for i in range(repeat + (1 if warmup else 0)):
        engine = query.engine(backend=backend)
        gc.collect()
        gc_was_enabled = gc.isenabled()
        gc.disable()  # as timeit does: keep collector pauses out of the numbers
        try:
            t0 = time.perf_counter()
            ces = list(engine.process(table, workers=1))
            t1 = time.perf_counter()
            for ce in ces:
                ce.events  # noqa: B018 - materialise
            t2 = time.perf_counter()
        finally:
            if gc_was_enabled:
                gc.enable()
        count = len(ces)
        del ces, engine
        if warmup and i == 0:
            continue
        best_p, best_e = min(best_p, t1 - t0), min(best_e, t2 - t1)
    return count, best_p, best_e


def run_bench(n_events: int | None = None, backends: list[str] | None = None, repeat: int = 3,
              names: list[str] | None = None, warmup: bool = True) -> list[Result]:
    schema = stock_schema()
    table = stock_trace(schema, n_events)
    results = []
    for dq in demo_queries():
        if names and dq.name not in names:
            continue
        query = cercore.compile(dq.text, schema)
        for backend in backends or ["auto"]:
            count, p, e = time_query(query, table, backend, repeat, warmup)
            resolved = cercore.BACKEND if backend == "auto" else backend
            results.append(Result(dq.name, resolved, table.num_rows, count, p, e))
    return results


def format_results(results: list[Result]) -> str:
    header = ("query", "backend", "events", "complex events", "process s", "events/s",
              "ce.events s")
    rows = [(r.query, r.backend, f"{r.events:,}", f"{r.complex_events:,}", f"{r.process_s:.3f}",
             f"{r.rate:,.0f}", f"{r.events_s:.3f}") for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    left = {0, 1}

    def fmt(row) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths)))

    lines = [fmt(header), fmt(["-" * w for w in widths]), *map(fmt, rows)]
    by_query: dict[str, dict[str, Result]] = {}
    for r in results:
        by_query.setdefault(r.query, {})[r.backend] = r
    ratios = [f"  {q}: cython is {b['python'].process_s / b['cython'].process_s:.1f}x python"
              for q, b in by_query.items() if {"python", "cython"} <= b.keys()
              and b["cython"].process_s > 0]
    if ratios:
        lines += ["", "speed-up (process):", *ratios]
    return "\n".join(lines)


def add_core_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", type=int, default=None, metavar="N",
                   help="use the first N events of the trace (default: all 24,887)")
    p.add_argument("--backend", default="auto", choices=["auto", "python", "cython", "all"],
                   help="backend to time; 'all' times every available one and prints ratios")
    p.add_argument("--repeat", type=int, default=3, metavar="R",
                   help="timed passes per query, best kept (default: 3, after one warm-up)")
    p.add_argument("--query", action="append", metavar="NAME",
                   help="only this demo query (repeatable); names: "
                        + ", ".join(q.name for q in demo_queries()))


def run_core(args) -> int:
    """``cercore-bench core``: the demo queries on the bundled trace."""
    backends = ([args.backend] if args.backend != "all"
                else ["python"] + (["cython"] if CYTHON_AVAILABLE else []))
    if args.repeat < 1:
        raise CercoreError("--repeat must be >= 1")
    results = run_bench(args.events, backends, args.repeat, args.query)
    print(f"cercore {cercore.__version__}, stock trace prefix, best of {args.repeat} "
          f"(after a warm-up), fresh engine per pass")
    print(format_results(results))
    return 0
