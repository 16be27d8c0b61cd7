"""The ``cercore`` command line.

::

    cercore run QUERY --schema DECL --input FILE [--format jsonl|csv|table] [--backend B]
                [--time-attribute A --time-unit ms] [--on-error raise|skip] [--output FILE]
    cercore explain QUERY --schema DECL
    cercore demo [--backend B] [--limit N]

QUERY and DECL are file paths or inline text (an existing path is read). Errors cercore raises
on purpose are printed as one message on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import cercore
from cercore.errors import CercoreError
from cercore.io import (
    INPUT_FORMATS,
    OUTPUT_FORMATS,
    read_events,
    text_or_file,
    write_complex_events,
)
from cercore.trends.parse import is_trend_query

EXIT_USAGE = 2
PROG = "cercore"


# ---- the bundled stock demo ---------------------------------------------------------------
@dataclass(frozen=True)
class DemoQuery:
    name: str
    text: str


DEMO_QUERIES = ("s3_sell_buy_buy", "rising_price_run", "block_sells")
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


# ---- helpers ------------------------------------------------------------------------------
def load_schema(args) -> cercore.Schema:
    return cercore.Schema.parse(text_or_file(args.schema), time_attribute=args.time_attribute,
                                time_unit=args.time_unit)


def _add_schema_options(p: argparse.ArgumentParser, several: bool = False) -> None:
    if several:
        p.add_argument("query", metavar="QUERY", nargs="+",
                       help="CEQL query: a file path or the query text; several queries run "
                            "in one pass over the input, each output names its query")
    else:
        p.add_argument("query", metavar="QUERY", help="CEQL query: a file path or the query text")
    p.add_argument("--schema", "-s", required=True, metavar="DECL",
                   help="CREATE STREAM declarations: a file path or the text")
    p.add_argument("--time-attribute", metavar="A", default=None,
                   help="the int attribute that carries event time (instead of primary_time)")
    p.add_argument("--time-unit", default="s", choices=["s", "ms", "us", "ns"],
                   help="unit of the time attribute (default: s)")


def _add_backend(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="auto", choices=["auto", "python", "cython"],
                   help="evaluation backend (default: auto = cython when built)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Complex Event Recognition with CEQL queries (CORE).")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {cercore.__version__} (backend: {cercore.BACKEND})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser("run", help="evaluate a query over an event file",
                         description="Evaluate QUERY over the events of --input and write every "
                                     "complex event.")
    _add_schema_options(run, several=True)
    run.add_argument("--input", "-i", metavar="FILE", default="-",
                     help="events (.csv, .jsonl, .ndjson, .json, .parquet); '-' = stdin "
                          "(default)")
    run.add_argument("--input-format", choices=INPUT_FORMATS, default=None,
                     help="input format (default: from the extension; csv for stdin)")
    run.add_argument("--type-column", default="event_type",
                     help="name of the event-type column (default: event_type)")
    run.add_argument("--format", "-f", choices=OUTPUT_FORMATS, default="jsonl",
                     help="output format (default: jsonl)")
    run.add_argument("--output", "-o", metavar="FILE", default="-",
                     help="where to write complex events (default: stdout)")
    _add_backend(run)
    run.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                     help="bad events: stop with an error (raise, default) or skip and count "
                          "them (skip)")
    run.add_argument("--stream-column", default=None, metavar="NAME",
                     help="column naming each event's stream (for FROM and S>E); events "
                          "without one belong to every stream declaring their type")
    run.add_argument("--reorder-slack", type=int, default=None, metavar="D",
                     help="tolerate events up to D time units out of order: buffer them and "
                          "evaluate in time order (default: out-of-order time is an error)")
    run.add_argument("--stats", action="store_true", help="print engine counters on stderr")
    run.set_defaults(func=cmd_run)

    explain = sub.add_parser("explain", help="show how a query is compiled",
                             description="Print the parsed query, the normalised formula, the "
                                         "window, the partitioning and the automaton.")
    _add_schema_options(explain)
    explain.set_defaults(func=cmd_explain)

    demo = sub.add_parser("demo", help="run the stock-market demo queries on the bundled trace",
                          description="Run CORE's stock queries over the bundled prefix of the "
                                      "WPI stock trace (24,887 events).")
    _add_backend(demo)
    demo.add_argument("--limit", "-n", type=int, default=5, metavar="N",
                      help="complex events to show per query (default: 5)")
    demo.add_argument("--events", type=int, default=None, metavar="N",
                      help="use only the first N events of the trace")
    demo.set_defaults(func=cmd_demo)
    from cercore.network.cli import add_subcommands as add_network_subcommands
    add_network_subcommands(sub)  # cercore plan / cercore simulate (PrePP)
    return parser


# ---- commands -----------------------------------------------------------------------------
def query_names(paths: list[str]) -> list[str]:
    """A name per query of ``cercore run``: a file's stem, else q0, q1, ... (made unique)."""
    names: list[str] = []
    for i, p in enumerate(paths):
        name = Path(p).stem if "\n" not in p and len(p) < 4096 and os.path.isfile(p) else f"q{i}"
        while name in names:
            name += f"_{i}"
        names.append(name)
    return names


def cmd_run(args) -> int:
    schema = load_schema(args)
    texts = [text_or_file(q) for q in args.query]
    if any(is_trend_query(t) for t in texts):  # trend aggregation (COGRA): trends/cli.py
        if len(texts) > 1:
            raise CercoreError("a trend aggregation query runs alone: give one query")
        from cercore.trends.cli import run_command
        return run_command(args, texts[0], schema)
    queries = {n: cercore.compile(t, schema) for n, t in zip(query_names(args.query), texts)}
    for name, query in queries.items():
        for w in query.warnings:
            print(f"{PROG}: warning: {name}: {w}" if len(queries) > 1 else
                  f"{PROG}: warning: {w}", file=sys.stderr)
    if args.input == "-":
        table = read_events(sys.stdin.buffer, schema, args.input_format or "csv",
                            type_column=args.type_column, stream_column=args.stream_column,
                            on_error=args.on_error)
    else:
        table = read_events(args.input, schema, args.input_format, type_column=args.type_column,
                            stream_column=args.stream_column, on_error=args.on_error)
    options = dict(backend=args.backend, on_error=args.on_error, type_column=args.type_column,
                   reorder_slack=args.reorder_slack, stream_column=args.stream_column)
    engine = (next(iter(queries.values())).engine(**options) if len(queries) == 1
              else cercore.multi_engine(queries, **options))

    def everything():
        yield from engine.process(table)
        yield from engine.flush()

    write_complex_events(everything(), args.output, args.format,
                         with_query=len(queries) > 1)
    stats = engine.stats
    if stats.get("skipped"):
        reasons = ", ".join(f"{k}: {v}" for k, v in stats.get("skipped_by_reason", {}).items())
        print(f"{PROG}: skipped {stats['skipped']} invalid event(s)"
              + (f" ({reasons})" if reasons else ""), file=sys.stderr)
    if args.stats:
        for k, v in stats.items():
            print(f"{PROG}: {k} = {v}", file=sys.stderr)
    return 0


def cmd_explain(args) -> int:
    text, schema = text_or_file(args.query), load_schema(args)
    if is_trend_query(text):  # trend aggregation (COGRA): cercore/trends/cli.py
        from cercore.trends.cli import explain_command
        return explain_command(args, text, schema)
    query = cercore.compile(text, schema)
    print(query.explain())
    return 0


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


# ---- entry point --------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 ok, 2 usage or cercore error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0) if isinstance(exc.code, int) or exc.code is None else 2
    try:
        return args.func(args)
    except CercoreError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):  # e.g. `cercore run ... | head`
            _silence_stdout()
            return 0
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
