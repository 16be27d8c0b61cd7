"""Timing workloads on backends, fairly: the same events for every backend, outputs checked
equal before anything is timed, best of R passes with a fresh engine each and the garbage
collector paused during the timed region (as ``timeit`` does).

Reusable helpers: ``best_of(fn, repeat)`` (best wall time of ``fn()``) and
``peak_python_bytes(fn)`` (tracemalloc peak of one call).
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

import cercore
from cercore.bench.workloads import Workload
from cercore.errors import CercoreError


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The best wall-clock seconds of ``repeat`` calls of ``fn`` (GC paused while timed)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        was = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        finally:
            if was:
                gc.enable()
    return best


def peak_python_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes allocated through Python's allocators (numpy included) during ``fn()``;
    the Cython arena's own malloc is reported separately as tECS nodes."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@dataclass
class Measurement:
    dataset: str
    workload: str
    family: str
    n: int
    window_factor: int
    backend: str
    events: int
    complex_events: int
    seconds: float  # engine.process consumed to the end (every complex event built)
    bulk_seconds: float  # engine.process_arrays (no object per complex event)
    peak_python_bytes: int
    tecs_nodes: int  # tECS arena size at the end of the run

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("inf")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["events_per_second"] = self.events_per_second
        return d


def outputs(query: cercore.CompiledQuery, table, backend: str):
    m = query.engine(backend).process_arrays(table)
    return m.start, m.end, m.offsets, m.positions


def check_equal(query, table, backends: list[str]) -> int:
    """Run every backend; raise unless all return the same complex events in the same order.
    Returns the number of complex events."""
    ref = outputs(query, table, backends[0])
    for b in backends[1:]:
        got = outputs(query, table, b)
        if not all(np.array_equal(x, y) for x, y in zip(ref, got)):
            raise CercoreError(f"backends {backends[0]} and {b} disagree")
    return len(ref[0])


def measure(workload: Workload, table, backends: list[str], repeat: int = 3,
            methodology: bool = True) -> list[Measurement]:
    """Check equal outputs across ``backends``, then time each one."""
    from cercore.bench.datasets import schema

    query = cercore.compile(workload.text(methodology), schema(workload.dataset))
    count = check_equal(query, table, backends)
    out = []
    for b in backends:
        def run(b: str = b) -> None:
            for _ in query.engine(b).process(table):
                pass

        seconds = best_of(run, repeat)
        bulk = best_of(lambda b=b: query.engine(b).process_arrays(table), repeat)
        engine = query.engine(b)
        peak = peak_python_bytes(lambda e=engine: e.process_arrays(table))
        out.append(Measurement(workload.dataset, workload.name, workload.family, workload.n,
                               workload.window_factor, b, table.num_rows, count, seconds,
                               bulk, peak, engine.stats["tecs_nodes"]))
    return out


class Progress:
    """A one-line progress bar on stderr (only when it is a terminal, or when forced)."""

    def __init__(self, total: int, enabled: bool | None = None) -> None:
        self.total, self.done = total, 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def step(self, label: str) -> None:
        self.done += 1
        if self.enabled:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] "
                             f"{self.done}/{self.total} {label[:40]:<40}")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()
