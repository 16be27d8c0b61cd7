"""Absence: what ABSENT(...) and a deadline cost beside the same query without them.

Each pair runs over the stock trace replayed (times shifted), from a pyarrow Table (bulk) and
pushed one event at a time, on each backend, interleaved (``runner.best_of_each``), CPU time:

* ``between``: ``SELL AS s ; BUY AS b`` against ``SELL AS s ; ABSENT(SELL) ; BUY AS b``
  (PARTITION BY name, WITHIN 1 SECONDS);
* ``deadline``: big sells (``FILTER s[volume >= 1000]``, PARTITION BY name, WITHIN 2 SECONDS)
  against the same ``; ABSENT(BUY) WITHIN 2 SECONDS`` (the unanswered ones, reported when
  event time passes their deadline).

``--memory N`` also pushes N events of the trace cycled through the deadline query in a fresh
process per backend and reports RSS (as ``cercore-bench realtime --memory`` does).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cercore
from cercore.bench.runner import text_table
from cercore.errors import CercoreError

PAIRS = {
    "between": ("SELECT * FROM S WHERE SELL AS s ; BUY AS b PARTITION BY [name] "
                "WITHIN 1 SECONDS",
                "SELECT * FROM S WHERE SELL AS s ; ABSENT(SELL) ; BUY AS b PARTITION BY [name] "
                "WITHIN 1 SECONDS"),
    "deadline": ("SELECT * FROM S WHERE SELL AS s FILTER s[volume >= 1000] PARTITION BY [name] "
                 "WITHIN 2 SECONDS",
                 "SELECT * FROM S WHERE SELL AS s ; ABSENT(BUY) WITHIN 2 SECONDS "
                 "FILTER s[volume >= 1000] PARTITION BY [name] WITHIN 2 SECONDS"),
}
DEADLINE_QUERY = PAIRS["deadline"][1]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--replay", type=int, default=4, metavar="R",
                   help="the real trace R times over (default 4: 99,548 events)")
    p.add_argument("--push-events", type=int, default=20_000, metavar="N",
                   help="events pushed one at a time per pass (default 20,000)")
    p.add_argument("--backend", default="all", choices=["auto", "python", "cython", "all"])
    p.add_argument("--repeat", type=int, default=3, metavar="R", help="best of R (default 3)")
    p.add_argument("--memory", type=int, default=0, metavar="N",
                   help="also push N events through the deadline query per backend and "
                        "report RSS growth (e.g. 10000000)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write results.json and results.csv there")


def measure(backends: list[str], replay: int, push_events: int, repeat: int) -> list[dict]:
    """One row per pair, path and backend: events/s without and with the absence, outputs,
    and the ratio (with / without)."""
    from cercore.bench import datasets, realtime, runner

    schema = datasets.schema("stock_trace")
    table = datasets.stock_trace(None, replay=replay)
    records = realtime.records(datasets.stock_trace(push_events))
    rows = []
    for pair, texts in PAIRS.items():
        plain, absent = (cercore.compile(t, schema) for t in texts)
        for backend in backends:
            counts: dict[str, int] = {}
            for path, make, n in (("bulk", _bulk, table.num_rows),
                                  ("push", _pushed, len(records))):
                data = table if path == "bulk" else records
                fns = {key: make(q, backend, data, counts, key)
                       for key, q in (("without", plain), ("with", absent))}
                seconds = runner.best_of_each(fns, repeat, "cpu")
                rows.append({"experiment": "absence", "pair": pair, "path": path,
                             "backend": backend, "events": n,
                             "outputs_without": counts["without"],
                             "outputs_with": counts["with"],
                             "ev_s_without": n / seconds["without"],
                             "ev_s_with": n / seconds["with"],
                             "ratio": seconds["without"] / seconds["with"]})
    return rows


def _bulk(q, backend: str, table, counts: dict, key: str):
    """A timed pass: a fresh engine over the whole table, its outputs counted."""
    return lambda: counts.__setitem__(
        key, sum(1 for _ in q.engine(backend).process(table, workers=1)))


def _pushed(q, backend: str, records: list, counts: dict, key: str):
    """A timed pass: a fresh engine, each record pushed, then flushed."""
    from cercore.bench.realtime import push_count

    return lambda: counts.__setitem__(key, push_count(q.engine(backend), records))


def format_rows(rows: list[dict]) -> str:
    head = (f"{'pair':<9}{'path':<6}{'backend':<8}{'events':>9}{'out w/o':>9}{'out with':>9}"
            f"{'k ev/s w/o':>12}{'k ev/s with':>12}{'with/w/o':>10}")
    return text_table(head, "{pair:<9}{path:<6}{backend:<8}{events:>9,}{outputs_without:>9,}"
                      "{outputs_with:>9,}{k_without:>12.1f}{k_with:>12.1f}{ratio:>9.2f}x",
                      [{**r, "k_without": r["ev_s_without"] / 1e3,
                        "k_with": r["ev_s_with"] / 1e3} for r in rows])


def run(args: argparse.Namespace) -> int:
    """``cercore-bench absence``: print the table (``--out``: results.json / .csv)."""
    from cercore.bench import realtime
    from cercore.bench.cli import _backends, _write

    if args.replay < 1 or args.repeat < 1 or args.push_events < 1:
        raise CercoreError("--replay, --repeat and --push-events must be >= 1")
    backends = _backends(args.backend)
    rows = measure(backends, args.replay, args.push_events, args.repeat)
    print(f"cercore {cercore.__version__}: absence beside the same query without it; stock "
          f"trace, CPU time, best of {args.repeat}, interleaved")
    print(format_rows(rows))
    memory = []
    if args.memory:
        memory = realtime.memory_rows(backends, args.memory, DEADLINE_QUERY)
        print(f"\nMemory under push, deadline query, {args.memory:,} events (the trace cycled)")
        print(realtime.format_memory(memory))
    if args.out:
        _write(rows + memory, Path(args.out), "absence")
    sys.stdout.flush()
    return 0
