"""Running a trend aggregation query: the columnar pass CEQL queries use -- input decoding and
time order (``cercore.input``), each event's pattern variables from the letters of the local
predicates (``cercore.runtime.letters``, one atom per variable) and its partition id, keyed
by the equivalence and GROUP BY attributes (``cercore.runtime.partitions``) -- then a runner
(``cercore.interface.trends.TrendRunner``: ``cercore.trends.runner.PythonRunner`` or the
compiled ``cercore_fast.trends.Runner``) for the timestamp groups, the fixed sliding windows
``[k*slide, k*slide + size)`` and one online aggregator per (window, partition) -- COGRA's
runtime executor -- and the roll-up of partitions to GROUP BY groups.

Events are not kept: each timestamp group of a partition updates the aggregators of the
``ceil(size / slide)`` windows that contain it and is dropped, so memory is O(open windows x
partitions x l) for the type- and pattern-grained algorithms, plus the stored events of the
event-grained variables of the mixed granularity (inherent to it, COGRA §5). Events
with equal timestamps form one group (COGRA §2.1: events are strictly ordered), so the engine holds
the current timestamp's events until time moves on.

A window's result rows are emitted once time passes its end (or at ``flush``). Only
(window, group) pairs with at least one trend are reported. Each row holds ``window_start``
and ``window_end`` (when the query has a window), every GROUP BY attribute, and the returned
aggregates under their text (``COUNT(*)``, ``SUM(L.cpu)``, ...). ``AVG(E.a)`` is
``SUM(E.a) / COUNT(E)``; ``MIN``/``MAX``/``AVG`` are None when no trend has an ``E`` event.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from cercore.ceql.normal import NAtom
from cercore.errors import EventError
from cercore.input import SKIPPED, EventInput, skips
from cercore.input.options import EngineOptions
from cercore.interface.constants import NO_PARTITION
from cercore.interface.trends import Closed, TrendInput, TrendRunner
from cercore.runtime.backend import Backend
from cercore.runtime.letters import Alphabet, LetterEncoder
from cercore.runtime.lifecycle import StreamEngine
from cercore.runtime.partitions import PartitionIndex
from cercore.runtime.shards import checked_workers
from cercore.runtime.slices import SliceHooks, sliced_feed, workers_plan
from cercore.trends import reference
from cercore.trends.analysis import TrendPlan


def trend_backend(plan: TrendPlan, requested: str) -> tuple[Backend, str | None]:
    """The backend that will run ``plan`` ("auto" | "python" | "cython", resolved as for
    CEQL queries), and why it is the reference when the compiled kernel does not cover the
    plan's shape (None otherwise)."""
    backend = Backend(requested)
    if backend.trends is not None:
        reason = backend.trends.uncompiled_reason(plan)
        if reason is not None:
            return Backend("python"), f"the compiled kernel does not cover {reason}"
    return backend, None


def make_runner(plan: TrendPlan, backend: Backend) -> TrendRunner:
    """The runner of ``backend`` (as ``trend_backend`` chose it): its compiled trend kernel's,
    handing over to the reference aggregators, or the Python runner."""
    if backend.trends is not None:
        return backend.trends.Runner(plan, reference.aggregator_class(plan))
    from cercore.trends.runner import PythonRunner
    return PythonRunner(plan)


class RollUp:
    """Partition vectors -> result rows: combined into GROUP BY groups (Σ counts and sums,
    min/max), one row per group with at least one trend, sorted by group. What does not vary
    with the window is worked out once per plan."""

    def __init__(self, plan: TrendPlan) -> None:
        self.vx = reference.Vectors(plan.fields)
        self.group_by = plan.group_by
        gidx = [plan.partition_groups.index((a,)) for a in plan.group_by]
        # (a partition's key is its group's when the groups are the partitions)
        self.same = gidx == list(range(len(plan.partition_groups)))
        self.gidx = gidx
        self.sums = [i for i, f in enumerate(plan.fields, 1) if f.kind == "sum"]
        # (column, slot, count slot dividing it for AVG, else None)
        self.columns = [(str(agg), slot, cnt if agg.func == "AVG" else None)
                        for agg, slot, cnt in plan.aggregates]

    def rows(self, per_partition: Iterable[tuple[tuple, list]],
             window: tuple | None) -> list[dict]:
        vx, gidx = self.vx, self.gidx
        groups: dict[tuple, list] = {}
        if self.same:  # one partition per group: its vector as zero ⊕ it would give it
            for pkey, vec in per_partition:
                for i in self.sums:
                    vec[i] = 0 + vec[i]  # (a double sum of -0.0 is 0.0, as after zero ⊕)
                groups[pkey] = vec
        else:
            for pkey, vec in per_partition:
                g = tuple(pkey[i] for i in gidx)
                acc = groups.get(g)
                if acc is None:
                    acc = groups[g] = vx.zero()
                vx.add(acc, vec)
        head = {} if window is None else {"window_start": window[0], "window_end": window[1]}
        out = []
        for g in sorted(groups):
            vec = groups[g]
            if vec[0] > 0:
                row = dict(head)
                row.update(zip(self.group_by, g))
                for name, slot, cnt in self.columns:
                    row[name] = vec[slot] if cnt is None else (
                        vec[slot] / vec[cnt] if vec[cnt] else None)
                out.append(row)
        return out


def read_types(plan: TrendPlan) -> list[str]:
    """The event types whose events can matter, in schema order: the pattern's types, or
    under contiguous semantics every type of the query's streams (it breaks contiguity)."""
    schema = plan.schema
    streams = plan.query.streams
    carried = (set().union(*(schema.streams[s].event_types for s in streams)) if streams
               else set(schema.type_names))
    pattern = {v.type for v in plan.vars}
    return [n for n in schema.type_names
            if (n in pattern or plan.semantics == "contiguous") and n in carried]


def variable_letters(plan: TrendPlan) -> LetterEncoder:
    """The letter encoder whose atom mask of a letter is the set of variables its events
    match (bit v: variable v's type and local conditions)."""
    schema = plan.schema
    ids = {n: schema.event_types[n].id for n in schema.type_names}
    streams = plan.query.streams
    atoms = [NAtom(v.id, frozenset({ids[v.type]}), v.guard) for v in plan.vars]
    return LetterEncoder(Alphabet(
        schema, plan.leaves, atoms, frozenset(ids[n] for n in read_types(plan)),
        frozenset(schema.stream_ids[s] for s in streams) if streams else None))


class TrendSlices(SliceHooks):
    """What T-CER slices (``runtime/slices.py``) need from a trend engine. A window's rows
    are made of the events of its span [k*slide, k*slide + size) alone and reported at the
    first event at or after its end; so a run's engine that starts ``size - 1`` time units
    before the run's time reports, at each event of the run, the rows one engine reports
    there."""

    @staticmethod
    def reach(engine: Any) -> tuple[int | None, str | None]:
        """(Also of a ``CompiledTrendQuery``: it reads the plan only.)"""
        if engine.plan.window is None:
            return None, "without WITHIN a trend query aggregates the whole stream"
        # a window still open at the run's last time ``last`` ends after it, so it starts at
        # ``last - size + 1`` or later (tests/trends/test_trends_slices.py fails at size - 2)
        return engine.plan.window[0] - 1, None

    @staticmethod
    def shards(engine: Any, workers: int | None) -> tuple[int, str]:
        checked_workers(workers)
        return 1, "one worker: a trend query splits in time only"

    @staticmethod
    def fresh(engine: Any) -> Any:
        return type(engine)(engine.plan, engine.options)

    @staticmethod
    def timed_reads(engine: Any, batch: Any) -> tuple[np.ndarray, np.ndarray]:
        attr = engine.time_attribute
        timed = engine.time_order.timed(batch, engine._reads.mask(batch))
        return timed & batch.columns.valid[attr], batch.columns.values[attr]

    @staticmethod
    def counts(engine: Any) -> tuple[int, ...]:
        return (engine.events_read,)

    @staticmethod
    def set_counts(engine: Any, counts: tuple[int, ...]) -> None:
        (engine.events_read,) = counts

    @staticmethod
    def become(engine: Any, run: Any) -> None:
        engine.__dict__.update(run.__dict__)

    # the runner and the rows hold the GIL: two threads measured 0.73-1.14x one, so the runs
    # after the first go to worker processes (started once, about 0.3 s: a trend query is
    # sliced only when workers are asked for)
    by_default = False
    in_processes = True


SMALL_BATCH = 16  # batches of at most this many events run event by event (_run_events)


class TrendEngine(StreamEngine):
    """Evaluates one compiled trend query over a stream, window by window."""

    def __init__(self, plan: TrendPlan, options: EngineOptions = EngineOptions.DEFAULT
                 ) -> None:
        self.plan = plan
        self.schema = plan.schema
        # backend_note: why the reference runs although Cython was available (else None)
        self.options = options
        self.kernels, self.backend_note = trend_backend(plan, options.backend)
        self.runner = make_runner(plan, self.kernels)
        self.time_attribute = self.schema.time_attribute
        self.type_column = options.type_column
        self.input = EventInput(self.schema, options, self.time_attribute)
        self.time_order = (self.input.time_order(self.time_attribute)
                           if self.time_attribute is not None else None)
        self.letters = variable_letters(plan)
        self._roll_up = RollUp(plan)
        self.small_batch = SMALL_BATCH  # (0: every batch takes the columnar pass)
        self.partitions = PartitionIndex(self.schema, list(plan.partition_groups))
        self.events_read = 0  # events in some partition's stream I
        names = self.schema.type_names
        pattern = {v.type for v in plan.vars}
        # type id -> in the pattern (else read only under contiguous semantics: it matches no
        # variable, and breaks contiguity); the extra last entry: SKIPPED
        self._in_pattern = np.array([n in pattern for n in names] + [False], dtype=bool)
        self._extra_types = any(n not in pattern for n in read_types(plan))
        self._wide = len(plan.vars) > 64  # variable masks beyond uint64: Python ints
        self._masks = np.zeros(1, dtype=object if self._wide else np.uint64)
        # (field mask, attribute, what) of each aggregated attribute: an event of one of the
        # field's variables must have a value
        self._needs_value = [(sum(1 << v for v in f.vars), f.attr, str(f.kind))
                             for f in plan.fields if f.attr]

    # ---- public API ------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        """The backend that runs the query ("python" | "cython"; see ``backend_note``)."""
        return self.kernels.name

    @property
    def skips(self) -> skips.SkipLog:
        """Skipped events by reason (``on_error="skip"``)."""
        return self.input.skips

    @property
    def aggregators(self) -> Any:
        """The backend's aggregator factory (``reference.Aggregators`` or the compiled
        ``Kernel``): ``new()`` starts a window aggregator."""
        return self.runner.aggregators

    @property
    def open(self) -> dict[int, dict[int, Any]]:
        """The open windows: k -> {partition id: window aggregator}, in increasing k."""
        return self.runner.open_windows()

    @property
    def pending(self) -> int:
        """Events of the current timestamp, held until time moves on."""
        return self.runner.pending_events()

    slicing = TrendSlices

    def process(self, events: Any, stream: str | None = None, *, workers: int | None = None
                ) -> Iterator[dict]:
        """Feed events (``(type, attrs)`` pairs, Event objects, a pandas DataFrame or an
        Arrow table, in time order -- or within the reorder slack); yield the rows of every
        window that closes. ``stream`` tags every event with that stream (tabular input may
        name each event's stream in ``stream_column``); FROM reads only its streams.

        A list, a tuple or a table is evaluated in batches; any other iterable one event at
        a time: a window's rows are yielded before the event after the one that closed it is
        asked for. ``workers``: evaluating a table of a windowed query in T-CER
        slices (``runtime/slices.py``), the first run in this thread and the others in worker
        processes (``runtime/processes.py``: the runner holds the GIL), the same rows;
        None: one. A fresh engine splits on its first call only."""
        runs = workers_plan(self, workers, events)[0]  # (slices_for refuses a used engine)
        return sliced_feed(self, events, stream, runs) if runs > 1 else self._feed(
            events, stream)

    def advance(self, t: int) -> list[dict]:
        """A watermark: no event earlier than time ``t`` will follow, so every window ending
        at or before ``t`` closes now; its rows. Lets a quiet stream (or a heartbeat) emit
        results without waiting for the next event."""
        self._usable()
        rows = self._evaluate(self._watermark(t))
        return rows + self._rows(self.runner.time_passes(self.last_time))

    def flush(self) -> list[dict]:
        """End of stream: the events a reorder slack still holds, then the rows of every
        window still open."""
        self._usable()
        return self._evaluate(self.input.flush()) + self._rows(self.runner.finish())

    @property
    def stats(self) -> dict[str, Any]:
        """Counters: events received, skipped (with reasons), the backend (and
        ``backend_note``: why the reference runs, if it does), and what the engine holds
        (``state_size()``)."""
        log = self.input.skips
        return {"events": self.position, "skipped": log.count,
                "skipped_by_reason": dict(log.by_reason), "backend": self.backend,
                "backend_note": self.backend_note, **self.state_size()}

    def state_size(self) -> dict[str, int]:
        """What the engine holds: open windows, their aggregators, the events stored by
        event-grained aggregators, and the events of the current timestamp."""
        open_windows = self.runner.open_windows()
        states = [st for parts in open_windows.values() for st in parts.values()]
        return {"open_windows": len(open_windows), "aggregators": len(states),
                "stored_events": sum(st.stored_events() for st in states),
                "pending_events": self.runner.pending_events()}

    def run(self, events: Any, *, workers: int | None = None) -> list[dict]:
        """Every row over ``events``, then the end of the stream (``process``, ``flush``)."""
        return list(self.process(events, workers=workers)) + self.flush()

    # ---- per batch -------------------------------------------------------------------------
    def _run(self, batch) -> Iterator[dict]:
        read = self._reads.mask(batch)
        n_ok, error = (batch.n, None) if self.time_order is None \
            else self.time_order.check(batch, read)
        error = error or batch.error
        if n_ok < batch.n:
            batch.truncate(n_ok, error)
            read = read[:n_ok]
        if batch.n <= self.small_batch:
            yield from self._run_events(batch, read, error)
            return
        trend_input, n_ok, null_error = self._prepare(batch, read)
        error = null_error or error
        rows = self._rows(self.runner.feed(trend_input))
        self.input.consumed(batch, n_ok)
        if rows:
            yield from rows
        if error is not None:
            raise error

    def _run_events(self, batch, read: np.ndarray, error: EventError | None) -> Iterator[dict]:
        """A batch of a few events, one at a time as the record path takes them (the columnar
        pass has a fixed cost per batch that a few events do not repay); the same rows."""
        rows: list[dict] = []
        dicts = batch.attribute_dicts(self.schema)
        times = np.arange(batch.first_position, batch.first_position + batch.n) \
            if self.time_order is None else self.time_order.times(batch, read)
        streams = batch.streams
        for k in np.flatnonzero(read).tolist():
            try:
                pid, vs = self._place(int(batch.type_ids[k]), dicts[k],
                                      -1 if streams is None else int(streams[k]),
                                      batch.first_position + k)
            except EventError:
                self.input.consumed(batch, k)
                yield from rows
                raise
            rows += self._rows(self.runner.feed_one(int(times[k]), pid, vs, dicts[k]))
        self.input.consumed(batch, batch.n)
        yield from rows
        if error is not None:
            raise error

    @property
    def _reads(self):
        return self.letters.reads

    def _var_masks(self, letters: np.ndarray) -> np.ndarray:
        """Each event's variables (bit v: it matches variable v) from its letter."""
        masks = self.letters.atom_masks
        if len(self._masks) != len(masks) + 1:  # new letters: the lookup grows
            self._masks = np.array(masks + [0], dtype=object if self._wide else np.uint64)
        return self._masks[letters]  # (NOT_READ = -1 reads the extra last entry, 0)

    def _prepare(self, batch, read: np.ndarray) -> tuple[TrendInput, int, EventError | None]:
        """The runner's view of a batch: which events are in a partition's stream I (their
        variables from the letters of the local predicates, their partition from the
        equivalence and GROUP BY attributes), which only move time, and their times. An
        event in the stream without a value it aggregates is an EventError: skipped and
        counted, or the batch stops before it (the number of events kept and that error)."""
        n = batch.n
        letters = self.letters.encode(batch, None, read, self.kernels.letters)
        masks = self._var_masks(letters)
        pids = self.partitions.assign(batch.type_ids, batch.columns, read)
        # (an event not read has no letter, so no variables)
        in_stream = (pids != NO_PARTITION) & (masks != 0)
        if self._extra_types:  # contiguous: read events of types outside the pattern count
            in_stream |= read & (pids != NO_PARTITION) & ~self._in_pattern[batch.type_ids]
        error = None
        lacking = [(fmask, attr, what) for fmask, attr, what in self._needs_value
                   if not batch.columns.valid[attr].all()]  # (the common case: no nulls)
        if lacking:
            missing = np.zeros(n, dtype=bool)
            first: dict[int, tuple[str, str]] = {}  # event -> the first value it lacks
            for fmask, attr, what in lacking:
                lacks = in_stream & ((masks & fmask) != 0) & ~batch.columns.valid[attr] \
                    & ~missing
                for k in np.flatnonzero(lacks).tolist():
                    first[k] = (attr, what)
                missing |= lacks
            for k in sorted(first):
                err = self._null_aggregated(int(batch.type_ids[k]), *first[k],
                                            batch.first_position + k)
                if not self.input.decoder.reject(err):
                    error = err
                    break
                in_stream[k] = False
        if error is not None:
            n = error.position - batch.first_position
            read[n:] = False  # the batch stops before the event
            in_stream[n:] = False
        state = np.add(read, in_stream, dtype=np.uint8)  # TIME_ONLY + 1 = IN_STREAM
        if self.time_order is None:
            times = np.arange(batch.first_position, batch.first_position + batch.n,
                              dtype=np.int64)
        else:
            times = self.time_order.times(batch, read)
        self.events_read += int(np.count_nonzero(in_stream))
        return TrendInput(batch.n, state, times, pids, masks, batch.columns), n, error

    def _null_aggregated(self, tid: int, attr: str, what: str, pos: int) -> EventError:
        func = {"sum": "SUM/AVG", "min": "MIN", "max": "MAX"}.get(what, what.upper())
        return EventError(f"{self.schema.type_names[tid]} event has no {attr!r} value, "
                          f"which {func} aggregates need", position=pos, field=attr,
                          reason=skips.NULL_AGGREGATED)

    def _record(self, typ: Any, attrs: Any, stream: int) -> list[dict]:
        """One event, with no batch (the record path): decoded, its time checked, its
        variables and partition found as a batch would, then the runner's ``feed_one``; the
        rows of the windows it closes."""
        inp = self.input
        tid, row, pos = inp.take_one(typ, attrs, stream)
        try:
            if tid == SKIPPED or not self._reads.reads_one(tid, stream) or not (
                    self.time_order is None or self.time_order.check_one(tid, row, pos)):
                return []
            pid, vs = self._place(tid, row, stream, pos)
        except EventError:  # (in raise mode the event stays unconsumed)
            inp.put_back(pos)
            raise
        t = pos if self.time_order is None else self.time_order.last
        return self._rows(self.runner.feed_one(t, pid, vs, row))

    def _place(self, tid: int, row: dict, stream: int, pos: int) -> tuple[int, int]:
        """(partition id, variables) of one read event; NO_PARTITION when it is in no
        partition's stream I (it matches no variable of its type, lacks a key, or lacks a
        value it aggregates and is skipped)."""
        vs = self.letters.atom_masks[self.letters.record_letter(tid, row, stream)]
        if not vs and self._in_pattern[tid]:
            return NO_PARTITION, 0
        pid = self.partitions.assign_one(tid, row)
        if pid == NO_PARTITION:
            return NO_PARTITION, 0
        for fmask, attr, what in self._needs_value:
            if vs & fmask and row.get(attr) is None:
                err = self._null_aggregated(tid, attr, what, pos)
                if not self.input.decoder.reject(err):
                    raise err
                return NO_PARTITION, 0
        self.events_read += 1
        return pid, vs

    # ---- windows ---------------------------------------------------------------------------
    def _rows(self, closed: list[Closed]) -> list[dict]:
        """The result rows of the windows the runner closed; then the partition index
        forgets the partitions no open window holds."""
        if not closed:
            return []
        window, key_of, roll_up = self.plan.window, self.partitions.key_of, self._roll_up
        form = self.input.decoder.time_form  # times written as instants: bounds as datetimes
        rows: list[dict] = []
        for k, parts in closed:
            bounds = None if window is None else (k * window[1], k * window[1] + window[0])
            if bounds is not None and form.instants:
                bounds = (form.as_read(bounds[0]), form.as_read(bounds[1]))
            rows += roll_up.rows([(key_of(pid), agg.result()) for pid, agg in parts.items()],
                                 bounds)
        live = self.runner.live_partitions()
        if len(self.partitions) > 2 * len(live) + 64:  # (amortised: not on every close)
            self.partitions.forget(live)
        return rows
