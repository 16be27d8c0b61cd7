"""What users receive: complex events and the events inside them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Event:
    """One input event: its type, its 0-based position in the input, its attributes."""

    type: str
    position: int
    attributes: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "position": self.position, "attributes": self.attributes}


_LAZY = object()  # marks a time not looked up yet


class _Explicit:
    """The source of a complex event built by hand: a position -> Event function and,
    optionally, a bindings function."""

    __slots__ = ("bind", "event")

    def __init__(self, lookup, bind) -> None:
        self.event = lookup
        self.bind = bind

    def bindings(self, ce) -> dict[str, tuple[int, ...]]:
        return self.bind(ce) if self.bind is not None else {}

    def events(self, ce) -> list[Event]:
        return [self.event(p) for p in ce.positions]


class PureComplexEvent:
    """A complex event (CORE §2): the interval [start, end] of input positions and the positions
    of the events that form it.

    The engine hands out thin views: a complex event holds its interval, its positions and a
    reference to the engine's stored batches; ``start_time``, ``end_time``, ``events`` and
    ``bindings`` are looked up only when read."""

    __slots__ = ("_bindings", "_end_time", "_events", "_source", "_start_time", "end",
                 "positions", "start")

    def __init__(self, start: int, end: int, positions: tuple[int, ...],
                 start_time: int | None = None, end_time: int | None = None, lookup=None,
                 bind=None) -> None:
        self.start = start
        self.end = end
        self.positions = positions
        self._start_time = start_time
        self._end_time = end_time
        self._source = _Explicit(lookup, bind)
        self._events: list[Event] | None = None
        self._bindings: dict[str, tuple[int, ...]] | None = None

    @classmethod
    def view(cls, start: int, end: int, positions: tuple[int, ...], source) -> PureComplexEvent:
        """A complex event backed by ``source`` (``time(position)``, ``event(position)``,
        ``bindings(ce)``): what the engine yields, with no per-event work until read."""
        ce = cls.__new__(cls)
        ce.start = start
        ce.end = end
        ce.positions = positions
        ce._source = source
        ce._start_time = ce._end_time = _LAZY
        ce._events = None
        ce._bindings = None
        return ce

    @property
    def start_time(self) -> int | None:
        """Event time of ``start`` (None when the schema names no time attribute)."""
        if self._start_time is _LAZY:
            self._start_time = self._source.time(self.start)
        return self._start_time

    @property
    def end_time(self) -> int | None:
        """Event time of ``end`` (None when the schema names no time attribute)."""
        if self._end_time is _LAZY:
            self._end_time = self._source.time(self.end)
        return self._end_time

    @property
    def events(self) -> list[Event]:
        """The matched events, in stream order."""
        if self._events is None:
            self._events = self._source.events(self)
        return self._events

    @property
    def bindings(self) -> dict[str, tuple[int, ...]]:
        """Variable (``AS`` names and event-type names) -> the reported positions bound to it;
        where several runs produce this complex event, the union of their bindings. Computed on
        first access (linear in the span from start to end)."""
        if self._bindings is None:
            self._bindings = self._source.bindings(self)
        return self._bindings

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"start": self.start, "end": self.end, "start_time": self.start_time,
                "end_time": self.end_time, "positions": list(self.positions),
                "events": [e.to_dict() for e in self.events]}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (PureComplexEvent, ComplexEvent)):
            return NotImplemented
        return (self.start, self.end, self.positions) == (other.start, other.end, other.positions)

    def __hash__(self) -> int:
        return hash((self.start, self.end, self.positions))

    def __repr__(self) -> str:
        return f"ComplexEvent(start={self.start}, end={self.end}, positions={self.positions})"

    def __reduce__(self):
        # a pickled complex event carries its events (the engine's store does not travel)
        events = dict(zip(self.positions, self.events))
        return (type(self), (self.start, self.end, self.positions, self.start_time,
                             self.end_time, events.__getitem__))


@dataclass
class MatchArrays:
    """Complex events in bulk (``Engine.process_arrays``): complex event i is the interval
    ``[start[i], end[i]]`` with positions ``positions[offsets[i]:offsets[i + 1]]``; times are
    the schema's time attribute (zeros when it names none). All arrays are int64."""

    start: np.ndarray
    end: np.ndarray
    offsets: np.ndarray
    positions: np.ndarray
    start_time: np.ndarray
    end_time: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def concat(cls, parts: list[MatchArrays]) -> MatchArrays:
        if not parts:
            z = np.zeros(0, dtype=np.int64)
            return cls(z, z, np.zeros(1, dtype=np.int64), z, z, z)
        base = np.cumsum([0] + [len(p.positions) for p in parts[:-1]])
        offsets = np.concatenate([parts[0].offsets[:1]]
                                 + [p.offsets[1:] + b for p, b in zip(parts, base)])
        return cls(*(np.concatenate([getattr(p, f) for p in parts])
                     for f in ("start", "end")), offsets,
                   np.concatenate([p.positions for p in parts]),
                   *(np.concatenate([getattr(p, f) for p in parts])
                     for f in ("start_time", "end_time")))

    def to_arrow(self):
        """A pyarrow Table: start, end, start_time, end_time, positions (list<int64>)."""
        import pyarrow as pa

        positions = pa.ListArray.from_arrays(pa.array(self.offsets, pa.int32()
                                                      if len(self.positions) < 2**31
                                                      else pa.int64()),
                                             pa.array(self.positions, pa.int64()))
        return pa.table({"start": self.start, "end": self.end, "start_time": self.start_time,
                         "end_time": self.end_time, "positions": positions})


def _compiled_complex_event():
    """The compiled twin (cercore_fast.output), unless pure Python is forced or not built."""
    from cercore.runtime.backend import PURE_PYTHON

    if PURE_PYTHON:
        return None
    try:
        from cercore_fast.output import ComplexEvent as compiled
    except ImportError:
        return None
    return compiled


ComplexEvent = _compiled_complex_event() or PureComplexEvent
