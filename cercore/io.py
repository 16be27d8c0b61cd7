"""Files in and out: events read from files (``read_events``, from ``cercore.input.files``) and
every writer of results -- complex events (``write_complex_events``, ``format_table``) and
trend-aggregation rows (``write_rows``) -- as JSON lines, CSV or an aligned table::

    table = cercore.io.read_events("trades.csv", schema)
    ces = cercore.run(query, schema, table)
    cercore.io.write_complex_events(ces, "out.jsonl", "jsonl")
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import shutil
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from cercore.errors import CercoreError
from cercore.input.files import INPUT_FORMATS, guess_format, read_events

__all__ = ["INPUT_FORMATS", "OUTPUT_FORMATS", "format_table", "guess_format", "read_events",
           "write_complex_events", "write_rows"]

OUTPUT_FORMATS = ("jsonl", "csv", "table")


# ---- writing -------------------------------------------------------------------------------
def _json_default(v: Any) -> Any:
    if isinstance(v, dt.datetime):  # event times read as instants: ISO-8601, as read
        return v.isoformat()
    item = getattr(v, "item", None)  # numpy scalars
    if item is not None:
        return item()
    if isinstance(v, (set, frozenset, tuple)):
        return list(v)
    raise TypeError(f"{type(v).__name__} is not JSON serialisable")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=_json_default)


@contextmanager
def open_output(out):
    """A text stream for ``out``: stdout for None or "-", a file opened for writing for a
    path, else ``out`` itself (an open stream)."""
    if out is None or out == "-":
        yield sys.stdout
    elif isinstance(out, (str, os.PathLike)):
        with open(out, "w", encoding="utf-8", newline="") as f:
            yield f
    else:
        yield out


def write_complex_events(ces: Iterable, out=None, format: str = "jsonl", *,
                         width: int | None = None, max_lines: int = 4,
                         with_query: bool = False, stream: bool = False) -> int:
    """Write complex events to ``out`` (a path, a text file object, or ``None``/``"-"`` for
    stdout) as they arrive; return how many were written.

    ``format``: ``"jsonl"`` (one ``ce.to_dict()`` per line), ``"csv"`` (columns start, end,
    start_time, end_time, positions, events; the last two as compact JSON) or ``"table"``
    (fixed-width text for people; ``width`` defaults to the terminal's, each complex event takes
    at most ``max_lines`` lines). ``with_query``: the items are ``QueryMatch`` objects of a
    multi-query engine; CSV gets a leading ``query`` column (JSON lines and tables name the
    query of every item anyway).

    ``stream``: ``ces`` is a live feed -- each complex event is written and flushed as soon as
    it arrives, and a table sizes its number columns from the first complex event (with room
    to grow) instead of waiting for the first 200.
    """
    if format not in OUTPUT_FORMATS:
        raise CercoreError(f"unknown output format {format!r}; use one of "
                           + ", ".join(OUTPUT_FORMATS))
    n = 0
    with open_output(out) as f:
        flush = f.flush if stream else _no_flush
        if format == "jsonl":
            for ce in ces:
                f.write(_dumps(ce.to_dict()) + "\n")
                flush()
                n += 1
        elif format == "csv":
            w = csv.writer(f, lineterminator="\n")
            lead = ["query"] if with_query else []
            w.writerow(lead + ["start", "end", "start_time", "end_time", "positions", "events"])
            flush()
            for ce in ces:
                d = ce.to_dict()
                w.writerow([d["query"] for _ in lead]
                           + [d["start"], d["end"], _blank(d["start_time"]), _blank(d["end_time"]),
                              _dumps(d["positions"]), _dumps(d["events"])])
                flush()
                n += 1
        else:
            if width is None:
                width = _terminal_width(f)
            counter = [0]
            for block in _table_lines(ces, width, max_lines, counter,
                                      1 if stream else _WIDTH_SAMPLE):
                f.write(block + "\n")
                flush()
            n = counter[0]
        f.flush()
    return n


def _no_flush() -> None:
    pass


def _blank(v: Any) -> Any:
    return "" if v is None else v.isoformat() if isinstance(v, dt.datetime) else v


def _terminal_width(f) -> int:
    if f in (sys.stdout, sys.stderr) and f.isatty():
        return max(60, shutil.get_terminal_size((100, 24)).columns)
    return 100


def format_value(v: Any) -> str:
    """An attribute value as shown in tables: strings bare, floats shortest, null as null."""
    if v is None:
        return "null"
    item = getattr(v, "item", None)
    if item is not None:
        v = item()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dt.datetime):
        return v.isoformat()
    return str(v)


def format_event(e) -> str:
    """``TYPE(name=INTC, price=27.8)``; null attributes are left out."""
    attrs = ", ".join(f"{k}={format_value(v)}" for k, v in e.attributes.items() if v is not None)
    return f"{e.type}({attrs})"


def format_table(ces: Iterable, width: int = 100, max_lines: int = 4) -> str:
    """Complex events as a fixed-width text table (what ``--format table`` prints)."""
    return "\n".join(_table_lines(ces, width, max_lines, [0]))


_WIDTH_SAMPLE = 200  # rows buffered to size the number columns before streaming the rest


def _table_lines(ces: Iterable, width: int, max_lines: int, counter: list[int],
                 sample: int = _WIDTH_SAMPLE) -> Iterator[str]:
    """The table's lines, the number columns sized from the first ``sample`` complex events:
    the heading, then one item per complex event (its lines joined by newlines);
    ``counter[0]`` counts the complex events written."""
    max_lines = max(2, max_lines)
    it = iter(ces)
    head: list = []
    for ce in it:
        head.append(ce)
        if len(head) >= sample:
            break
    if not head:
        yield "(no complex events)"
        return
    # several queries (QueryMatch items): a column names each item's query
    names = [str(ce.query) for ce in head if getattr(ce, "query", None) is not None]
    w_q = max([5] + [len(n) for n in names]) if names else 0
    w_no = max(1, len(str(len(head))))
    w_start = max([5] + [len(str(ce.start)) for ce in head])
    w_end = max([3] + [len(str(ce.end)) for ce in head])
    if len(head) >= sample:  # more may follow: leave room to grow
        w_no, w_start, w_end = max(w_no, 6), w_start + 2, w_end + 2
    q_w = w_q + 2 if w_q else 0
    prefix_w = w_no + q_w + w_start + w_end + 6
    ev_w = max(20, width - prefix_w)
    q_head, q_rule = (f"{'query':<{w_q}}  ", f"{'-' * w_q}  ") if w_q else ("", "")
    yield (f"{'#':>{w_no}}  {q_head}{'start':>{w_start}}  {'end':>{w_end}}  events\n"
           f"{'-' * w_no}  {q_rule}{'-' * w_start}  {'-' * w_end}  {'-' * min(ev_w, 40)}")
    for ce in _chain(head, it):
        counter[0] += 1
        count = counter[0]
        parts = [format_event(e) for e in ce.events]
        chunks = _wrap_events(parts, ev_w, max_lines)
        query = f"{str(getattr(ce, 'query', '')):<{w_q}}  " if w_q else ""
        first = f"{count:>{w_no}}  {query}{ce.start:>{w_start}}  {ce.end:>{w_end}}  "
        yield "\n".join([(first + chunks[0]).rstrip()]
                         + [" " * prefix_w + chunk for chunk in chunks[1:]])


def _chain(head: list, rest: Iterator) -> Iterator:
    yield from head
    yield from rest


def _wrap_events(parts: list[str], width: int, max_lines: int) -> list[str]:
    """Join ``parts`` with `` ; `` into lines of at most ``width`` characters, breaking between
    events (an over-long event is cut with ``…``); at most ``max_lines`` lines, the last one
    saying how many events were left out."""
    if not parts:
        return ["(no events)"]
    lines: list[str] = []
    cur = ""
    for i, p in enumerate(parts):
        if len(p) > width:
            p = p[:width - 1] + "…"
        piece = p if not cur else cur + " ; " + p
        if len(piece) <= width:
            cur = piece
            continue
        lines.append(cur + " ;")
        cur = p
        if len(lines) >= max_lines - 1:
            rest = len(parts) - i
            tail = f"… (+{rest} more event{'s' if rest != 1 else ''})"
            if i == len(parts) - 1 and len(p) <= width:
                tail = p
            elif len(p) + 3 + len(tail) <= width:
                tail = f"{p} ; … (+{rest - 1} more event{'s' if rest - 1 != 1 else ''})"
            lines.append(tail)
            return lines
    lines.append(cur)
    return lines


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
                f.write(json.dumps(r, default=_json_default) + "\n")
                flush()
                n += 1
        elif fmt == "csv":
            w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
            w.writeheader()
            flush()
            for r in rows:
                w.writerow({k: _blank(v) if isinstance(v, dt.datetime) else v
                            for k, v in r.items()})
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
