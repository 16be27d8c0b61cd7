"""A windowed query over a table on several workers: T-CER slices of a table in event order.

"Aggregates are all you need" (§4, T-CER) cuts a stream whose complex events span at most ε
into overlapping slices: a fresh engine over any stretch of the stream that holds the window
before a complex event's end, [end − K, end], finds that complex event, the same. So a table in
event order is cut into ``k`` runs of about equal events, [s_p, s_(p+1)), one per worker; the
worker of run p also evaluates, first, the events before s_p back to the last time K before the
run (its *prefix*, whose complex events it drops: the worker before reports them), and reports
what ends in its run. K = ε + a leading absence's T (``window_reach``), and the cut holds when
nothing but the window decides a complex event: no CONSUME BY, no strategy without WITHIN, no
deadline (which looks past a complex event's end), WITHIN on the ordering time. Every event of
a run is evaluated in its worker's thread, the decoding and letters included. A keyed query
slices the same way: a run holds every key of its stretch of time (partition ids differ between
the runs' engines; they are never part of the output).

The same complex events, positions, bindings and order as one engine: the runs' outputs,
concatenated in run order, are in end order, and each run's engine numbers its events from its
prefix's first position. The same ``stats`` counts of events, events read, skips (by reason, the
first examples) and complex events: each run's are counted from its first event, the prefix's
left out; the live partitions, tECS, automaton and work counters are the last run's engine's.
After the table the engine goes on as the last run's engine (it holds every partial match
still open).

An engine kind whose evaluation holds the GIL (a trend query's runner) evaluates the runs after
the first in worker processes instead (``runtime/processes.py``), their prefixes searched by
the caller; the results are the same.

The prefix is found, in the run's thread, from the times of events the query reads
(``_prefix_start``), which assumes the table is in time order. A run that finds it is not -- a
time going backwards, raised or skipped -- or raises any error, and the table is evaluated again
by one worker from the start (the engine is left untouched until every run succeeded), which
then raises or skips exactly as one engine does: never a different answer, at worst twice the
work on bad input.
"""

from __future__ import annotations

import itertools
import os
import pickle
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from cercore.errors import EventError
from cercore.input.skips import MAX_EXAMPLES, TIME_BACKWARDS, SkipLog
from cercore.input.tabular import is_tabular, to_arrow
from cercore.runtime.memory import kept_blocks
from cercore.runtime.pipeline import TABLE_BATCHES
from cercore.runtime.processes import read_shared, run_elsewhere, shared_table
from cercore.runtime.shards import shards_for

__all__ = ["CALLER_WEIGHT", "MIN_EVENTS_BY_DEFAULT", "MIN_EVENTS_PER_SLICE", "arrays_of",
           "complex_events_of", "default_workers", "evaluate_in_slices", "history_dependence",
           "run_bounds", "sliced_feed", "slices_for", "window_reach", "workers_plan"]

# a table is cut into runs only with this many events per run: below it the threads, the
# prefixes and the runs' engines cost more than they save
MIN_EVENTS_PER_SLICE = 16384
# ``workers=None`` cuts only a table this long: each run's engine warms up (its automaton
# states, letters) and the prefix is searched, a few ms in all; measured on two cores,
# 32k events 0.75-1.16x one worker, 64k 0.95-1.23x, 128k 1.41-1.56x
MIN_EVENTS_BY_DEFAULT = 1 << 17
# the first stretch searched back for a run's prefix, doubled until the prefix is found
PROBE_EVENTS = 1024
# with the runs after the first in worker processes (``_in_processes``), the caller's run is
# this many times a worker's: a worker also unpickles its engine, maps the shared table and
# sends its output back, which the caller unpickles. Measured (2 cores, a trend query, 1 M
# events, 99,655 rows, the table written before the runs start): at 1.17 the worker's
# answer was there 11-15 ms (its unpickling) after the caller's run ended: the worker finished
# first. Best of eight calls, twice each: 1.0 0.301 and 0.313 s, 1.08 0.269 and 0.286 s, 1.17
# 0.292 and 0.297 s
CALLER_WEIGHT = 1.1


def history_dependence(analysed) -> str | None:
    """Why the complex events ending at an event may depend on more than the events of the
    window before it (None: a fresh engine over any stretch holding [end − ε, end] finds
    them all, the same)."""
    q = analysed.query
    if q.consume in ("ANY", "PARTITION"):
        return f"CONSUME BY {q.consume} discards runs depending on earlier matches"
    if analysed.strategy in ("NEXT", "LAST", "MAX") and analysed.window.kind is None:
        return (f"selection strategy {analysed.strategy} without WITHIN compares a match "
                "with candidates from the whole stream before it")
    return None


def window_reach(analysed, order_attribute: str | None) -> tuple[int | None, str | None]:
    """(K, None) when any stretch of the stream in event order that holds [end − K, end] finds
    the complex events ending at ``end`` exactly (see the module doc): K = ε + a leading
    absence's T; else (None, why not)."""
    w = analysed.window
    if w.kind is None or w.kind == "events" or w.attribute != order_attribute:
        return None, "only WITHIN on the ordering time bounds how far back a match reaches"
    history = history_dependence(analysed)
    if history is not None:
        return None, f"history-dependent: {history}"
    if analysed.deadline is not None:
        return None, "a deadline looks past a complex event's end"
    lookback = analysed.lookback
    return int(w.epsilon) + (0 if lookback is None else int(lookback.span)), None


class SliceHooks:
    """What T-CER slices need from an engine kind (its class attribute ``slicing``): the CEQL
    ``Engine``'s here; a trend engine's in ``cercore/trends/engine.py``."""

    @staticmethod
    def reach(engine: Any) -> tuple[int | None, str | None]:
        """(K, None): how far before a run its engine starts (see the module doc); else
        (None, why the query cannot be cut in time)."""
        return window_reach(engine.analysed, engine.order_attribute)

    @staticmethod
    def shards(engine: Any, workers: int | None) -> tuple[int, str]:
        """Key shards for ``workers`` when time slices do not apply (``runtime/shards.py``)."""
        return shards_for(engine.analysed, workers)

    @staticmethod
    def fresh(engine: Any) -> Any:
        """A new engine of ``engine``'s query, with its options, that has seen nothing."""
        return type(engine)(engine.query, engine.options)

    @staticmethod
    def timed_reads(engine: Any, batch: Any) -> tuple[np.ndarray, np.ndarray]:
        """Which events of ``batch`` the query reads and carry a valid time, and the times."""
        attr = engine.order_attribute
        read = engine.encoder.read_mask(batch)
        timed = engine.time_order.timed(batch, read) & batch.columns.valid[attr]
        return timed, batch.columns.values[attr]

    @staticmethod
    def counts(engine: Any) -> tuple[int, ...]:
        """The counters a run adds up from its first event: events read, outputs."""
        return engine.intake.tick, engine.post.reported

    @staticmethod
    def set_counts(engine: Any, counts: tuple[int, ...]) -> None:
        engine.intake.tick, engine.post.reported = counts

    @staticmethod
    def become(engine: Any, run: Any) -> None:
        """``engine`` goes on as the run's engine ``run``."""
        engine.__setstate__(run.__dict__)

    # ``workers=None`` slices a large table over the machine's cores (else only when asked)
    by_default = True
    # the runs after the first in worker processes (``runtime/processes.py``), not threads:
    # for an engine kind whose evaluation holds the GIL
    in_processes = False


def default_workers() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it):
    ``workers=None``'s count for a table T-CER slices can cut."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every platform)
        return os.cpu_count() or 1


def slices_for(engine: Any, workers: int | None, events: Any) -> tuple[int, str]:
    """How many runs of ``events`` ``engine`` (a fresh engine) evaluates in T-CER slices for
    ``workers`` (None: ``default_workers()``; 1: it does not), and why. The cheap refusals
    first: ``process`` asks on every call, a live feed one event at a time included."""
    if workers is not None and workers <= 1:
        return 1, "one worker"
    if not is_tabular(events):
        return 1, "not in time slices: only a table in hand is cut into runs"
    if workers is None:
        workers = default_workers()
        if workers <= 1:
            return 1, "one worker: the machine has one core for this process"
        if len(events) < MIN_EVENTS_BY_DEFAULT:
            return 1, (f"one worker: fewer than {MIN_EVENTS_BY_DEFAULT} events (workers=N "
                       "cuts smaller tables)")
    if engine.position:
        return 1, "not in time slices: the engine has seen events already"
    reach, why_not = engine.slicing.reach(engine)
    if reach is None:
        return 1, f"not in time slices: {why_not}"
    if engine.time_order.last is not None:
        return 1, "not in time slices: the engine has seen a watermark already"
    if engine.input.reorder is not None:
        return 1, "not in time slices: a reorder slack evaluates events in its own order"
    k = min(workers, len(events) // MIN_EVENTS_PER_SLICE)
    if k <= 1:
        return 1, f"not in time slices: fewer than {MIN_EVENTS_PER_SLICE} events per worker"
    where = f" (this thread and {k - 1} worker processes)" if engine.slicing.in_processes \
        else ""
    return k, (f"{k} workers{where}: T-CER slices -- {k} runs of the table in event order, "
               f"each also evaluating the {reach} time units before it and reporting what "
               "ends in it")


def evaluate_in_slices(engine: Any, events: Any, stream: str | None, k: int,
                       collect: Callable[[Any, Any, str | None], Any]) -> list | None:
    """The outputs of ``k`` runs of ``events`` (``slices_for``), in run order: each
    ``collect(run_engine, table, stream)`` of the run's own events; ``engine`` then goes on as
    the last run's engine. None (``engine`` untouched): the table must be evaluated by one
    worker (it is out of time order, or has an error to raise where one engine raises it)."""
    table = to_arrow(events)
    hooks = engine.slicing
    reach = hooks.reach(engine)[0]
    n = table.num_rows
    bounds = run_bounds(n, k, hooks.in_processes)
    runs = [hooks.fresh(engine) for _ in range(k)]
    for run in runs:  # (each run reports its own events to a progress display)
        run.input.progress = engine.input.progress
    where = _in_processes if hooks.in_processes else _in_threads
    results, last = where(runs, table, stream, bounds, reach, collect)
    if results is None or any(r is None for r in results):
        return None
    skips = SkipLog()
    for _, log, _ in results:
        skips.count += log.count
        skips.by_reason.update(log.by_reason)
        skips.examples.extend(log.examples[:MAX_EXAMPLES - len(skips.examples)])
    last.input.decoder.skips = skips
    hooks.set_counts(last, tuple(map(sum, zip(*(r[2] for r in results)))))
    hooks.become(engine, last)
    return [r[0] for r in results]


def run_bounds(n: int, k: int, in_processes: bool = False) -> list[int]:
    """Where ``k`` runs of ``n`` events start (and the last ends): about equal runs, or, when
    the runs after the first go to worker processes, the first (the caller's) longer by
    ``CALLER_WEIGHT`` (every run at least one event when ``n >= k``)."""
    first = round(100 * CALLER_WEIGHT) if in_processes else 100
    total = first + 100 * (k - 1)
    return [0] + [n * (first + 100 * (p - 1)) // total for p in range(1, k)] + [n]


def _in_threads(runs: list, table, stream: str | None, bounds: list[int], reach: int,
                collect: Callable) -> tuple[list, Any]:
    """The runs' results and the last run's engine: the first run evaluated in the caller's
    thread, each other one in a thread of its own (the caller's thread does not sit idle,
    and its memory comes from the main heap, which glibc keeps better than a thread's)."""
    with kept_blocks(), ThreadPoolExecutor(len(runs) - 1,
                                           thread_name_prefix="cercore-slice") as pool:
        futures = [pool.submit(_run_from_prefix, run, table, stream, bounds[p], bounds[p + 1],
                               reach, collect) for p, run in enumerate(runs) if p]
        try:
            first = _run_from_prefix(runs[0], table, stream, 0, bounds[1], reach, collect)
        finally:
            wait(futures)
        return [first] + [f.result() for f in futures], runs[-1]


def _in_processes(runs: list, table, stream: str | None, bounds: list[int], reach: int,
                  collect: Callable) -> tuple[list | None, Any]:
    """The runs' results (as ``_in_threads`` gives them) and the last run's engine, the first run
    evaluated in the caller's thread and the others in worker processes
    (``runtime/processes.py``); (None, None) when a worker died. The prefixes are searched
    here (a few batches decoded), so that the table is shared from the second run's prefix on
    only."""
    k, progress = len(runs), runs[0].input.progress
    firsts = [_prefix_of(runs[p], table, stream, bounds[p], reach) for p in range(k)]
    base = firsts[1]  # (k >= 2)
    for run in runs[1:]:  # (a worker reports its run's events once done, below)
        run.input.progress = None
    # (pickled here, before the first run starts: nothing it changes is read while pickling)
    pickled = [pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL) for run in runs[1:]]
    with shared_table() as shared:  # (the workers read it, from the second run's prefix on)
        length = shared.write(table.slice(base))
        out = run_elsewhere(
            _run_on_shared,
            [(pickled[p - 1], shared.path, length, base, stream, firsts[p], bounds[p],
              bounds[p + 1], collect, p == k - 1) for p in range(1, k)],
            lambda: _evaluate_run(runs[0], table, stream, 0, 0, bounds[1], collect))
    if out is None:
        return None, None
    results = [out[0]] + [result for result, _ in out[1:]]
    if progress is not None:
        for p in range(1, k):
            progress(bounds[p + 1] - bounds[p])
    return results, out[-1][1]


def _run_on_shared(pickled: bytes, path: str, length: int, base: int, stream: str | None,
                   first: int, start: int, stop: int, collect: Callable, last: bool
                   ) -> tuple[tuple | None, Any]:
    """A run in a worker process (its engine ``pickled``), over the table a ``SharedTable``
    holds (``length`` bytes) from event ``base`` on: ``_evaluate_run``'s result, and the
    run's engine when it is the last run (the caller goes on as it)."""
    run = pickle.loads(pickled)
    result = _evaluate_run(run, read_shared(path, length), stream, first, start, stop, collect,
                           base)
    return result, (run if last and result is not None else None)


def _run_from_prefix(run: Any, table, stream: str | None, start: int, stop: int, reach: int,
                     collect: Callable) -> tuple | None:
    """``_evaluate_run`` from the run's prefix, searched in the run's own thread."""
    with kept_blocks():
        first = _prefix_of(run, table, stream, start, reach)
        return _evaluate_run(run, table, stream, first, start, stop, collect)


def _prefix_of(run: Any, table, stream: str | None, start: int, reach: int) -> int:
    """Where the run starting at ``start`` begins evaluating (``_prefix_start``, by a
    throwaway engine of the run's kind: the search decodes; 0 for the first run)."""
    return 0 if start == 0 else _prefix_start(run.slicing.fresh(run), table, stream, start,
                                              reach)


def _evaluate_run(run: Any, table, stream: str | None, first: int, start: int, stop: int,
                  collect: Callable, base: int = 0) -> tuple | None:
    """(outputs, skip log, counts: ``SliceHooks.counts``) of run [start, stop) of the events,
    evaluated by the fresh engine ``run`` from ``first``; ``table`` holds the events from
    ``base`` on. None when the run is out of time order or raises (see the module doc)."""
    run.input.start_at(first)
    try:
        if start > first:  # the prefix: its complex events end before the run
            progress, run.input.progress = run.input.progress, None  # (the run before's)
            collect(run, table.slice(first - base, start - first), stream)
            run.input.progress = progress
            if run.input.skips.by_reason[TIME_BACKWARDS]:
                return None
            run.input.decoder.skips = SkipLog()
        before = run.slicing.counts(run)
        found = collect(run, table.slice(start - base, stop - start), stream)
    except EventError:
        return None
    log = run.input.skips
    if log.by_reason[TIME_BACKWARDS]:
        return None
    return found, log, tuple(a - b for a, b in zip(run.slicing.counts(run), before))


def _prefix_start(probe: Any, table, stream: str | None, start: int, reach: int) -> int:
    """Where the run starting at ``start`` begins evaluating: at an event the query reads
    whose time is before the run's time − ``reach`` (the run's time: the last such event's
    before ``start``, which the run's first events without a time take), the last one before
    ``start`` (0: none). Searched back in stretches doubling from ``PROBE_EVENTS``."""
    last = None
    hi, size = start, PROBE_EVENTS
    while hi > 0:
        lo = max(0, hi - size)
        positions, times = _read_times(probe, table, stream, lo, hi)
        if last is None and len(times):
            last = int(times[-1])
        if last is not None:
            before = np.flatnonzero(times < last - reach)
            if len(before):
                return int(positions[before[-1]])
        hi, size = lo, size * 2
    return 0


def _read_times(probe: Any, table, stream: str | None, lo: int, hi: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """The positions and times of the events in [lo, hi) that the query reads and that carry
    a valid time, as ``probe``'s (a throwaway engine's) input decodes them."""
    probe.input.start_at(lo)
    positions, times = [], []
    for batch in probe.input.batches(table.slice(lo, hi - lo), stream):
        timed, values = probe.slicing.timed_reads(probe, batch)
        timed = np.flatnonzero(timed)
        positions.append(batch.first_position + timed)
        times.append(values[timed])
        if batch.error is not None:
            break
    return np.concatenate(positions), np.concatenate(times).astype(np.int64)


def arrays_of(run: Any, table, stream: str | None) -> list:
    """A run's complex events as arrays, one ``MatchArrays`` per batch (``process_arrays``
    before its concatenation: the runs' batches are concatenated once, by the caller)."""
    run._usable()
    size = run.input.batch_size * TABLE_BATCHES
    return [run._run_arrays(b) for b in run.input.batches(table, stream, size)]


def complex_events_of(run: Any, table, stream: str | None) -> list:
    """A run's complex events (``Engine.process`` by the run's one worker)."""
    return list(run.process(table, stream, workers=1))


def sliced_feed(engine: Any, events: Any, stream: str | None, k: int) -> Iterator:
    """``engine.process(events)`` in ``k`` T-CER slices (by one worker where they cannot
    be used)."""
    found = evaluate_in_slices(engine, events, stream, k, complex_events_of)
    yield from engine._feed(events, stream) if found is None else itertools.chain(*found)


def workers_plan(engine: Any, workers: int | None, events: Any = None) -> tuple[int, int, str]:
    """(runs in T-CER slices, key shards, why) for ``engine`` over ``events`` with ``workers``:
    time slices where they are exact (keyed or not: a run holds every key of its stretch of
    time), else key shards (``runtime/shards.py``) where the query is keyed, else one worker.
    ``workers=None``: time slices over the machine's cores (``default_workers``) where they
    apply and the engine kind gains from them (``SliceHooks.by_default``), else one worker.
    Measured on two cores: slices 1.7-1.9x one worker on the CEQL query shapes of
    ``cercore-bench scaling`` (1.2-1.8x on those writing millions of complex events: memory
    bound), key shards 1.2-1.7x, so shards run only when asked for (they also serve live
    input, which slices do not cut)."""
    k, by_keys = engine.slicing.shards(engine, workers)  # (checks ``workers`` too)
    if workers == 1 or (workers is None and not engine.slicing.by_default):
        return 1, 1, by_keys
    slices, by_time = slices_for(engine, workers, events)
    if slices > 1:
        return slices, 1, by_time
    return 1, k, by_keys if k > 1 or workers is None else f"{by_keys}; {by_time}"
