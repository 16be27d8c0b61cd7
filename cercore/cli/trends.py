"""``cercore run`` / ``cercore explain`` for trend aggregation queries (``cercore.cli.ceql``
dispatches here when the query text is one, see ``is_trend_query``)."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable

from cercore.cli.streaming import EventSource
from cercore.errors import CercoreError
from cercore.io import format_value, open_output
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


def write_rows(rows: Iterable[dict], columns: list[str], out, fmt: str,
               stream: bool = False) -> int:
    """Rows as JSON lines, CSV (header first) or an aligned table; how many were written.
    Counts stay exact integers in every format.

    ``stream``: ``rows`` is a live feed -- each row is written and flushed as it comes, and
    a table's columns are as wide as their names or the first row's cells (with room to
    grow) instead of the widest cell of all rows."""
    n = 0
    with open_output(out) as f:
        flush = f.flush if stream else _no_flush
        if fmt == "jsonl":
            for r in rows:
                f.write(json.dumps(r) + "\n")
                flush()
                n += 1
        elif fmt == "csv":
            w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
            w.writeheader()
            flush()
            for r in rows:
                w.writerow(r)
                flush()
                n += 1
        elif stream:
            widths: list[int] | None = None
            for r in rows:
                cells = [format_value(r.get(c)) for c in columns]
                if widths is None:
                    widths = [max(len(c), len(v)) + 2 for c, v in zip(columns, cells)]
                    f.write(_aligned(columns, widths))
                f.write(_aligned(cells, widths))
                flush()
                n += 1
        else:
            rows = list(rows)
            n = len(rows)
            cells = [columns] + [[format_value(r.get(c)) for c in columns] for r in rows]
            widths = [max(len(str(row[i])) for row in cells) for i in range(len(columns))]
            for row in cells:
                f.write(_aligned(row, widths))
    return n


def _aligned(cells: list, widths: list[int]) -> str:
    return "  ".join(str(v).rjust(w) for v, w in zip(cells, widths)).rstrip() + "\n"


def _no_flush() -> None:
    pass


def _advanced(engine, args) -> list:
    """``--advance T``: the rows of the windows that event time T closes."""
    t = getattr(args, "advance", None)
    return [] if t is None else engine.advance(t)
