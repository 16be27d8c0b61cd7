# cython: language_level=3
"""Compiled twin of ``cercore.runtime.output.ComplexEvent``: the same API and behaviour, as a
C struct-backed object the evaluator creates without running Python code per complex event
(spaCy's Token style: a thin view; times, events and bindings are looked up in the engine's
stored batches only when read). ``cercore.runtime.output`` exports this class when the
extension is built, for both backends, so every complex event has one type."""

cimport cython


# Not tracked by the cyclic GC: a complex event refers only to ints, a tuple, the engine's store
# snapshot and, once read, its events and bindings, none of which can refer back to it; keeping
# 10^5 of them in a list would otherwise make every collection walk them all.
@cython.no_gc
cdef class ComplexEvent:
    """A complex event (CORE §2): the interval [start, end] of input positions and the positions
    of the events that form it.

    The engine hands out thin views: a complex event holds its interval, its positions and a
    reference to the engine's stored batches; ``start_time``, ``end_time``, ``events`` and
    ``bindings`` are looked up only when read."""

    def __init__(self, start, end, positions, start_time=None, end_time=None, lookup=None,
                 bind=None):
        self.start = start
        self.end = end
        self.positions = positions
        self._start_time = start_time
        self._end_time = end_time
        self._times_known = True
        from cercore.runtime.output import _Explicit  # (not at import: output imports us)

        self._source = _Explicit(lookup, bind)

    @classmethod
    def view(cls, start, end, positions, source):
        """A complex event backed by ``source`` (``time(position)``, ``event(position)``,
        ``bindings(ce)``): what the engine yields, with no per-event work until read."""
        return make_view(start, end, positions, source)

    @property
    def start_time(self):
        """Event time of ``start`` (None when the schema names no time attribute)."""
        self._load_times()
        return self._start_time

    @property
    def end_time(self):
        """Event time of ``end`` (None when the schema names no time attribute)."""
        self._load_times()
        return self._end_time

    cdef _load_times(self):
        if not self._times_known:
            self._start_time = self._source.time(self.start)
            self._end_time = self._source.time(self.end)
            self._times_known = True

    @property
    def events(self):
        """The matched events, in stream order."""
        if self._events is None:
            self._events = self._source.events(self)
        return self._events

    @property
    def bindings(self):
        """Variable (``AS`` names and event-type names) -> the reported positions bound to it;
        where several runs produce this complex event, the union of their bindings. Computed on
        first access (linear in the span from start to end)."""
        if self._bindings is None:
            self._bindings = self._source.bindings(self)
        return self._bindings

    def to_dict(self):
        """A JSON-ready dict."""
        return {"start": self.start, "end": self.end, "start_time": self.start_time,
                "end_time": self.end_time, "positions": list(self.positions),
                "events": [e.to_dict() for e in self.events]}

    def __eq__(self, other):
        if not isinstance(other, ComplexEvent):
            return NotImplemented
        return (self.start, self.end, self.positions) == (other.start, other.end, other.positions)

    def __hash__(self):
        return hash((self.start, self.end, self.positions))

    def __repr__(self):
        return f"ComplexEvent(start={self.start}, end={self.end}, positions={self.positions})"

    def __reduce__(self):
        # a pickled complex event carries its events (the engine's store does not travel)
        events = dict(zip(self.positions, self.events))
        return (ComplexEvent, (self.start, self.end, self.positions, self.start_time,
                               self.end_time, events.__getitem__))


cdef ComplexEvent make_view(object start, object end, tuple positions, object source):
    cdef ComplexEvent ce = ComplexEvent.__new__(ComplexEvent)
    ce.start = start
    ce.end = end
    ce.positions = positions
    ce._source = source
    ce._times_known = False
    return ce
