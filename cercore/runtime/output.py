"""What users receive: complex events and the events inside them.

``ComplexEvent`` is written once, in ``complex_event.py``; this module exports that file compiled
(``cercore_fast.output``) when the extension is built, else the same file run as Python
(``PureComplexEvent``, also the class under ``CERCORE_PURE_PYTHON``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cercore.input.event import Event  # noqa: F401  (users meet it inside complex events)
from cercore.interface.complex_event import ComplexEvent as PureComplexEvent
from cercore.types import NOT_A_VALUE, coerce_time


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
    def of(cls, found: list, unit: str = "s") -> MatchArrays:
        """Complex events (``ComplexEvent``) as arrays, in their order, with their times as
        int64 counts of ``unit`` (a time reported as a datetime is counted back; zero where
        there is none)."""
        def units(t) -> int:
            if t is None or type(t) is int:
                return t or 0
            counted = coerce_time(t, unit)
            return 0 if counted is NOT_A_VALUE else counted

        n = len(found)
        start = np.fromiter((ce.start for ce in found), np.int64, n)
        end = np.fromiter((ce.end for ce in found), np.int64, n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(ce.positions) for ce in found], out=offsets[1:])
        positions = np.fromiter((p for ce in found for p in ce.positions), np.int64,
                                int(offsets[-1]))
        start_time = np.fromiter((units(ce.start_time) for ce in found), np.int64, n)
        end_time = np.fromiter((units(ce.end_time) for ce in found), np.int64, n)
        return cls(start, end, offsets, positions, start_time, end_time)

    @classmethod
    def concat(cls, parts: list) -> MatchArrays:
        """The complex events of ``parts`` (MatchArrays, or the ``ShardedArrays`` of a sharded
        engine's batches, merged here), one after the other: each field concatenated once."""
        if not parts:
            z = np.zeros(0, dtype=np.int64)
            return cls(z, z, np.zeros(1, dtype=np.int64), z, z, z)
        if not isinstance(parts[0], MatchArrays):
            return cls(*type(parts[0]).merged(parts))
        if len(parts) == 1:
            return parts[0]
        base = np.cumsum([0] + [len(p.positions) for p in parts[:-1]]).tolist()
        offsets = np.concatenate([parts[0].offsets[:1]]
                                 + [p.offsets[1:] + b for p, b in zip(parts, base)])
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("start", "end")),
                   offsets, np.concatenate([p.positions for p in parts]),
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
    """``complex_event.ComplexEvent`` compiled (cercore_fast.output), unless pure Python is
    forced or the extension is not built."""
    from cercore.runtime.backend import PURE_PYTHON

    if PURE_PYTHON:
        return None
    try:
        from cercore_fast.output import ComplexEvent as compiled
    except ImportError:
        return None
    return compiled


ComplexEvent = _compiled_complex_event() or PureComplexEvent
