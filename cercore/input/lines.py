"""Events of CSV or JSON Lines text read one line at a time: standard input, a growing file.

``cercore.input.files.read_events`` reads a whole file into an Arrow table, the fast path. A
pipe or a file that is still being written has no end to wait for: ``LineEvents`` turns its
lines into event records one at a time, and reads a line only when the engine asks for the
next event, so an engine fed with it (``engine.process(records)``, a live iterable) yields the
complex events a line completes before the next line is read::

    lines = stream_lines(sys.stdin.buffer)        # or FollowedFile("events.csv", 30.0)
    records = LineEvents(lines, schema, "csv")
    for ce in engine.process(r for r, _ in records):
        ...

The header check, the conversion of cells and JSON values, the messages and the treatment of
a bad row are ``cercore.input.files``': a bad row raises its ``EventError`` (naming the line), or
with ``on_error="skip"`` becomes a ``cercore.input.Rejected`` record, which the engine skips
and counts as "unreadable in the file" -- as it does a row the bulk reader rejected.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any

from cercore.errors import CercoreError, EventError, did_you_mean
from cercore.input.decode import Rejected
from cercore.input.files import (
    _column_types,
    _csv_header,
    _csv_line_rows,
    _json_line,
    _json_row,
    read_events,
)
from cercore.input.options import checked_on_error
from cercore.schema import Schema
from cercore.types import AttrType

__all__ = ["LINE_FORMATS", "FollowedFile", "LineEvents", "stream_lines"]

LINE_FORMATS = ("csv", "jsonl")
Record = tuple[str | None, dict[str, Any]] | Rejected


def stream_lines(f: IO[bytes]) -> Iterator[bytes]:
    """The lines of a binary stream (a pipe, stdin), each as soon as its newline has arrived;
    the last one may lack a newline (the stream ended)."""
    readline = f.readline
    while line := readline():
        yield line


class FollowedFile:
    """The lines of a file, then the lines appended to it, like ``tail -f``.

    A line is given once its newline has been written: a partial last line waits for the
    rest. Iteration stops when nothing has been appended for ``idle_timeout`` seconds (None:
    it never stops by itself; close the iterator or interrupt it). New data is looked for
    every ``poll`` seconds at most (sooner right after data arrived). The file is followed
    by its open descriptor (a file renamed away is still followed; a truncated file is an
    error). When iteration stops, ``unterminated`` holds a last line still lacking its
    newline (b"" if none); it is not given."""

    def __init__(self, path: str | os.PathLike, idle_timeout: float | None = None,
                 poll: float = 0.2) -> None:
        if idle_timeout is not None and idle_timeout < 0:
            raise CercoreError(f"the idle timeout must be >= 0 seconds, not {idle_timeout}")
        self.path = path
        self.idle_timeout = idle_timeout
        self.poll = poll
        self.unterminated = b""
        self.stop_requested = False  # ``request_stop``: interrupt at the next wait

    def request_stop(self) -> None:
        """Make iteration raise ``KeyboardInterrupt`` when it next waits for data (safe from a
        signal handler: the interrupt then lands between lines, never inside the engine)."""
        self.stop_requested = True

    def __iter__(self) -> Iterator[bytes]:
        with open(self.path, "rb") as f:
            readline = f.readline
            pending = b""
            last_data = time.monotonic()
            wait = 0.0
            while True:
                chunk = readline()
                if chunk:
                    last_data = time.monotonic()
                    wait = 0.0
                    if chunk.endswith(b"\n"):
                        line, pending = pending + chunk, b""
                        self.unterminated = b""
                        yield line
                    else:  # the writer is in the middle of the line: wait for its end
                        pending += chunk
                        self.unterminated = pending
                    continue
                if os.fstat(f.fileno()).st_size < f.tell():
                    raise CercoreError(f"{self.path}: the file was truncated while it was "
                                       "followed")
                if self.stop_requested:
                    raise KeyboardInterrupt
                idle = time.monotonic() - last_data
                if self.idle_timeout is not None and idle >= self.idle_timeout:
                    return
                wait = min(self.poll, max(0.01, 2 * wait))
                if self.idle_timeout is not None:
                    wait = min(wait, self.idle_timeout - idle)
                time.sleep(max(wait, 0.0))


class LineEvents:
    """The events of CSV or JSON Lines text given one line at a time (bytes, line ends kept).

    Iterating yields ``(record, stream)`` pairs in line order: ``record`` is a ``(type,
    attributes)`` pair for an engine (a type's declared attributes; a CSV cell or JSON key of
    an attribute the type does not declare is ignored, as in a table) or a ``Rejected``
    record for a bad row with ``on_error="skip"``; ``stream`` is the row's ``stream_column``
    value (None: untagged). Each line is read only when the pair before it has been consumed.
    ``line`` is the line number of the last row given and ``count`` how many were given.

    CSV: the first line is the header. JSON Lines: an absent key is null, blank lines are
    ignored; text whose first non-blank line starts with ``[`` is one JSON array of objects,
    which ``start()`` reads whole (it cannot be read line by line)."""

    def __init__(self, lines: Iterable[bytes], schema: Schema, format: str = "csv",
                 type_column: str = "event_type", stream_column: str | None = None,
                 on_error: str = "raise", where: str = "<stdin>") -> None:
        if format not in LINE_FORMATS:
            raise CercoreError(f"cannot read {format!r} line by line; use one of "
                               + ", ".join(LINE_FORMATS))
        checked_on_error(on_error)
        self.schema = schema
        self.format = format
        self.type_column = type_column
        self.stream_column = stream_column
        self.skip = on_error == "skip"
        self.where = where
        self.types: dict[str, AttrType] = _column_types(schema, type_column, stream_column)
        self.declared = {n: tuple(a for a, _ in e.attributes)
                         for n, e in schema.event_types.items()}
        self.line = 0  # lines read so far; after a row is given: its (last) line
        self.count = 0
        self._lines = iter(lines)
        self._first: Any = None  # the first line (JSON Lines: its first non-blank line)
        self._header: list[str] = []
        self._started = False
        self._array = False

    # ---- the first line -------------------------------------------------------------------
    def start(self):
        """Read the first line: check a CSV header; for JSON Lines, find whether the text is
        one JSON array. Returns None -- the rows follow line by line -- or, for a JSON array,
        the whole input as a ``pyarrow.Table`` (as ``read_events`` reads it). Called by the
        first iteration if not before."""
        if self._started:
            return None
        self._started = True
        if self.format == "csv":
            raw = next(self._lines, b"")
            self.line += 1
            self._first = raw.decode("utf-8-sig", "replace")
            self._header = _csv_header(self._first, self.types, self.type_column, self.where)
            return None
        first = self._next_json_line()
        while isinstance(first, str) and not first.strip():
            first = self._next_json_line()
        if isinstance(first, str) and first.lstrip().startswith("["):
            self._array = True
            data = first.encode() + b"".join(self._lines)
            return read_events(io.BytesIO(data), self.schema, "jsonl",
                               type_column=self.type_column, stream_column=self.stream_column,
                               on_error="skip" if self.skip else "raise")
        self._first = first
        return None

    # ---- rows -----------------------------------------------------------------------------
    def __iter__(self) -> Iterator[tuple[Record, str | None]]:
        if self.start() is not None or self._array:
            raise CercoreError(f"{self.where}: one JSON array, not JSON lines: read the table "
                               "start() returned")
        rows = self._csv_rows() if self.format == "csv" else self._json_rows()
        tc, sc = self.type_column, self.stream_column
        fill = self.format == "jsonl"  # an absent key is null (a CSV row has every column)
        declared = self.declared
        for values, problem in rows:
            self.count += 1
            if problem is not None:
                if not self.skip:
                    raise problem
                yield Rejected(str(problem)), None
                continue
            typ = values.pop(tc, None)
            tag = values.pop(sc, None) if sc is not None else None
            own = declared.get(typ, ()) if isinstance(typ, str) else ()
            attrs = {a: values.get(a) for a in own} if fill else \
                {a: values[a] for a in own if a in values}
            if tag is not None and tag not in self.schema.streams:
                err = EventError(f"{self.where}, line {self.line}: unknown stream {tag!r}"
                                 + did_you_mean(tag, self.schema.streams), field=sc)
                if not self.skip:
                    raise err
                yield Rejected(str(err)), None
                continue
            yield (typ, attrs), tag

    def _csv_rows(self) -> Iterator[tuple[dict[str, Any], EventError | None]]:
        return _csv_line_rows(self._csv_texts(), self._header, self.types, self.type_column,
                              self.where, self.schema.time_attribute)

    def _csv_texts(self) -> Iterator[str]:
        """The CSV text's lines, the header first; each read when the csv module asks."""
        yield self._first
        lines = self._lines
        for raw in lines:
            self.line += 1
            yield raw.decode("utf-8", "replace")

    def _json_rows(self) -> Iterator[tuple[dict[str, Any], EventError | None]]:
        where, types, tc = self.where, self.types, self.type_column
        text = self._first
        while text is not None:
            if isinstance(text, EventError) or text.strip():
                number = self.line
                obj = text if isinstance(text, EventError) else _json_line(text, number, where)
                yield _json_row(obj, types, tc, f"{where}, line {number}",
                                self.schema.time_attribute)
            text = self._next_json_line()

    def _next_json_line(self) -> str | EventError | None:
        """The next line's text, an EventError for a line that is not UTF-8 (a BOM is
        allowed on the first), None at the end."""
        raw = next(self._lines, None)
        if raw is None:
            return None
        self.line += 1
        try:
            return raw.decode("utf-8-sig" if self.line == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            return EventError(f"{self.where}, line {self.line}: not UTF-8 text (byte "
                              f"0x{raw[exc.start]:02x})")
