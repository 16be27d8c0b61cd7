"""``cercore demo``: CORE's stock queries over the bundled prefix of the WPI stock trace, and
the bundled data itself (``stock_schema``, ``stock_trace``, ``demo_queries``), which the
benchmarks reuse."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import cercore
from cercore.cli.common import add_backend
from cercore.errors import CercoreError
from cercore.io import read_events, write_complex_events


@dataclass(frozen=True)
class DemoQuery:
    name: str
    text: str


DEMO_QUERIES = ("s3_sell_buy_buy", "rising_price_run", "block_sells", "unanswered_sells")
DEMO_TIME_UNIT = "ms"  # stock_time is milliseconds since midnight (see data/README)


def data_path(name: str) -> Path:
    """A file bundled in ``cercore/data``."""
    return Path(str(resources.files("cercore") / "data" / name))


def stock_schema() -> cercore.Schema:
    """The stock trace's declaration (``stock_time`` is the primary time, in milliseconds)."""
    return cercore.Schema.parse(data_path("stocks.decl").read_text(), time_unit=DEMO_TIME_UNIT)


def demo_queries() -> list[DemoQuery]:
    """The demo's queries, in order."""
    return [DemoQuery(n, data_path(f"{n}.ceql").read_text().strip()) for n in DEMO_QUERIES]


def stock_trace(schema: cercore.Schema | None = None, limit: int | None = None):
    """The bundled stock trace prefix as a ``pyarrow.Table`` (optionally its first rows)."""
    table = read_events(data_path("stock_trace_prefix.csv"), schema or stock_schema())
    return table if limit is None else table.slice(0, limit)


def add_subcommands(sub) -> None:
    """Add ``demo`` to the ``cercore`` subparsers."""
    demo = sub.add_parser("demo", help="run the stock-market demo queries on the bundled trace",
                          description="Run CORE's stock queries over the bundled prefix of the "
                                      "WPI stock trace (24,887 events).")
    add_backend(demo)
    demo.add_argument("--limit", "-n", type=int, default=5, metavar="N",
                      help="complex events to show per query (default: 5)")
    demo.add_argument("--events", type=int, default=None, metavar="N",
                      help="use only the first N events of the trace")
    demo.set_defaults(func=cmd_demo)


def cmd_demo(args) -> int:
    if args.limit < 0:
        raise CercoreError("--limit must be >= 0")
    schema = stock_schema()
    table = stock_trace(schema, args.events)
    out = sys.stdout
    out.write(f"cercore {cercore.__version__} demo: {table.num_rows:,} events of the WPI stock "
              f"trace (prefix), backend {args.backend}"
              + (f" -> {cercore.BACKEND}" if args.backend == "auto" else "") + "\n")
    for dq in demo_queries():
        query = cercore.compile(dq.text, schema)
        engine = query.engine(backend=args.backend)
        t0 = time.perf_counter()
        shown, count = [], 0
        for ce in engine.process(table):
            if count < args.limit:
                shown.append(ce)
            count += 1
        elapsed = time.perf_counter() - t0
        rate = table.num_rows / elapsed if elapsed > 0 else float("inf")
        out.write(f"\n== {dq.name}\n")
        out.write("   " + dq.text.replace("\n", "\n   ") + "\n")
        out.write(f"-> {count:,} complex events in {elapsed:.2f} s "
                  f"({rate:,.0f} events/s)\n")
        if shown:
            out.write(f"first {len(shown)}:\n")
            write_complex_events(shown, out, "table")
    return 0
