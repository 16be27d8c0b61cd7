"""Timing workloads on backends, fairly: the same events for every backend, outputs checked
equal before anything is timed, best of R passes with a fresh engine each and the garbage
collector paused during the timed region (as ``timeit`` does).

Reusable helpers (the plug-in experiments use them too):

* ``best_of(fn, repeat, clock="wall")``: the best seconds of ``repeat`` calls of ``fn()``,
  GC paused while timed (``clock="cpu"``: this process's CPU time);
* ``best_of_each({name: fn}, repeat, clock)``: the same for several functions, interleaved, so
  that their ratio is fair on a shared machine;
* ``peak_python_bytes(fn)``: the tracemalloc peak of one call of ``fn()`` (Python and numpy
  allocations; not memory that C code mallocs itself, such as the Cython tECS arena);
* ``rss_bytes()``: the process's resident memory now;
* ``memory_profile(query, table, backend, every)``: tECS arena nodes and RSS sampled every
  ``every`` events of a run;
* ``Progress(total)``: a one-line progress bar on stderr;
* ``text_table(head, line, rows)``: rows as a text table under a header and a rule.
"""

from __future__ import annotations

import gc
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

import cercore
from cercore.bench.workloads import Workload
from cercore.errors import CercoreError

# wall: what a user waits (the paper's measure); cpu: this process's CPU time, steadier when
# other programs share the cores
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def _timed(fn: Callable[[], object], clock: Callable[[], float]) -> float:
    gc.collect()
    was = gc.isenabled()
    gc.disable()  # as timeit does: keep collector pauses out of the numbers
    try:
        t0 = clock()
        fn()
        return clock() - t0
    finally:
        if was:
            gc.enable()


def best_of(fn: Callable[[], object], repeat: int, clock: str = "wall") -> float:
    """The best seconds (``clock``: "wall" or "cpu") of ``repeat`` calls of ``fn``, the
    garbage collector paused while timed."""
    return min(_timed(fn, CLOCKS[clock]) for _ in range(max(repeat, 1)))


def best_of_each(fns: dict[str, Callable[[], object]], repeat: int, clock: str = "wall"
                 ) -> dict[str, float]:
    """``best_of`` for several functions, their calls interleaved (a, b, a, b, ...) so that
    each sees the same conditions on a shared machine; ratios of the results are fair."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(max(repeat, 1)):
        for key, fn in fns.items():
            best[key] = min(best[key], _timed(fn, CLOCKS[clock]))
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


def rss_bytes() -> int | None:
    """The process's resident memory now (Linux ``/proc``; None elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class MemorySample:
    events: int  # events processed so far
    tecs_nodes: int  # tECS arena size: live nodes plus those not yet reclaimed (engine.stats)
    rss_bytes: int | None  # process resident memory


def memory_profile(query: cercore.CompiledQuery, table, backend: str,
                   every: int = 10_000) -> list[MemorySample]:
    """Feed ``table`` to a fresh engine ``every`` events at a time (complex events enumerated
    and dropped, as the paper logs them) and sample its memory after each chunk — the paper
    measures memory every 10,000 events, apart from the timed runs."""
    engine = query.engine(backend)
    samples = []
    for offset in range(0, table.num_rows, every):
        for _ in engine.process(table.slice(offset, every), workers=1):
            pass
        gc.collect()
        samples.append(MemorySample(min(offset + every, table.num_rows),
                                    engine.stats["tecs_nodes"], rss_bytes()))
    return samples


@dataclass
class Measurement:
    """One workload on one backend: the timings are the best of R passes, each on a fresh
    engine, over the same events."""

    dataset: str
    workload: str
    family: str
    n: int
    window_factor: int
    backend: str
    events: int
    complex_events: int
    seconds: float  # engine.process consumed to the end (every complex event built)
    bulk_seconds: float  # engine.process_arrays (no Python object per complex event)
    update_seconds: float  # the same query with LIMIT 0: evaluation only, nothing enumerated
    peak_python_bytes: int  # tracemalloc peak of one process_arrays pass
    peak_tecs_nodes: int  # tECS arena nodes, the most seen in samples every 10,000 events
    mean_tecs_nodes: float  # their mean (the paper reports the mean of such samples)

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("inf")

    @property
    def enumeration_seconds(self) -> float:
        """Time spent enumerating complex events: with output minus evaluation only."""
        return max(self.seconds - self.update_seconds, 0.0)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["events_per_second"] = self.events_per_second
        d["enumeration_seconds"] = self.enumeration_seconds
        return d


def outputs(query: cercore.CompiledQuery, table, backend: str):
    """The complex events of ``table`` as (start, end, offsets, positions) arrays."""
    m = query.engine(backend).process_arrays(table, workers=1)
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


def consume(query: cercore.CompiledQuery, table, backend: str) -> int:
    """One pass of a fresh engine over ``table``, every complex event built and dropped."""
    n = 0
    for _ in query.engine(backend).process(table, workers=1):
        n += 1
    return n


def measure(workload: Workload, table, backends: list[str], repeat: int = 3,
            methodology: bool = True, memory_every: int = 10_000,
            clock: str = "wall") -> list[Measurement]:
    """Check equal outputs across ``backends``, then time each one on the same events, the
    backends' passes interleaved (``best_of_each``)."""
    from cercore.bench.datasets import schema

    sch = schema(workload.dataset)
    query = cercore.compile(workload.text(methodology), sch)
    update_only = cercore.compile(workload.text(methodology, limit=0), sch)
    count = check_equal(query, table, backends)
    for b in backends:
        consume(query, table.slice(0, 1000), b)  # warm-up: lazy determinisation, imports
    seconds = best_of_each({b: lambda b=b: consume(query, table, b) for b in backends},
                           repeat, clock)
    bulk = best_of_each({b: lambda b=b: query.engine(b).process_arrays(table, workers=1)
                         for b in backends}, repeat, clock)
    update = best_of_each({b: lambda b=b: consume(update_only, table, b) for b in backends},
                          repeat, clock)
    out = []
    for b in backends:
        peak = peak_python_bytes(lambda b=b: query.engine(b).process_arrays(table, workers=1))
        nodes = [s.tecs_nodes for s in memory_profile(query, table, b, memory_every)] or [0]
        out.append(Measurement(workload.dataset, workload.name, workload.family, workload.n,
                               workload.window_factor, b, table.num_rows, count, seconds[b],
                               bulk[b], update[b], peak, max(nodes), float(np.mean(nodes))))
    return out


class Progress:
    """A one-line progress bar on stderr (only when it is a terminal, or when forced):
    ``step(label)`` as each of ``total`` steps starts, ``close()`` at the end."""

    def __init__(self, total: int, enabled: bool | None = None) -> None:
        self.total, self.done = total, 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.t0 = time.perf_counter()

    def step(self, label: str) -> None:
        if self.enabled:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            elapsed = time.perf_counter() - self.t0
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] "
                             f"{self.done + 1}/{self.total} {elapsed:5.0f}s {label[:40]:<40}")
            sys.stderr.flush()
        self.done += 1

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write(f"\r[{'#' * 30}] {self.total}/{self.total} "
                             f"{time.perf_counter() - self.t0:5.0f}s {'done':<40}\n")
            sys.stderr.flush()


def text_table(head: str, line: str, rows: list[dict]) -> str:
    """A text table: ``head``, a rule as wide, and ``line.format_map(row)`` for each row
    (``line`` names the row's keys: ``"{backend:<8}{events:>9,}"``)."""
    return "\n".join([head, "-" * len(head)] + [line.format_map(r) for r in rows])
