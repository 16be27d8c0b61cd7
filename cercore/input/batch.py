"""A batch: consecutive input events, validated, as columns."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cercore.errors import EventError
from cercore.input.columns import Columns
from cercore.input.event import Event
from cercore.schema import Schema

SKIPPED = -1  # type id of an event that failed validation and was skipped


@dataclass
class Batch:
    """Events ``first_position .. first_position + n - 1`` as columns.

    ``type_ids[k] == SKIPPED`` marks a skipped event. When ``error`` is set (``on_error="raise"``)
    the batch holds only the events before the bad one, and the engine raises after them.
    """

    first_position: int
    n: int
    type_ids: np.ndarray
    columns: Columns
    error: EventError | None = None
    # stream id of each event (int16), -1 where untagged (it belongs to every stream declaring
    # its type); None: the whole batch is untagged
    streams: np.ndarray | None = None

    def truncate(self, n: int, error: EventError | None) -> None:
        """Keep only the first ``n`` events; the engine raises ``error`` after them."""
        self.n = n
        self.type_ids = self.type_ids[:n]
        self.columns = self.columns.head(n)
        if self.streams is not None:
            self.streams = self.streams[:n]
        self.error = error

    def tail(self, k: int) -> Batch:
        """The events from the ``k``-th on (positions unchanged), sharing this batch's arrays."""
        return Batch(self.first_position + k, self.n - k, self.type_ids[k:], self.columns.tail(k),
                     self.error, None if self.streams is None else self.streams[k:])

    def event(self, k: int, schema: Schema) -> Event:
        """Materialise event ``k`` of this batch."""
        et = schema.event_types[schema.type_names[self.type_ids[k]]]
        attrs: dict[str, Any] = {}
        values, valid = self.columns.values, self.columns.valid
        for a, _ in et.attributes:
            v = values[a][k]
            attrs[a] = (v.item() if hasattr(v, "item") else v) if valid[a][k] else None
        return Event(et.name, self.first_position + k, attrs)

    def attribute_dicts(self, schema: Schema) -> list[dict[str, Any] | None]:
        """Every event's attributes as a dict (None for a skipped event): ``event(k)`` for
        the whole batch, converting each column to Python values once."""
        values = {a: v.tolist() for a, v in self.columns.values.items()}
        valid = {a: v.tolist() for a, v in self.columns.valid.items()}
        declared = [[(a, values[a], valid[a]) for a, _ in schema.event_types[n].attributes]
                    for n in schema.type_names]
        return [None if tid == SKIPPED else
                {a: vals[k] if oks[k] else None for a, vals, oks in declared[tid]}
                for k, tid in enumerate(self.type_ids.tolist())]


class ReadFilter:
    """Which events of a batch an engine reads: those of its event types, and, when it names
    streams (FROM), those tagged with one of them or untagged (an untagged event belongs to
    every stream that declares its type)."""

    def __init__(self, n_types: int, types: Iterable[int], n_streams: int,
                 streams: Iterable[int] | None = None) -> None:
        # type id -> read (the extra last entry: SKIPPED, never read)
        self.types = np.zeros(max(n_types, 1) + 1, dtype=bool)
        self.types[sorted(types)] = True
        # stream id + 1 -> read (entry 0: untagged events); None: every stream
        self.streams = None
        if streams is not None:
            self.streams = np.zeros(n_streams + 1, dtype=bool)
            self.streams[0] = True
            self.streams[[s + 1 for s in streams]] = True
        # equal keys read the same events (queries run together share one mask per key)
        self.key = (self.types.tobytes(), None if self.streams is None else self.streams.tobytes())
        # the same lookups as Python lists, for one event at a time
        self.type_list = self.types.tolist()
        self.stream_list = None if self.streams is None else self.streams.tolist()

    def reads_one(self, tid: int, stream: int) -> bool:
        """Whether one event (type id, stream id; -1: untagged) is read."""
        return self.type_list[tid] and (self.stream_list is None
                                        or self.stream_list[stream + 1])

    def mask(self, batch: Batch) -> np.ndarray:
        """A fresh bool mask of the batch's events that are read."""
        read = self.types[batch.type_ids]
        if batch.streams is not None and self.streams is not None:
            read &= self.streams[batch.streams + 1]
        return read
