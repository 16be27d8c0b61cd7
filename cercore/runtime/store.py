"""The engine's event store: the events that may still appear in a complex event.

Complex events are thin views (``cercore.runtime.output.ComplexEvent.view``): each one keeps
a ``StoreView`` and looks up its events, times and bindings there only when they are read.

The store is a list of entries in position order: a ``BatchEntry`` per evaluated batch (its
columns as they are) and a ``RecordChunk`` per run of up to ``CHUNK`` events evaluated one at
a time (``Engine.push``, live iterators), whose rows are appended in place. Adding never copies
what is stored; pruning builds new lists instead of mutating the old ones, so a view (which
holds the lists of its time) keeps the events its complex events refer to, and sees later
events too (harmless: it only ever reads positions up to its complex events' ends). One view
serves every complex event until the next prune.

Pruning is the window's: an entry all of whose events are older than the current window
start can never be part of a later complex event, so it goes once a new chunk opens or a
batch ends -- memory under WITHIN stays flat however events arrive. Without a window, the
entries before the evaluator's last reclamation go (``prune``).
"""

from __future__ import annotations

import bisect
import operator
from typing import Any

import numpy as np

from cercore.input import Batch
from cercore.runtime.output import Event
from cercore.runtime.term_values import TermValues
from cercore.types import INT64_MIN, TimeForm

CHUNK = 1024  # events of a record chunk: the granularity of pruning under push


class BatchEntry:
    """One evaluated batch: its columns, window times, letters and partition ids (every
    event of the batch, read or not)."""

    __slots__ = ("batch", "first", "letters", "pids", "times")

    def __init__(self, batch: Batch, times: np.ndarray, letters: np.ndarray,
                 pids: np.ndarray) -> None:
        self.first = batch.first_position
        self.batch = batch
        self.times = times
        self.letters = letters
        self.pids = pids

    def __len__(self) -> int:
        return len(self.letters)

    def event(self, position: int, schema) -> Event:
        return self.batch.event(position - self.first, schema)

    def time(self, position: int, attribute: str) -> int | None:
        cols = self.batch.columns
        k = position - self.first
        return int(cols.values[attribute][k]) if cols.valid[attribute][k] else None

    def times_at(self, positions: np.ndarray, attribute: str) -> np.ndarray:
        return self.batch.columns.values[attribute][positions - self.first]

    def max_time(self) -> int:
        return int(self.times.max()) if len(self.times) else INT64_MIN

    def alive(self, tau: int) -> BatchEntry:
        """This entry without its leading events of window time older than ``tau`` (they
        can never be part of a later complex event; ``EventStore.prune``), keeping at least
        the last one; itself when none goes."""
        older = self.times < tau
        cut = min(int(np.argmin(older)) if not older.all() else len(older), len(older) - 1)
        if cut <= 0:
            return self
        entry = BatchEntry.__new__(BatchEntry)
        entry.batch = self.batch.tail(cut)
        entry.first = entry.batch.first_position
        entry.times, entry.letters, entry.pids = (self.times[cut:], self.letters[cut:],
                                                  self.pids[cut:])
        return entry

    def span(self, start: int, end: int) -> list[tuple[int, int, int]]:
        first = self.first
        lo, hi = max(start - first, 0), min(end - first + 1, len(self.letters))
        return [(first + k, int(self.letters[k]), int(self.pids[k])) for k in range(lo, hi)]


_POSITION = operator.itemgetter(0)


class RecordChunk:
    """Events evaluated one at a time, appended in place: per event one tuple (position,
    type id, validated attributes, window time, letter, partition id) -- one append per
    event. Only events that can be part of a complex event are kept: the ones the query
    reads, less those that satisfy no atom where the evaluator skips such events (they can
    take no position and change no binding); positions therefore have gaps."""

    __slots__ = ("first", "items")

    def __init__(self, first: int) -> None:
        self.first = first
        self.items: list[tuple[int, int, dict, int, int, int]] = []

    def __len__(self) -> int:
        return len(self.items)

    def _item(self, position: int) -> tuple:
        return self.items[bisect.bisect_left(self.items, position, key=_POSITION)]

    def event(self, position: int, schema) -> Event:
        _, tid, row = self._item(position)[:3]
        return Event(schema.type_names[tid], position, row)

    def time(self, position: int, attribute: str) -> int | None:
        return self._item(position)[2].get(attribute)

    def times_at(self, positions: np.ndarray, attribute: str) -> np.ndarray:
        return np.array([self.time(p, attribute) or 0 for p in positions.tolist()],
                        dtype=np.int64)

    def max_time(self) -> int:
        return self.items[-1][3] if self.items else INT64_MIN  # times never go back

    def span(self, start: int, end: int) -> list[tuple[int, int, int]]:
        items = self.items
        lo = bisect.bisect_left(items, start, key=_POSITION)
        hi = bisect.bisect_right(items, end, key=_POSITION)
        return [(item[0], item[4], item[5]) for item in items[lo:hi]]


class StoreView:
    """What a complex event needs to materialise itself: the store's entries (see the module
    docstring for what it may see)."""

    __slots__ = ("attributes", "binder", "entries", "schema", "starts", "time_attribute",
                 "time_form")

    def __init__(self, entries: list, starts: list[int], schema, time_attribute: str | None,
                 binder, attributes=None, time_form: TimeForm | None = None) -> None:
        self.entries = entries
        self.starts = starts
        self.schema = schema
        self.time_attribute = time_attribute
        self.binder = binder  # (view, complex event) -> bindings
        self.attributes = attributes  # SELECT x[a, b]: variable -> attributes (None: all)
        # how the input wrote event times (the decoder's): they are reported that way
        self.time_form = time_form

    def _locate(self, position: int):
        return self.entries[bisect.bisect_right(self.starts, position) - 1]

    def event(self, position: int) -> Event:
        event = self._locate(position).event(position, self.schema)
        form = self.time_form
        if form is not None and form.instants and event.attributes.get(self.time_attribute) \
                is not None:
            attrs = dict(event.attributes)
            attrs[self.time_attribute] = form.as_read(attrs[self.time_attribute])
            event = Event(event.type, event.position, attrs)
        return event

    def events(self, ce) -> list[Event]:
        """The events of ``ce``; under ``SELECT x[a, b]`` each keeps the attributes that the
        variables binding it select (every attribute if one of them selects the whole
        event)."""
        events = [self.event(p) for p in ce.positions]
        if self.attributes is None:
            return events
        by_position: dict[int, set[str] | None] = {}
        for var, positions in ce.bindings.items():
            if var not in self.attributes:
                continue
            attrs = self.attributes[var]
            for p in positions:
                have = by_position.get(p, set())
                by_position[p] = None if attrs is None or have is None else have | set(attrs)
        out = []
        for e in events:
            keep = by_position.get(e.position, set())
            out.append(e if keep is None else
                       Event(e.type, e.position,
                             {a: v for a, v in e.attributes.items() if a in keep}))
        return out

    def time(self, position: int) -> Any:
        """The event's time attribute as the input wrote it: an int, or a datetime where
        the input wrote instants (None when the schema names none)."""
        if self.time_attribute is None:
            return None
        t = self._locate(position).time(position, self.time_attribute)
        form = self.time_form
        return t if form is None or not form.instants else form.as_read(t)

    def time_of(self, position: int, attribute: str) -> int | None:
        """Any attribute of a stored event (``time`` reads the reported time attribute)."""
        return self._locate(position).time(position, attribute)

    def times(self, positions: np.ndarray) -> np.ndarray:
        """Vectorised ``time`` (int64; positions must be stored; no time attribute: zeros)."""
        if self.time_attribute is None or not len(positions):
            return np.zeros(len(positions), dtype=np.int64)
        attribute = self.time_attribute
        lo, hi = int(positions.min()), int(positions.max())
        first, last = (np.searchsorted(self.starts, [lo, hi], "right") - 1).tolist()
        if first == last:  # (the usual case: one entry holds them all, no mask)
            return self.entries[first].times_at(positions, attribute).astype(np.int64,
                                                                             copy=False)
        entries = self.entries[first:last + 1]
        if all(isinstance(e, BatchEntry) for e in entries):
            # batches: their times over [lo, hi] side by side, then one gather (not a pass
            # over every position per entry: the complex events of a large batch are
            # memory-bound)
            spread = np.zeros(hi - lo + 1, dtype=np.int64)
            for e in entries:
                values = e.batch.columns.values[attribute]
                a, b = max(e.first, lo), min(e.first + len(values), hi + 1)
                if a < b:
                    spread[a - lo:b - lo] = values[a - e.first:b - e.first]
            return spread[positions - lo]
        out = np.zeros(len(positions), dtype=np.int64)
        which = np.searchsorted(self.starts, positions, side="right") - 1
        for i in range(first, last + 1):
            sel = which == i
            if sel.any():
                out[sel] = self.entries[i].times_at(positions[sel], attribute)
        return out

    def span(self, start: int, end: int) -> list[tuple[int, int, int]]:
        """(position, letter, partition id) of the stored events from start to end."""
        out = []
        i = bisect.bisect_right(self.starts, start) - 1
        for entry in self.entries[max(i, 0):]:
            if entry.first > end:
                break
            out.extend(entry.span(start, end))
        return out

    def bindings(self, ce) -> dict[str, tuple[int, ...]]:
        return self.binder(self, ce)


class EventStore:
    """The entries still needed for outputs, oldest first."""

    dead_before = INT64_MIN  # window time before which no event is needed (the last prune's)

    def __init__(self, schema, time_attribute: str | None = None, attributes=None,
                 time_form: TimeForm | None = None) -> None:
        self.schema = schema
        self.time_attribute = time_attribute
        self.attributes = attributes
        self.time_form = time_form  # the decoder's: how the input writes event times
        self.entries: list = []
        self.starts: list[int] = []
        self.chunk: RecordChunk | None = None  # the open record chunk (the last entry)
        self._view: StoreView | None = None  # the view of the current lists
        self._binder = None
        # the values predicates between events read, by position (set by the engine that
        # has such predicates): fed and pruned with the entries
        self.terms: TermValues | None = None

    @property
    def batches(self) -> list:
        """The stored entries (a name kept for callers that count them)."""
        return self.entries

    def add(self, batch: Batch, times: np.ndarray, letters: np.ndarray,
            pids: np.ndarray) -> None:
        """Store an evaluated batch (it closes the open record chunk)."""
        self.chunk = None
        self.entries.append(BatchEntry(batch, times, letters, pids))
        self.starts.append(batch.first_position)
        if self.terms is not None:
            self.terms.add_batch(batch)

    def add_record(self, position: int, type_id: int, row: dict, time: int, letter: int,
                   pid: int) -> bool:
        """Store one event evaluated on its own (see ``RecordChunk`` for which); True when it
        opened a new chunk (the moment to prune)."""
        if self.terms is not None:
            self.terms.add_row(position, row)
        chunk = self.chunk
        if chunk is not None and len(chunk.items) < CHUNK:
            chunk.items.append((position, type_id, row, time, letter, pid))
            return False
        chunk = self.chunk = RecordChunk(position)
        self.entries.append(chunk)
        self.starts.append(position)
        chunk.items.append((position, type_id, row, time, letter, pid))
        return True

    def view(self, binder) -> StoreView:
        """The view for the complex events of what is being evaluated."""
        view = self._view
        if view is None or view.binder != binder:  # (a bound method: equal, not the same)
            view = self._view = StoreView(self.entries, self.starts, self.schema,
                                          self.time_attribute, binder, self.attributes,
                                          self.time_form)
        return view

    def prune(self, tau: int) -> None:
        """Drop leading entries all of whose events have window time older than ``tau`` (the
        last entry stays: it holds the stream's latest event)."""
        self.dead_before = max(self.dead_before, tau)
        entries = self.entries
        keep = 0
        while keep < len(entries) - 1 and entries[keep].max_time() < tau:
            keep += 1
        if keep:
            # new lists: views handed out keep the old ones
            self.entries = entries[keep:]
            self.starts = self.starts[keep:]
            self._view = None
            if self.terms is not None:
                self.terms.drop_before(self.starts[0])

    def __getstate__(self) -> dict:
        """The store without the events already dead (a batch entry is kept whole while any
        of its events may be needed; a pickled engine -- a streaming key's state, each
        micro-batch -- carries the window's events, not the last batch's)."""
        state = self.__dict__.copy()
        state["_view"] = None  # rebuilt on demand (it holds the engine's binder)
        entries = [e.alive(self.dead_before) if isinstance(e, BatchEntry) else e
                   for e in self.entries]
        state["entries"] = entries
        state["starts"] = [e.first if isinstance(e, BatchEntry) else start
                           for e, start in zip(entries, self.starts)]
        return state
