"""Correlated queries: predicates between events beside the same query without them.

Each pair is a query that relates events (the same name, a higher price, a rising run) and
its uncorrelated twin (the equality written as PARTITION BY, or the inequality left out). Both
run over the stock trace from a pyarrow Table (bulk) and pushed one event at a time, on each
backend, interleaved (``runner.best_of_each``), process CPU time. Per correlated run the table
also shows the predicate checks (events checked as they joined an enumerated path), the
branches pruned, and the CPU time per check (the whole run's time divided by its checks: an
upper bound on what one check costs).

``--spark R``: the keyed Spark plan (``cercore.spark.find``, local[2], Parquet in and out) of
the "same name" and "higher price" pairs over the trace replayed R times, wall and process-tree
CPU time, interleaved.

``--max-run N``: the non-contiguous ``SELECT MAX`` rising run over the first N events, beside
the same query without the predicate (the number of rising runs in a window can grow
exponentially with the BUY events it holds, and MAX chooses among all of them).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import cercore
from cercore.bench.runner import text_table
from cercore.errors import CercoreError

W10 = "WITHIN 10 SECONDS"
PAIRS = {
    "same name": (
        f"SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER s.name = b.name {W10}",
        f"SELECT * FROM S WHERE SELL AS s ; BUY AS b PARTITION BY [name] {W10}"),
    "same name x3": (
        "SELECT * FROM S WHERE SELL AS s ; BUY AS b ; SELL AS c FILTER s.name = b.name AND "
        "b.name = c.name WITHIN 2 SECONDS",
        "SELECT * FROM S WHERE SELL AS s ; BUY AS b ; SELL AS c PARTITION BY [name] "
        "WITHIN 2 SECONDS"),
    "higher price": (
        f"SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b.price > s.price "
        f"PARTITION BY [name] {W10}",
        f"SELECT * FROM S WHERE SELL AS s ; BUY AS b PARTITION BY [name] {W10}"),
    "higher price by 0.1%": (  # arithmetic between events: computed by the kernel too
        f"SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b.price > s.price * 1.001 "
        f"PARTITION BY [name] {W10}",
        f"SELECT * FROM S WHERE SELL AS s ; BUY AS b PARTITION BY [name] {W10}"),
    "two inequalities": (
        "SELECT * FROM S WHERE SELL AS s ; BUY AS b ; SELL AS c FILTER b.price > s.price AND "
        "c.price > b.price PARTITION BY [name] WITHIN 2 SECONDS",
        "SELECT * FROM S WHERE SELL AS s ; BUY AS b ; SELL AS c PARTITION BY [name] "
        "WITHIN 2 SECONDS"),
    "rising run :+": (
        f"SELECT * FROM S WHERE BUY:+ AS r FILTER r.price < NEXT(r).price "
        f"PARTITION BY [name] {W10}",
        f"SELECT * FROM S WHERE BUY:+ AS r PARTITION BY [name] {W10}"),
    "MAX rising run :+": (
        f"SELECT MAX * FROM S WHERE BUY:+ AS r FILTER r.price < NEXT(r).price "
        f"PARTITION BY [name] {W10}",
        f"SELECT MAX * FROM S WHERE BUY:+ AS r PARTITION BY [name] {W10}"),
    "NEXT higher price": (
        f"SELECT NEXT * FROM S WHERE SELL AS s ; BUY AS b FILTER b.price > s.price "
        f"PARTITION BY [name] {W10}",
        f"SELECT NEXT * FROM S WHERE SELL AS s ; BUY AS b PARTITION BY [name] {W10}"),
}
MAX_RUN = (
    f"SELECT MAX * FROM S WHERE BUY+ AS r FILTER r.price < NEXT(r).price "
    f"PARTITION BY [name] {W10}",
    f"SELECT MAX * FROM S WHERE BUY+ AS r PARTITION BY [name] {W10}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", type=int, default=None, metavar="N",
                   help="bulk: the first N events of the trace (default: all 24,887)")
    p.add_argument("--push-events", type=int, default=10_000, metavar="N",
                   help="events pushed one at a time per pass (default 10,000)")
    p.add_argument("--pair", action="append", choices=sorted(PAIRS),
                   help="pairs to run (repeatable; default: all)")
    p.add_argument("--max-run", type=int, default=1_000, metavar="N",
                   help="the non-contiguous MAX rising run over the first N events (default "
                        "1,000; 0 skips it)")
    p.add_argument("--spark", type=int, default=0, metavar="R",
                   help="also run the keyed Spark plan of two pairs on local[2] over the trace "
                        "replayed R times (default 0: no Spark)")
    p.add_argument("--backend", default="all", choices=["auto", "python", "cython", "all"])
    p.add_argument("--repeat", type=int, default=3, metavar="R", help="best of R (default 3)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write results.json and results.csv there")


def measure(backends: list[str], pairs: list[str], events: int | None, push_events: int,
            repeat: int, max_run: int) -> list[dict]:
    """One row per pair, path and backend: events/s of the correlated query and its twin,
    their outputs, the ratio (correlated / twin rate), checks, branches pruned, ns/check."""
    from cercore.bench import datasets, realtime

    schema = datasets.schema("stock_trace")
    table = datasets.stock_trace(events)
    records = realtime.records(datasets.stock_trace(push_events))
    work = [(name, *PAIRS[name], table, records) for name in pairs]
    if max_run:
        run_table = datasets.stock_trace(max_run)
        work.append(("MAX rising run +", *MAX_RUN, run_table, None))
    # warm-up: the first query of a process pays imports and caches, not its own work
    list(cercore.compile(PAIRS["higher price"][0], schema).engine().process(table.slice(0, 200)))
    rows = []
    for name, correlated, twin, data, pushed in work:
        queries = {"correlated": cercore.compile(correlated, schema),
                   "twin": cercore.compile(twin, schema)}
        for backend in backends:
            for path, items in (("bulk", data), ("push", pushed)):
                if items is None:
                    continue
                rows.append(_pair_row(name, path, backend, queries, items, repeat))
    return rows


def _pair_row(name: str, path: str, backend: str, queries: dict, items, repeat: int) -> dict:
    from cercore.bench import runner

    runs: dict[str, dict] = {}
    fns = {key: _timed_pass(q, backend, path, items, runs, key) for key, q in queries.items()}
    seconds = runner.best_of_each(fns, repeat, "cpu")
    n = items.num_rows if path == "bulk" else len(items)
    work = runs["correlated"]["work"]
    checks = work.get("predicate_checks", 0)
    return {"experiment": "correlated", "pair": name, "path": path, "backend": backend,
            "events": n, "outputs": runs["correlated"]["outputs"],
            "outputs_twin": runs["twin"]["outputs"],
            "ev_s": n / seconds["correlated"], "ev_s_twin": n / seconds["twin"],
            "ratio": seconds["twin"] / seconds["correlated"],
            "checks": checks, "pruned": work.get("branches_pruned", 0),
            "ns_per_check": seconds["correlated"] * 1e9 / checks if checks else None}


def _timed_pass(q, backend: str, path: str, items, runs: dict, key: str):
    """A timed pass: a fresh engine over the table (or each record pushed, then flushed);
    its outputs and work counts kept for the row."""
    from cercore.bench.realtime import push_count

    def one() -> None:
        engine = q.engine(backend)
        if path == "bulk":
            outputs = sum(1 for _ in engine.process(items, workers=1))
        else:
            outputs = push_count(engine, items)
        runs[key] = {"outputs": outputs, "work": engine.stats["work"]}
    return one


SPARK_PAIRS = ("same name", "higher price")


def spark_rows(replay: int, repeat: int) -> list[dict]:
    """The keyed Spark plan of ``SPARK_PAIRS`` on local[2]: seconds (best wall of ``repeat``,
    interleaved, and that run's process-tree CPU) and complex events written."""
    import shutil
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from cercore.bench import datasets
    from cercore.bench.spark import session, spark_run

    table = datasets.stock_trace(None, replay=replay)
    table = table.append_column("seq", pa.array(range(table.num_rows), pa.int64()))
    decl = datasets.schema("stock_trace")
    work = Path(tempfile.mkdtemp(prefix="cercore-correlated-"))
    rows = []
    try:
        pq.write_table(table, work / "in.parquet")
        spark = session("local[2]")
        try:
            for name in SPARK_PAIRS:
                best: dict[str, tuple[float, float]] = {}
                for _ in range(repeat):
                    for key, text in zip(("correlated", "twin"), PAIRS[name]):
                        out = str(work / f"{key}.parquet")
                        wall, cpu = spark_run(spark, str(work / "in.parquet"), out, text, decl)
                        if key not in best or wall < best[key][0]:
                            best[key] = (wall, cpu)
                n_out = {key: spark.read.parquet(str(work / f"{key}.parquet")).count()
                         for key in best}
                rows.append({"experiment": "correlated-spark", "pair": name,
                             "master": "local[2]", "events": table.num_rows,
                             "outputs": n_out["correlated"], "outputs_twin": n_out["twin"],
                             "wall": best["correlated"][0], "wall_twin": best["twin"][0],
                             "cpu": best["correlated"][1], "cpu_twin": best["twin"][1],
                             "ratio": best["correlated"][0] / best["twin"][0]})
        finally:
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def format_spark(rows: list[dict]) -> str:
    head = (f"{'pair':<14}{'events':>9}{'outputs':>10}{'twin out':>10}{'wall s':>8}"
            f"{'twin wall':>10}{'cpu s':>8}{'twin cpu':>9}{'wall ratio':>11}")
    return text_table(head, "{pair:<14}{events:>9,}{outputs:>10,}{outputs_twin:>10,}{wall:>8.2f}"
                      "{wall_twin:>10.2f}{cpu:>8.1f}{cpu_twin:>9.1f}{ratio:>10.2f}x", rows)


def format_rows(rows: list[dict]) -> str:
    head = (f"{'pair':<19}{'path':<6}{'backend':<8}{'events':>8}{'outputs':>9}{'twin out':>9}"
            f"{'k ev/s':>9}{'twin k ev/s':>12}{'ratio':>7}{'checks':>10}{'pruned':>10}"
            f"{'ns/check':>9}")
    return text_table(head, "{pair:<19}{path:<6}{backend:<8}{events:>8,}{outputs:>9,}"
                      "{outputs_twin:>9,}{k_ev_s:>9.1f}{k_ev_s_twin:>12.1f}{ratio:>6.2f}x"
                      "{checks:>10,}{pruned:>10,}{per:>9}",
                      [{**r, "k_ev_s": r["ev_s"] / 1e3, "k_ev_s_twin": r["ev_s_twin"] / 1e3,
                        "per": "-" if r["ns_per_check"] is None else f"{r['ns_per_check']:.0f}"}
                       for r in rows])


def run(args: argparse.Namespace) -> int:
    """``cercore-bench correlated``: print the table (``--out``: results.json / .csv)."""
    from cercore.bench.cli import _backends, _write

    if args.repeat < 1 or args.push_events < 1 or args.max_run < 0 \
            or (args.events is not None and args.events < 1):
        raise CercoreError("--events, --repeat and --push-events must be >= 1, --max-run >= 0")
    backends = _backends(args.backend)
    started = time.perf_counter()
    rows = measure(backends, args.pair or list(PAIRS), args.events, args.push_events,
                   args.repeat, args.max_run)
    print(f"cercore {cercore.__version__}: correlated queries beside their uncorrelated twins; "
          f"stock trace, CPU time, best of {args.repeat}, interleaved; ratio = correlated "
          "rate / twin rate")
    print(format_rows(rows))
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.spark:
        spark = spark_rows(args.spark, args.repeat)
        print(f"\nThe keyed Spark plan, local[2], Parquet in and out, best wall of {args.repeat} "
              "(ratio = correlated / twin time)")
        print(format_spark(spark))
        rows += spark
    if args.out:
        _write(rows, Path(args.out), "correlated")
    sys.stdout.flush()
    return 0
