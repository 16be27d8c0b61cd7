"""Time order: the check that event time never goes backwards, and the reorder slack.

``TimeOrder`` checks a batch's times against the last time seen, vectorised (a batch that is
already in order costs one comparison pass, nothing is sorted): a null time or a time before
the last is an EventError (reasons ``time missing`` / ``time goes backwards``), or a counted
skip.

Reorder slack, a bounded quarantine: an engine created with ``reorder_slack=d`` keeps every
incoming event until an event with time >= its time + d has arrived (or ``flush()`` is called),
then releases buffered events sorted by (time, arrival order). An event that arrives after
events with a later time were already released cannot be put back in order: it raises
EventError, or with ``on_error="skip"`` it is skipped and counted ("late beyond the reorder
slack") — never silently dropped. Positions count events in the order the engine *evaluates*
them (release order), so with a slack they may differ from the arrival order; ``ce.events``
always carries the events themselves. Events are handled as ``(type, attributes, stream)``
records here: a stream tag travels with its event. Tabular inputs are converted row by row,
which is the cost of reordering.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from cercore.errors import ConfigError, EventError
from cercore.input import skips
from cercore.input.batch import SKIPPED, Batch
from cercore.input.decode import RAW, REJECT_COLUMN, Rejected, check_columns
from cercore.input.event import Event
from cercore.input.tabular import is_tabular, tabular_columns
from cercore.types import INT64_MIN, NOT_A_VALUE, coerce_time


class TimeOrder:
    """The last event time seen, and the check that batches do not go back before it.

    Only events of the types that declare the time attribute (``carriers``, a bool lookup by
    type id; None: every type) carry a time: the others -- types a query reads without using
    them, such as a declared type lacking the window's attribute -- are not checked, and take
    the time of the last event before them that has one (``times``)."""

    def __init__(self, attribute: str, reject, carriers: np.ndarray | None = None,
                 unit: str = "s") -> None:
        self.attribute = attribute
        self.unit = unit  # of integer times: a watermark given as an instant is read in it
        self.reject = reject  # EventDecoder.reject: True when a bad event is skipped
        self.carriers = carriers  # type id -> declares the attribute (last entry: SKIPPED)
        self.last: int | None = None
        self.before: int | None = None  # ``last`` before the latest check (for ``times``)

    def timed(self, batch: Batch, read: np.ndarray) -> np.ndarray:
        """The events of ``read`` whose type carries a time."""
        return read if self.carriers is None else read & self.carriers[batch.type_ids]

    def check(self, batch: Batch, read: np.ndarray) -> tuple[int, EventError | None]:
        """Check the time of the events marked in ``read`` (a bool mask, updated in place:
        skipped events are unmarked and get type SKIPPED). Returns (events usable, error to
        raise after them)."""
        attr = self.attribute
        vals = batch.columns.values[attr]
        ok = batch.columns.valid[attr]
        last = self.before = self.last
        idx = np.flatnonzero(self.timed(batch, read))
        if not idx.size:
            return batch.n, None
        tv = vals[idx]
        if ok[idx].all() and (last is None or tv[0] >= last) and (tv[1:] >= tv[:-1]).all():
            self.last = int(tv[-1])
            return batch.n, None
        for k in idx.tolist():
            if not ok[k]:
                err = EventError(f"time attribute {attr!r} is missing or null",
                                 position=batch.first_position + k, field=attr,
                                 reason=skips.TIME_MISSING)
            elif last is not None and vals[k] < last:
                err = EventError(f"time goes backwards: {attr} = {int(vals[k])} after {last}",
                                 position=batch.first_position + k, field=attr,
                                 reason=skips.TIME_BACKWARDS)
            else:
                last = int(vals[k])
                continue
            if not self.reject(err):
                self.last = last
                return k, err
            read[k] = False
            batch.type_ids[k] = SKIPPED
        self.last = last
        return batch.n, None

    def check_one(self, tid: int, row: dict, position: int) -> bool:
        """``check`` for one read event (the record path): True when its time is in order
        (``last`` moves on), False when it is skipped; an EventError in raise mode. The
        event's window time is then ``last`` (carried from the events before it when its
        type has no time)."""
        if self.carriers is not None and not self.carriers[tid]:
            return True
        v = row.get(self.attribute)
        last = self.last
        if v is not None and (last is None or v >= last):
            self.last = v
            return True
        if v is None:
            err = EventError(f"time attribute {self.attribute!r} is missing or null",
                             position=position, field=self.attribute, reason=skips.TIME_MISSING)
        else:
            err = EventError(f"time goes backwards: {self.attribute} = {v} after {last}",
                             position=position, field=self.attribute,
                             reason=skips.TIME_BACKWARDS)
        if not self.reject(err):
            raise err
        return False

    def times(self, batch: Batch, read: np.ndarray) -> np.ndarray:
        """The time of every event of a checked batch (int64): its own where its type carries
        one, else that of the last read event before it with one (of earlier batches, or
        INT64_MIN before any), so times never go back and an event without a time widens no
        window."""
        values = batch.columns.values[self.attribute].astype(np.int64, copy=False)
        if self.carriers is None:
            return values
        timed = self.timed(batch, read)
        if timed.all() or not read.any():
            return values
        carried = np.where(timed, values, INT64_MIN)
        if self.before is not None and len(carried):
            carried[0] = max(int(carried[0]), self.before)
        return np.maximum.accumulate(carried)


class ReorderBuffer:
    """Min-heap of buffered events keyed by (time, arrival sequence)."""

    def __init__(self, time_attribute: str, slack: int, unit: str = "s") -> None:
        if slack < 0:
            raise ConfigError(f"reorder_slack must be >= 0, got {slack}")
        self.attr = time_attribute
        self.unit = unit  # of the schema's time: an instant is read as that many units
        self.slack = slack
        self.heap: list[tuple[int, int, str, dict, str | None]] = []
        self.seq = 0  # arrival counter: ties in time keep arrival order
        self.max_time: int | None = None
        self.released_time: int | None = None  # time of the last released event

    def __len__(self) -> int:
        return len(self.heap)

    def add(self, records: Iterable, on_late) -> Iterator[tuple[Any, Any, str | None]]:
        """Buffer ``(type, attrs, stream)`` records (from ``records_of``); yield the events
        that are now safe to release, in time order, as such records. ``on_late(record,
        error)`` handles an event that is too late to reorder."""
        for typ, attrs, stream in records:
            t = attrs.get(self.attr) if isinstance(attrs, dict) else None
            if t is not None and type(t) is not int:
                t = coerce_time(t, self.unit)  # an instant, a whole float: its units
            if t is None or t is NOT_A_VALUE:
                # no usable time: let the engine's own checks report it, in order
                yield from self._release_all()
                yield typ, attrs, stream
                continue
            if self.released_time is not None and t < self.released_time:
                on_late((typ, attrs), EventError(
                    f"event too late for the reorder slack: {self.attr} = {t} after events up "
                    f"to {self.released_time} were released (slack {self.slack})",
                    field=self.attr, reason=skips.LATE))
                continue
            heapq.heappush(self.heap, (t, self.seq, typ, attrs, stream))
            self.seq += 1
            if self.max_time is None or t > self.max_time:
                self.max_time = t
            yield from self._release(self.max_time - self.slack)

    def _release(self, upto: int) -> Iterator[tuple[str, dict, str | None]]:
        heap = self.heap
        while heap and heap[0][0] <= upto:
            t, _, typ, attrs, stream = heapq.heappop(heap)
            self.released_time = t
            yield typ, attrs, stream

    def _release_all(self) -> Iterator[tuple[str, dict, str | None]]:
        while self.heap:
            t, _, typ, attrs, stream = heapq.heappop(self.heap)
            self.released_time = t
            yield typ, attrs, stream

    def flush(self) -> list[tuple[str, dict, str | None]]:
        """Release everything still buffered (end of stream)."""
        return list(self._release_all())

    def advance(self, t: int) -> list[tuple[str, dict, str | None]]:
        """A watermark: no event earlier than ``t`` follows. Release the buffered events up to
        ``t``; later events before ``t`` are too late."""
        released = list(self._release(t))
        if self.released_time is None or t > self.released_time:
            self.released_time = t
        return released


def records_of(events: Any, type_column: str, declared: dict[str, dict],
               stream: str | None = None, stream_column: str | None = None) -> Iterator:
    """The events of any accepted input as ``(type, attributes, stream)`` records: ``stream``
    tags them all, else a tabular row's ``stream_column`` cell tags it. Tabular input is read
    as the columnar path reads it (``tabular_columns``, ``check_columns``): a row keeps the
    attributes its type declares and ignores the other cells, which other types may own."""
    if is_tabular(events):
        attr_types = {a: t for attrs in declared.values() for a, t in attrs.items()}
        names, columns = tabular_columns(events, attr_types)
        check_columns(names, attr_types, type_column,
                      (stream_column,) if stream_column is not None else ())
        at = {c: k for k, c in enumerate(names)}
        typ_at, tag_at, rejected_at = (at.get(type_column), at.get(stream_column),
                                       at.get(REJECT_COLUMN))
        for row in zip(*columns):
            if rejected_at is not None and row[rejected_at] is not None:
                yield Rejected(row[rejected_at]), RAW, None
                continue
            typ = row[typ_at]
            own = declared.get(typ, ()) if isinstance(typ, str) else ()
            tag = row[tag_at] if tag_at is not None else None
            yield typ, {a: row[at[a]] for a in own if a in at}, \
                stream if stream is not None else tag
        return
    for rec in events:
        if isinstance(rec, Event):
            yield rec.type, rec.attributes, stream
        elif isinstance(rec, tuple) and len(rec) == 2:
            yield rec[0], rec[1], stream
        else:
            yield rec, RAW, None  # not an event record: the decoder reports it, in order

