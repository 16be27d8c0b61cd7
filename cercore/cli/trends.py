"""``cercore run`` / ``cercore explain`` for trend aggregation queries (``cercore.cli.ceql``
dispatches here when the query text is one, see ``is_trend_query``)."""

from __future__ import annotations

import sys

from cercore.cli.streaming import EventSource
from cercore.errors import CercoreError
from cercore.io import write_rows
from cercore.schema import Schema
from cercore.trends.query import compile_trend


def explain_command(args, text: str, schema: Schema) -> int:
    """Print the automaton, predicate classes, window and granularity choice (and why)."""
    print(compile_trend(text, schema).explain(getattr(args, "backend", "auto")))
    return 0


def run_command(args, text: str, schema: Schema) -> int:
    """Evaluate the trend query over ``--input`` and write one row per (window, group)."""
    if getattr(args, "stream_column", None):
        raise CercoreError("--stream-column is not supported for trend queries")
    if getattr(args, "reorder_slack", None) is not None:
        raise CercoreError("--reorder-slack is not supported for trend queries; sort the "
                           "input by time")
    query = compile_trend(text, schema)
    source = EventSource(args, schema)  # stdin and --follow: live, rows out as windows close
    engine = query.engine(backend=args.backend, on_error=args.on_error,
                          type_column=args.type_column)
    if source.live:
        def everything():
            yield from source.feed(engine)
            yield from _advanced(engine, args)
            yield from engine.flush()

        with source.naming(engine):
            n_rows = write_rows(everything(), query.columns, args.output, args.format,
                                stream=True)
        source.finish()
    else:
        rows = list(source.feed(engine)) + _advanced(engine, args) + engine.flush()
        n_rows = write_rows(rows, query.columns, args.output, args.format)
    skipped = engine.skips.count
    if skipped:
        print(f"cercore: skipped {skipped} invalid event(s)", file=sys.stderr)
    if getattr(args, "stats", False):
        print(f"cercore: events_read = {engine.events_read}", file=sys.stderr)
        print(f"cercore: rows = {n_rows}", file=sys.stderr)
        print(f"cercore: backend = {engine.backend}", file=sys.stderr)
    return 0


def _advanced(engine, args) -> list:
    """``--advance T``: the rows of the windows that event time T closes."""
    t = getattr(args, "advance", None)
    return [] if t is None else engine.advance(t)
