"""``cercore run`` and ``cercore explain``: CEQL queries or a trend aggregation query over an
event file, or a stream read line by line (stdin, ``--follow``: see ``cercore.cli.streaming``).

QUERY and DECL are file paths or inline text (an existing path is read).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import cercore
from cercore.cli import streaming
from cercore.cli.common import PROG, add_backend
from cercore.cli.streaming import EventSource
from cercore.errors import CercoreError
from cercore.input.files import text_or_file
from cercore.input.options import EngineOptions
from cercore.io import INPUT_FORMATS, OUTPUT_FORMATS, write_complex_events, write_rows
from cercore.trends.query import CompiledTrendQuery


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
    p.add_argument("--time-unit", default=None, choices=["s", "ms", "us", "ns"],
                   help="unit of integer times (default: the declaration's "
                        "primary_time(unit), else s)")


def add_subcommands(sub) -> None:
    """Add ``run`` and ``explain`` to the ``cercore`` subparsers."""
    run = sub.add_parser("run", help="evaluate a query over an event file or stream",
                         description="Evaluate QUERY over the events of --input and write every "
                                     "complex event. Standard input (CSV or JSON Lines) and "
                                     "--follow are read line by line: each complex event is "
                                     "written as soon as the line completing it is read.")
    _add_schema_options(run, several=True)
    run.add_argument("--input", "-i", metavar="FILE", default="-",
                     help="events (.csv, .jsonl, .ndjson, .json, .parquet); '-' = stdin "
                          "(default)")
    run.add_argument("--input-format", choices=INPUT_FORMATS, default=None,
                     help="input format (default: from the extension; csv for stdin)")
    streaming.add_options(run)
    run.add_argument("--type-column", default="event_type",
                     help="name of the event-type column (default: event_type)")
    run.add_argument("--format", "-f", choices=OUTPUT_FORMATS, default="jsonl",
                     help="output format (default: jsonl)")
    run.add_argument("--output", "-o", metavar="FILE", default="-",
                     help="where to write complex events (default: stdout)")
    add_backend(run)
    run.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                     help="bad events: stop with an error (raise, default) or skip and count "
                          "them (skip)")
    run.add_argument("--stream-column", default=None, metavar="NAME",
                     help="column naming each event's stream (for FROM and S>E); events "
                          "without one belong to every stream declaring their type")
    run.add_argument("--reorder-slack", type=int, default=None, metavar="D",
                     help="tolerate events up to D time units out of order: buffer them and "
                          "evaluate in time order (default: out-of-order time is an error)")
    run.add_argument("--advance", type=_time_argument, default=None, metavar="T",
                     help="at the end of the input, event time has reached T (a watermark: an "
                          "integer time, or a timestamp such as 2024-03-01T09:35:00): "
                          "ABSENT(...) deadlines before T fire (default: nothing is known past "
                          "the last event, so they do not)")
    run.add_argument("--stats", action="store_true", help="print engine counters on stderr")
    run.add_argument("--workers", type=int, default=None, metavar="N",
                     help="threads over a file read whole: a windowed query's file cut in "
                          "time (T-CER slices; a trend query's runs but the first go to worker "
                          "processes), else a keyed query's partitions split among them; the "
                          "same output (default: the machine's cores where a CEQL query's file "
                          "is cut in time, else one)")
    run.set_defaults(func=cmd_run)

    explain = sub.add_parser("explain", help="show how a query is compiled",
                             description="Print the parsed query, the normalised formula, the "
                                         "window, the partitioning and the automaton.")
    _add_schema_options(explain)
    explain.set_defaults(func=cmd_explain)


def _time_argument(text: str) -> int | str:
    """``--advance``: an integer time, or a timestamp (ISO-8601 text, read by ``advance``)."""
    try:
        return int(text)
    except ValueError:
        return text


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
    # cercore.compile gives either kind: a CEQL query or a trend aggregation (COGRA) query
    queries = {n: cercore.compile(t, schema) for n, t in zip(query_names(args.query), texts)}
    trends = [q for q in queries.values() if isinstance(q, CompiledTrendQuery)]
    if trends and len(queries) > 1:
        raise CercoreError("a trend aggregation query runs alone: give one query")
    for name, query in queries.items():
        for w in getattr(query, "warnings", ()):
            print(f"{PROG}: warning: {name}: {w}" if len(queries) > 1 else
                  f"{PROG}: warning: {w}", file=sys.stderr)
    source = EventSource(args, schema, args.stream_column)  # stdin and --follow: live
    options = EngineOptions(backend=args.backend, on_error=args.on_error,
                            type_column=args.type_column, reorder_slack=args.reorder_slack,
                            stream_column=args.stream_column)
    engine = (next(iter(queries.values())).engine(options=options) if len(queries) == 1
              else cercore.multi_engine(queries, options=options))
    if trends:
        return _run_trends(args, trends[0], engine, source)

    def everything():
        yield from source.feed(engine, args.workers)
        yield from engine.flush()
        if args.advance is not None:  # event time has reached it: deadlines before it fire
            yield from engine.advance(args.advance)

    with source.naming(engine):
        write_complex_events(everything(), args.output, args.format,
                             with_query=len(queries) > 1, stream=source.live)
    source.finish()
    stats = engine.stats
    if stats.get("skipped"):
        reasons = ", ".join(f"{k}: {v}" for k, v in stats.get("skipped_by_reason", {}).items())
        print(f"{PROG}: skipped {stats['skipped']} invalid event(s)"
              + (f" ({reasons})" if reasons else ""), file=sys.stderr)
    if args.stats:
        for k, v in stats.items():
            print(f"{PROG}: {k} = {v}", file=sys.stderr)
    return 0


def _run_trends(args, query: CompiledTrendQuery, engine, source: EventSource) -> int:
    """The rest of ``cercore run`` for a trend query: one row per (window, group), written
    as each window closes when the input is live."""

    def everything():
        yield from source.feed(engine, args.workers)
        if args.advance is not None:  # event time has reached it: the windows it closes
            yield from engine.advance(args.advance)
        yield from engine.flush()

    with source.naming(engine):
        n_rows = write_rows(everything(), query.columns, args.output, args.format,
                            stream=source.live)
    source.finish()
    skipped = engine.skips.count
    if skipped:
        print(f"{PROG}: skipped {skipped} invalid event(s)", file=sys.stderr)
    if args.stats:
        print(f"{PROG}: events_read = {engine.events_read}", file=sys.stderr)
        print(f"{PROG}: rows = {n_rows}", file=sys.stderr)
        print(f"{PROG}: backend = {engine.backend}", file=sys.stderr)
    return 0


def cmd_explain(args) -> int:
    """Print how the query (CEQL or trend aggregation) is compiled."""
    print(cercore.compile(text_or_file(args.query), load_schema(args)).explain())
    return 0
