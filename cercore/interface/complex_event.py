# cython: annotation_typing=False
"""The complex event view: ONE source for both backends (Cython's pure-Python mode).

This file runs as plain Python on the pure-Python backend (``cercore.interface.complex_event``)
and is also compiled, unchanged, into the extension module ``cercore_fast.output``:
``cercore_fast/output.pxd`` declares the C layout Cython gives ``ComplexEvent`` there (typed
attributes, a C method, the C factory ``make_view`` the compiled evaluator calls for every
complex event, so it runs no Python code per complex event). ``cercore.runtime.output``
exports the compiled class when it is built, for both backends, so every complex event has one
type. Edit the behaviour here; keep ``output.pxd`` in step with the attributes.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def _unchanged(cls):
    """What the ``cython`` decorators below do to a class run as Python."""
    return cls


if __name__ == "cercore_fast.output":  # compiled: Cython reads the decorators and the flag
    import cython
else:  # run as Python: no need for Cython (importing it would cost ~10 ms)
    cython = SimpleNamespace(compiled=False, cclass=_unchanged, no_gc=_unchanged)


class _Explicit:
    """The source of a complex event built by hand: a position -> Event function and,
    optionally, a bindings function."""

    __slots__ = ("bind", "event")

    def __init__(self, lookup, bind) -> None:
        self.event = lookup
        self.bind = bind

    def bindings(self, ce) -> dict[str, tuple[int, ...]]:
        return self.bind(ce) if self.bind is not None else {}

    def events(self, ce) -> list:
        return [self.event(p) for p in ce.positions]


# Compiled, not tracked by the cyclic GC: a complex event refers only to ints, a tuple, the
# engine's store snapshot and, once read, its events and bindings, none of which can refer back
# to it; keeping 10^5 of them in a list would otherwise make every collection walk them all.
@cython.no_gc
@cython.cclass
class ComplexEvent:
    """A complex event (CORE §2): the interval [start, end] of input positions and the positions
    of the events that form it.

    The engine hands out thin views: a complex event holds its interval, its positions and a
    reference to the engine's stored batches; ``start_time``, ``end_time``, ``events`` and
    ``bindings`` are looked up only when read."""

    # (compiled: the attributes declared in cercore_fast/output.pxd)
    __slots__ = ("_bindings", "_end_time", "_events", "_source", "_start_time", "_times_known",
                 "end", "positions", "start")

    def __init__(self, start: int, end: int, positions: tuple[int, ...],
                 start_time: int | None = None, end_time: int | None = None, lookup=None,
                 bind=None) -> None:
        self.start = start
        self.end = end
        self.positions = positions
        self._start_time = start_time
        self._end_time = end_time
        self._times_known = True
        self._source = _Explicit(lookup, bind)
        self._events = None
        self._bindings = None

    @classmethod
    def view(cls, start: int, end: int, positions: tuple[int, ...], source) -> ComplexEvent:
        """A complex event backed by ``source`` (``time(position)``, ``event(position)``,
        ``bindings(ce)``): what the engine yields, with no per-event work until read."""
        return make_view(start, end, positions, source)

    @property
    def start_time(self) -> int | None:
        """Event time of ``start`` (None when the schema names no time attribute)."""
        self._load_times()
        return self._start_time

    @property
    def end_time(self) -> int | None:
        """Event time of ``end`` (None when the schema names no time attribute)."""
        self._load_times()
        return self._end_time

    def _load_times(self) -> None:
        if not self._times_known:
            self._start_time = self._source.time(self.start)
            self._end_time = self._source.time(self.end)
            self._times_known = True

    @property
    def events(self) -> list:
        """The matched events (``cercore.Event``), in stream order."""
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
        if not isinstance(other, _EQUAL_TYPES):
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


def make_view(start, end, positions: tuple, source) -> ComplexEvent:
    """``ComplexEvent.view``; compiled, a C function (``cercore_fast.output.make_view``) that
    builds the object without running Python code."""
    ce = ComplexEvent.__new__(ComplexEvent)
    ce.start = start
    ce.end = end
    ce.positions = positions
    ce._source = source
    ce._times_known = False
    if not cython.compiled:  # (compiled, __new__ has set the other fields to None already)
        ce._start_time = ce._end_time = ce._events = ce._bindings = None
    return ce


if cython.compiled:
    # the compiled class and this file run as Python are twins: equal on equal content (the
    # Python class defers to this one on comparison)
    from cercore.interface.complex_event import ComplexEvent as _PythonComplexEvent

    _EQUAL_TYPES = (ComplexEvent, _PythonComplexEvent)
else:
    _EQUAL_TYPES = (ComplexEvent,)
