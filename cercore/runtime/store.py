"""The engine's event store: the batches whose events may still appear in a complex event.

Complex events are thin views (``cercore.runtime.output.ComplexEvent.view``): each one keeps
a ``StoreView`` — a snapshot of the stored batches taken when its batch was evaluated — and
looks up its events, times and bindings there only when they are read. Pruning replaces the
store's tuple of batches instead of mutating it, so complex events already handed out keep the
events they refer to.
"""

from __future__ import annotations

import bisect

import numpy as np

from cercore.input import Batch
from cercore.runtime.output import Event

# one stored batch: (first position, batch, window times, letters, partition ids)
Entry = tuple[int, Batch, np.ndarray, np.ndarray, np.ndarray]


class StoreView:
    """Read-only snapshot of the store: what a complex event needs to materialise itself."""

    __slots__ = ("attributes", "batches", "binder", "schema", "starts", "time_attribute")

    def __init__(self, batches: tuple[Entry, ...], starts: list[int], schema,
                 time_attribute: str | None, binder, attributes=None) -> None:
        self.batches = batches
        self.starts = starts
        self.schema = schema
        self.time_attribute = time_attribute
        self.binder = binder  # (view, complex event) -> bindings
        self.attributes = attributes  # SELECT x[a, b]: variable -> attributes (None: all)

    def _locate(self, position: int) -> tuple[Entry, int]:
        entry = self.batches[bisect.bisect_right(self.starts, position) - 1]
        return entry, position - entry[0]

    def event(self, position: int) -> Event:
        entry, k = self._locate(position)
        return entry[1].event(k, self.schema)

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

    def time(self, position: int) -> int | None:
        """The event's time attribute (None when the schema names none)."""
        if self.time_attribute is None:
            return None
        entry, k = self._locate(position)
        cols = entry[1].columns
        return int(cols.values[self.time_attribute][k]) if cols.valid[self.time_attribute][k] \
            else None

    def times(self, positions: np.ndarray) -> np.ndarray:
        """Vectorised ``time`` (int64; positions must be stored; no time attribute: zeros)."""
        out = np.zeros(len(positions), dtype=np.int64)
        if self.time_attribute is None or not len(positions):
            return out
        which = np.searchsorted(np.asarray(self.starts), positions, side="right") - 1
        for i in np.unique(which).tolist():
            first, batch = self.batches[i][:2]
            sel = which == i
            out[sel] = batch.columns.values[self.time_attribute][positions[sel] - first]
        return out

    def span(self, start: int, end: int) -> list[tuple[int, int, int]]:
        """(position, letter, partition id) of the stored events from start to end."""
        out = []
        i = bisect.bisect_right(self.starts, start) - 1
        for first, _, _, letters, pids in self.batches[max(i, 0):]:
            if first > end:
                break
            lo, hi = max(start - first, 0), min(end - first + 1, len(letters))
            out.extend((first + k, int(letters[k]), int(pids[k])) for k in range(lo, hi))
        return out

    def bindings(self, ce) -> dict[str, tuple[int, ...]]:
        return self.binder(self, ce)


class EventStore:
    """The batches still needed for outputs, oldest first."""

    def __init__(self, schema, time_attribute: str | None = None, attributes=None) -> None:
        self.schema = schema
        self.time_attribute = time_attribute
        self.attributes = attributes
        self.batches: tuple[Entry, ...] = ()
        self.starts: list[int] = []

    def add(self, batch: Batch, times: np.ndarray, letters: np.ndarray,
            pids: np.ndarray) -> None:
        self.batches = self.batches + ((batch.first_position, batch, times, letters, pids),)
        self.starts = self.starts + [batch.first_position]

    def view(self, binder) -> StoreView:
        """A snapshot for the complex events of the batch being evaluated."""
        return StoreView(self.batches, self.starts, self.schema, self.time_attribute, binder,
                         self.attributes)

    def prune(self, tau: int) -> None:
        """Drop leading batches all of whose read events have window time older than ``tau``."""
        keep = 0
        while keep < len(self.batches) - 1 and _max_time(self.batches[keep]) < tau:
            keep += 1
        if keep:
            self.batches = self.batches[keep:]
            self.starts = self.starts[keep:]


def _max_time(entry: Entry) -> int:
    times = entry[2]
    return int(times.max()) if len(times) else -(1 << 62)
