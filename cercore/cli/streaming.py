"""Where ``cercore run`` reads its events: a file in bulk, or a live stream line by line.

Standard input in CSV or JSON Lines (``--input -``, the default; unless it is a regular
file, ``< events.csv``) and a followed file (``--follow``, like ``tail -f``) are read one line
at a time (``cercore.input.lines``) and fed to
the engine as a live iterable: the engine evaluates each event before the next line is read,
and the writer flushes each complex event (or trend row) as it comes. Files, Parquet (stdin
too) and a JSON array are read whole into an Arrow table first (``cercore.io.read_events``),
which is much faster when all the events are there already.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cercore.cli.common import PROG
from cercore.errors import CercoreError, EventError
from cercore.input.files import locate_row
from cercore.input.lines import LINE_FORMATS, FollowedFile, LineEvents, stream_lines
from cercore.io import guess_format, read_events
from cercore.schema import Schema


def add_options(run: argparse.ArgumentParser) -> None:
    """Add ``--follow`` and ``--idle-timeout`` to ``cercore run``."""
    run.add_argument("--follow", action="store_true",
                     help="keep reading lines appended to --input FILE (CSV or JSON Lines), "
                          "like tail -f, writing each complex event as soon as its last line "
                          "is read")
    run.add_argument("--idle-timeout", type=float, default=None, metavar="SECONDS",
                     help="with --follow: stop (as at the end of the input) after SECONDS "
                          "without new data (default: never; stop with Ctrl-C)")
    run.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="show how much of a file read whole has been evaluated, on stderr "
                          f"(default: when stderr is a terminal and the file has at least "
                          f"{PROGRESS_MIN_EVENTS:,} events)")


PROGRESS_MIN_EVENTS = 200_000  # below this a file is done before a progress line helps


class Progress:
    """A one-line progress display on a text stream: ``events  n / total  (p%)`` rewritten
    in place (carriage return), cleared at the end."""

    def __init__(self, total: int, out=None) -> None:
        self.total = total
        self.out = out if out is not None else sys.stderr
        self.shown = False
        self.done = 0
        self.lock = threading.Lock()  # (T-CER runs advance it from their threads)

    def advance(self, events: int) -> None:
        """``events`` more are done (at most the total: a table evaluated again by one worker
        after its runs found it out of order counts twice)."""
        with self.lock:
            self.done = min(self.done + events, self.total)
            self.update(self.done)

    def update(self, done: int) -> None:
        pct = 100 * done // self.total if self.total else 100
        self.out.write(f"\r{PROG}: {done:,} / {self.total:,} events ({pct}%)")
        self.out.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.out.write("\r\033[K" if self.out.isatty() else "\n")
            self.out.flush()


def _stdin_is_a_file() -> bool:
    """Whether standard input is a regular file (``< events.csv``): all there already, so it
    is read in bulk, as ``--input events.csv`` would be."""
    try:
        return stat.S_ISREG(os.fstat(sys.stdin.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):  # no descriptor (replaced, closed)
        return False


class EventSource:
    """The events of ``cercore run``: ``live`` (read line by line) or a table read whole.

    ``feed(engine)`` runs ``engine.process`` over them and yields what it yields; ``naming``
    (a context manager) makes an engine's EventError about the event of the line just read
    name that line; ``finish()`` warns about what the end of a stream left unread."""

    def __init__(self, args: argparse.Namespace, schema: Schema,
                 stream_column: str | None = None) -> None:
        self.schema = schema
        self.stream_column = stream_column
        self.lines: LineEvents | None = None
        self.followed: FollowedFile | None = None
        self.table: Any = None
        self.path: tuple[str, str | None] | None = None  # a file read whole, its format
        self.progress: bool | None = getattr(args, "progress", None)  # None: when a terminal
        fmt = args.input_format
        follow = getattr(args, "follow", False)
        idle = getattr(args, "idle_timeout", None)
        if idle is not None and not follow:
            raise CercoreError("--idle-timeout goes with --follow")
        if follow:
            if args.input == "-":
                raise CercoreError("--follow needs a file (--input FILE); standard input is "
                                   "read as it arrives anyway")
            fmt = fmt or guess_format(args.input)
            if fmt not in LINE_FORMATS:
                raise CercoreError(f"--follow reads CSV or JSON Lines, not {fmt}")
            self.followed = FollowedFile(args.input, idle)
            _stop_on_interrupt(self.followed)
            lines, where = iter(self.followed), args.input
        elif args.input == "-" and (fmt or "csv") in LINE_FORMATS and not _stdin_is_a_file():
            fmt = fmt or "csv"
            lines, where = stream_lines(sys.stdin.buffer), "<stdin>"
        else:  # bulk: the whole input first
            if args.input == "-":
                self.table = read_events(sys.stdin.buffer, schema, fmt or "csv",
                                         type_column=args.type_column,
                                         stream_column=stream_column, on_error=args.on_error)
            else:
                self.table = read_events(args.input, schema, fmt, type_column=args.type_column,
                                         stream_column=stream_column, on_error=args.on_error)
                self.path = (args.input, fmt)
            return
        self.lines = LineEvents(lines, schema, fmt, type_column=args.type_column,
                                stream_column=stream_column, on_error=args.on_error,
                                where=where)

    @property
    def live(self) -> bool:
        """Whether the events are read line by line (and results are flushed one by one)."""
        return self.lines is not None

    def feed(self, engine: Any, workers: int | None = None) -> Iterator:
        """``engine.process`` over the events: each line is read when the engine asks for the
        next event, after it has yielded what the line before completed. A file read whole
        goes in bulk, over ``workers`` threads (None: the engine's default for its size)."""
        if self.lines is not None:
            table = self.lines.start()  # a CSV header, or JSON Lines that are one JSON array
            if table is None:
                if self.stream_column is None:
                    yield from engine.process(rec for rec, _ in self.lines)
                else:  # each event tagged with its own stream
                    for rec, tag in self.lines:
                        yield from engine.process(iter((rec,)), tag)
                return
            self.table = table
        n = self.table.num_rows
        # the file cut in time (runtime/slices.py), or a CEQL query's partitions split among
        # threads; the input tells a progress display what it consumed, batch by batch (the
        # T-CER runs' inputs too, from their threads)
        show = self.progress if self.progress is not None else \
            (n >= PROGRESS_MIN_EVENTS and sys.stderr.isatty())
        if not show:
            yield from engine.process(self.table, workers=workers)
            return
        progress = Progress(n)
        engine.input.progress = progress.advance
        try:
            yield from engine.process(self.table, workers=workers)
        finally:
            engine.input.progress = None
            progress.close()

    @contextmanager
    def naming(self, engine: Any) -> Iterator[None]:
        """Re-raise an engine's EventError about an event with its file and line named: the
        last event read from a stream, any event of a file read whole (the reader's own
        errors name it already)."""
        try:
            yield
        except EventError as exc:
            if self.path is not None and exc.position is not None \
                    and getattr(engine.input, "reorder", None) is None:
                spot = locate_row(self.path[0], exc.position, self.path[1])
                if spot is not None and spot not in exc.args[0]:
                    raise EventError(f"{exc.args[0]} ({spot})", field=exc.field,
                                     reason=exc.reason) from None
                raise
            lines = self.lines
            if lines is None or exc.position is None or exc.position != lines.count - 1 \
                    or getattr(engine.input, "reorder", None) is not None:
                raise
            raise EventError(f"{exc.args[0]} ({lines.where}, line {lines.line})",
                             field=exc.field, reason=exc.reason) from None

    def finish(self) -> None:
        """After the stream: warn about a followed file's last line that never got its
        newline (it was not read)."""
        if self.followed is not None and self.followed.unterminated:
            print(f"{PROG}: warning: {self.followed.path}: the last line has no newline yet "
                  f"({len(self.followed.unterminated)} bytes); it was not read",
                  file=sys.stderr)


def _stop_on_interrupt(followed: FollowedFile) -> None:
    """Ctrl-C (SIGINT) stops a followed file at its next wait for data, between two lines
    (every line read has been evaluated and its complex events written; exit code 130),
    instead of interrupting wherever the program happens to be, e.g. inside the engine; a
    second Ctrl-C interrupts at once. (Only in the main thread, where Python runs signal
    handlers.)"""
    import signal

    def stop(signum, frame) -> None:
        followed.request_stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    try:
        signal.signal(signal.SIGINT, stop)
    except ValueError:  # not the main thread: the default handler stays
        pass
