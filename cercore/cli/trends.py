"""``cercore run`` / ``cercore explain`` for trend aggregation queries (``cercore.cli.ceql``
dispatches here when the query text is one, see ``is_trend_query``)."""

from __future__ import annotations

import csv
import json
import sys

from cercore.errors import CercoreError
from cercore.io import format_value, open_output, read_events
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
    if args.input == "-":
        table = read_events(sys.stdin.buffer, schema, args.input_format or "csv",
                            type_column=args.type_column, on_error=args.on_error)
    else:
        table = read_events(args.input, schema, args.input_format,
                            type_column=args.type_column, on_error=args.on_error)
    engine = query.engine(backend=args.backend, on_error=args.on_error,
                          type_column=args.type_column)
    rows = list(engine.process(table)) + engine.flush()
    write_rows(rows, query.columns, args.output, args.format)
    skipped = engine.skips.count
    if skipped:
        print(f"cercore: skipped {skipped} invalid event(s)", file=sys.stderr)
    if getattr(args, "stats", False):
        print(f"cercore: events_read = {engine.events_read}", file=sys.stderr)
        print(f"cercore: rows = {len(rows)}", file=sys.stderr)
        print(f"cercore: backend = {engine.backend}", file=sys.stderr)
    return 0


def write_rows(rows: list[dict], columns: list[str], out, fmt: str) -> None:
    """Rows as JSON lines, CSV (header first) or an aligned table. Counts stay exact
    integers in every format."""
    with open_output(out) as f:
        if fmt == "jsonl":
            for r in rows:
                f.write(json.dumps(r) + "\n")
        elif fmt == "csv":
            w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        else:
            cells = [columns] + [[format_value(r.get(c)) for c in columns] for r in rows]
            widths = [max(len(str(row[i])) for row in cells) for i in range(len(columns))]
            for row in cells:
                f.write("  ".join(str(v).rjust(w) for v, w in zip(row, widths)).rstrip() + "\n")
