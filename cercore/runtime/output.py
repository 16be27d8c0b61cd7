"""What users receive: complex events and the events inside them.

``ComplexEvent`` is written once, in ``complex_event.py``; this module exports that file compiled
(``cercore_fast.output``) when the extension is built, else the same file run as Python
(``PureComplexEvent``, also the class under ``CERCORE_PURE_PYTHON``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from cercore.input.event import Event  # noqa: F401  (users meet it inside complex events)
from cercore.interface.complex_event import ComplexEvent as PureComplexEvent
from cercore.types import NOT_A_VALUE, coerce_time

_FIELDS = ("start", "end", "offsets", "positions", "start_time", "end_time")
# complex events plus positions from which ``MatchArrays.concat`` copies in threads
CONCAT_IN_THREADS = 1 << 20


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
    def concat(cls, parts: list, threads: int = 1) -> MatchArrays:
        """The complex events of ``parts`` (MatchArrays, or the ``ShardedArrays`` of a sharded
        engine's batches, merged here), one after the other: each field concatenated once --
        in ``threads`` threads when the output is large (as many stretches of the parts
        copied at once: numpy copies without the GIL)."""
        if not parts:
            z = np.zeros(0, dtype=np.int64)
            return cls(z, z, np.zeros(1, dtype=np.int64), z, z, z)
        if not isinstance(parts[0], MatchArrays):
            return cls(*type(parts[0]).merged(parts))
        if len(parts) == 1:
            return parts[0]
        firsts = np.cumsum([0] + [len(p) for p in parts]).tolist()
        bases = np.cumsum([0] + [len(p.positions) for p in parts]).tolist()
        out = cls(*(np.empty(firsts[-1] + (f == "offsets"), np.int64) if f != "positions"
                    else np.empty(bases[-1], np.int64) for f in _FIELDS))
        out.offsets[0] = 0

        def copy(lo: int, hi: int) -> None:  # parts [lo, hi) into their place
            for i in range(lo, hi):
                p, a, b = parts[i], firsts[i], firsts[i + 1]
                for f in ("start", "end", "start_time", "end_time"):
                    getattr(out, f)[a:b] = getattr(p, f)
                np.add(p.offsets[1:], bases[i], out=out.offsets[a + 1:b + 1])
                out.positions[bases[i]:bases[i + 1]] = p.positions

        if threads <= 1 or firsts[-1] + bases[-1] < CONCAT_IN_THREADS:
            copy(0, len(parts))
            return out
        k = threads  # k stretches of about equal complex events
        cuts = np.searchsorted(firsts, [firsts[-1] * j // k for j in range(k + 1)]).tolist()
        cuts[0], cuts[-1] = 0, len(parts)
        with ThreadPoolExecutor(k, thread_name_prefix="cercore-concat") as pool:
            list(pool.map(copy, cuts[:-1], cuts[1:]))
        return out

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
