"""Running a trend aggregation query: input decoding, local filtering, partitioning by the
equivalence and GROUP BY attributes, fixed sliding windows ``[k*slide, k*slide + size)``, one
online aggregator per (window, partition) -- COGRA's runtime executor -- and the roll-up of
partitions to GROUP BY groups.

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
from operator import itemgetter
from typing import Any

import numpy as np

from cercore.errors import EventError
from cercore.input import SKIPPED, EventInput, ReadFilter, ReadsInput, skips
from cercore.input.source import in_hand
from cercore.runtime.backend import resolve_backend
from cercore.trends import reference
from cercore.trends.analysis import TrendPlan


def trend_backend(plan: TrendPlan, requested: str) -> tuple[str, str | None]:
    """The backend that will run ``plan`` ("auto" | "python" | "cython", resolved as for
    CEQL queries), and why it is the reference when the compiled kernel does not cover the
    plan's shape (None otherwise)."""
    backend = resolve_backend(requested)
    if backend == "cython":
        from cercore_fast.trends import uncompiled_reason

        reason = uncompiled_reason(plan)
        if reason is not None:
            return "python", f"the compiled kernel does not cover {reason}"
    return backend, None


def aggregators(plan: TrendPlan, backend: str):
    """The aggregator factory of the backend: ``new()`` starts a window aggregator,
    ``prepare(group)`` readies one timestamp group for the aggregators it updates."""
    if backend == "cython":
        from cercore_fast.trends import make_aggregators
        return make_aggregators(plan)
    return reference.Aggregators(plan)


def result_row(plan: TrendPlan, vec: list, group: tuple, window: tuple | None) -> dict:
    row: dict[str, Any] = {}
    if window is not None:
        row["window_start"], row["window_end"] = window
    row.update(zip(plan.group_by, group))
    for agg, slot, cnt_slot in plan.aggregates:
        if agg.func == "AVG":
            row[str(agg)] = vec[slot] / vec[cnt_slot] if vec[cnt_slot] else None
        else:
            row[str(agg)] = vec[slot]
    return row


def roll_up(plan: TrendPlan, per_partition: Iterable[tuple[tuple, list]],
            window: tuple | None) -> list[dict]:
    """Combine partition vectors into GROUP BY groups (Σ counts/sums, min/max); rows of the
    groups with at least one trend, sorted by group."""
    vx = reference.Vectors(plan.fields)
    gidx = [plan.partition_attrs.index(a) for a in plan.group_by]
    groups: dict[tuple, list] = {}
    for pkey, vec in per_partition:
        g = tuple(pkey[i] for i in gidx)
        if g not in groups:
            groups[g] = vx.zero()
        vx.add(groups[g], vec)
    return [result_row(plan, vec, g, window) for g, vec in sorted(groups.items(),
                                                                  key=lambda kv: kv[0])
            if vec[0] > 0]


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


def _key_reader(attrs: tuple[str, ...]):
    """attrs dict -> the tuple of its values of ``attrs`` (declared, possibly None)."""
    if not attrs:
        return lambda _: ()
    if len(attrs) == 1:
        (a,) = attrs
        return lambda d: (d.get(a),)
    get = itemgetter(*attrs)
    return lambda d: get(d)


def _local_test(plan: TrendPlan, v):
    from cercore.predicates import eval_guard, scalar_leaf
    tests = [scalar_leaf(p) for p in plan.leaves]
    return lambda attrs: eval_guard(v.guard, sum(1 << k for k, f in enumerate(tests) if f(attrs)))


class TrendEngine(ReadsInput):
    """Evaluates one compiled trend query over a stream, window by window."""

    def __init__(self, plan: TrendPlan, backend: str = "auto", on_error: str = "raise",
                 type_column: str = "event_type", reorder_slack: int | None = None,
                 stream_column: str | None = None) -> None:
        self.plan = plan
        self.schema = plan.schema
        # backend_note: why the reference runs although Cython was available (else None)
        self.backend, self.backend_note = trend_backend(plan, backend)
        self.aggregators = aggregators(plan, self.backend)
        self.time_attribute = self.schema.time_attribute
        self.type_column = type_column
        self.input = EventInput(self.schema, on_error, type_column, stream_column, reorder_slack,
                                self.time_attribute)
        self.time_order = (self.input.time_order(self.time_attribute)
                           if self.time_attribute is not None else None)
        # open windows in increasing k (a new event only opens windows after every open one):
        # k -> {partition key: aggregator}; k = 0 is the whole stream when there is no window
        self.open: dict[int, dict[tuple, Any]] = {}
        self.pending_time: int | None = None      # the current timestamp group, per partition
        self.pending: dict[tuple, list] = {}
        self.events_read = 0
        names = self.schema.type_names
        by_type: dict[str, list] = {}
        for v in plan.vars:
            by_type.setdefault(v.type, []).append(v)
        self._vars_of = [by_type.get(n, []) for n in names]
        self._match_plan = self._plan_matching()
        read = read_types(plan)
        self._read = [n in read for n in names]
        ids = self.schema.stream_ids
        self._reads = ReadFilter(len(names), (t for t, r in enumerate(self._read) if r),
                                 len(ids), [ids[s] for s in plan.query.streams] or None)
        self._needs_value = [(f.vars, f.attr, str(f)) for f in plan.fields if f.attr]

    def _plan_matching(self) -> list:
        """Per type: the variables it may bind, with their local test (None: no condition),
        and how to read its partition key (None: the type lacks a partition attribute)."""
        plan = self.plan
        keys = plan.partition_attrs
        out = []
        for n, vs in zip(self.schema.type_names, self._vars_of):
            declared = {a for a, _ in self.schema.event_types[n].attributes}
            out.append((tuple((v.id, _local_test(plan, v) if v.local else None) for v in vs),
                        _key_reader(keys) if all(a in declared for a in keys) else None))
        return out

    # ---- pickling: the compiled tests are rebuilt from the plan ----------------------------
    def __getstate__(self) -> dict[str, Any]:
        self._usable()
        state = self.__dict__.copy()
        del state["_match_plan"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._match_plan = self._plan_matching()

    # ---- public API ------------------------------------------------------------------------
    @property
    def skips(self) -> skips.SkipLog:
        """Skipped events by reason (``on_error="skip"``)."""
        return self.input.skips

    def process(self, events: Any, stream: str | None = None) -> Iterator[dict]:
        """Feed events (``(type, attrs)`` pairs, Event objects, a pandas DataFrame or an
        Arrow table, in time order -- or within the reorder slack); yield the rows of every
        window that closes. ``stream`` tags every event with that stream (tabular input may
        name each event's stream in ``stream_column``); FROM reads only its streams.

        A list, a tuple or a table is evaluated in batches; any other iterable one event at
        a time: a window's rows are yielded before the event after the one that closed it is
        asked for."""
        self._usable()
        if not in_hand(events):
            for typ, attrs, sid in self.input.live(events, stream):
                rows = self._record(typ, attrs, sid)
                if rows:
                    yield from rows
            return
        for batch in self.input.batches(events, stream):
            yield from self._guarded(self._run_batch(batch))

    def push(self, event_type: str, attributes: dict[str, Any],
             stream: str | None = None) -> list[dict]:
        """One event; the rows of the windows it closes."""
        self._usable()
        if self.input.reorder is not None:
            return list(self.process(iter([(event_type, attributes)]), stream))
        return self._record(event_type, attributes, self.input.stream_code(stream))

    def advance(self, t: int) -> list[dict]:
        """A watermark: no event earlier than time ``t`` will follow, so every window ending
        at or before ``t`` closes now; its rows. Lets a quiet stream (or a heartbeat) emit
        results without waiting for the next event."""
        self._usable()
        rows = [row for batch in self._watermark(t)
                for row in self._guarded(self._run_batch(batch))]
        if self.pending_time is not None and t > self.pending_time:
            self._apply_pending()
        if self.plan.window is None:
            return rows
        return rows + self._close_until(self.last_time)

    def flush(self) -> list[dict]:
        """End of stream: the events a reorder slack still holds, then the rows of every
        window still open."""
        self._usable()
        rows = [row for batch in self.input.flush()
                for row in self._guarded(self._run_batch(batch))]
        self._apply_pending()
        return rows + self._close_until(None)

    def aggregate_window(self, events: list) -> list:
        """The aggregate vector of one window of one partition given all its events
        ``(time, vars, attrs)`` at once, in time order (the Spark batch path)."""
        return reference.aggregate_with(self.aggregators, events)

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
        states = [st for parts in self.open.values() for st in parts.values()]
        return {"open_windows": len(self.open), "aggregators": len(states),
                "stored_events": sum(st.stored_events() for st in states),
                "pending_events": sum(map(len, self.pending.values()))}

    def run(self, events: Any) -> list[dict]:
        return list(self.process(events)) + self.flush()

    # ---- per batch -------------------------------------------------------------------------
    def _run_batch(self, batch) -> Iterator[dict]:
        read = self._reads.mask(batch)
        n_ok, error = (batch.n, None) if self.time_order is None \
            else self.time_order.check(batch, read)
        error = error or batch.error
        if n_ok < batch.n:
            batch.truncate(n_ok, error)
            read = read[:n_ok]
        dicts = batch.attribute_dicts(self.schema)
        tids = batch.type_ids.tolist()
        for k in np.flatnonzero(read).tolist():
            try:
                rows = self._event(tids[k], dicts[k], batch.first_position + k)
            except EventError:
                self.input.consumed(batch, k)
                raise
            if rows:
                yield from rows
        self.input.consumed(batch, batch.n)
        if error is not None:
            raise error

    def _record(self, typ: Any, attrs: Any, stream: int) -> list[dict]:
        """One event, with no batch (the record path): decoded, its time checked, then
        ``_event``; the rows of the windows it closes."""
        inp = self.input
        pos = inp.position
        tid, row = inp.decoder.decode_one(typ, attrs, stream, pos)
        rows: list[dict] = []
        if tid != SKIPPED and self._reads.reads_one(tid, stream) and (
                self.time_order is None or self.time_order.check_one(tid, row, pos)):
            rows = self._event(tid, row, pos)
        inp.position = pos + 1
        return rows

    def _event(self, tid: int, attrs: dict, pos: int) -> list[dict]:
        """One read, time-checked event: joins its timestamp group; the rows of the windows
        that close before it -- whether or not the query accepts it (event time has moved on
        either way)."""
        node = self.accept(tid, attrs, pos)
        t = pos if self.time_attribute is None else attrs[self.time_attribute]
        rows: list[dict] = []
        if t != self.pending_time:
            self._apply_pending()
            if self.plan.window is not None:
                rows = self._close_until(t)
            self.pending_time = t
        if node is None:
            return rows
        vs, pkey = node
        self.events_read += 1
        group = self.pending.get(pkey)
        if group is None:
            self.pending[pkey] = [(vs, attrs)]
        else:
            group.append((vs, attrs))
        return rows

    def accept(self, tid: int, attrs: dict, pos: int) -> tuple[tuple, tuple] | None:
        """``match``, and an event whose aggregated attribute is null is an EventError (with
        ``on_error="skip"``: skipped and counted)."""
        node = self.match(tid, attrs)
        if node is None:
            return None
        vs = node[0]
        for fvars, attr, what in self._needs_value:
            if attrs.get(attr) is None and any(v in fvars for v in vs):
                err = EventError(f"{self.schema.type_names[tid]} event has no {attr!r} value, "
                                 f"which {what.split()[0]} aggregates need", position=pos,
                                 field=attr, reason=skips.NULL_AGGREGATED)
                if not self.input.decoder.reject(err):
                    raise err
                return None
        return node

    def match(self, tid: int, attrs: dict) -> tuple[tuple, tuple] | None:
        """(variables the event matches, its partition key), or None when the event is not
        in the stream ``I`` of any partition: its type is not read, local predicates filter
        it out, or it lacks a partition attribute."""
        if not self._read[tid]:
            return None
        variables, key_of = self._match_plan[tid]
        if variables:
            vs = tuple(v for v, test in variables if test is None or test(attrs))
            if not vs:
                return None  # filtered out by local predicates: not part of the stream I
        else:
            vs = ()
        if key_of is None:
            return None  # no partition
        pkey = key_of(attrs)
        if None in pkey:
            return None  # no partition
        return vs, pkey

    # ---- windows ---------------------------------------------------------------------------
    def _first_window(self, t: int) -> int:
        """The first window containing time ``t``: the smallest k with k*slide + size > t."""
        size, slide = self.plan.window
        return (t - size) // slide + 1

    def _apply_pending(self) -> None:
        """Update the aggregators of every window holding the current timestamp group."""
        if not self.pending:
            return
        t = self.pending_time
        if self.plan.window is None:
            ks = range(1)
        else:
            ks = range(self._first_window(t), t // self.plan.window[1] + 1)
        factory = self.aggregators
        for pkey, group in self.pending.items():
            prepared = factory.prepare(group)
            for k in ks:
                parts = self.open.get(k)
                if parts is None:
                    parts = self.open[k] = {}
                agg = parts.get(pkey)
                if agg is None:
                    agg = parts[pkey] = factory.new()
                agg.update(prepared)
        self.pending.clear()

    def _close_until(self, t: int | None) -> list[dict]:
        """Close every window that ends at or before ``t`` (all of them when None)."""
        plan = self.plan
        rows: list[dict] = []
        while self.open:
            k = next(iter(self.open))
            if plan.window is None:
                if t is not None:
                    break
                bounds = None
            else:
                size, slide = plan.window
                bounds = (k * slide, k * slide + size)
                if t is not None and bounds[1] > t:
                    break
            parts = self.open.pop(k)
            rows.extend(roll_up(plan, ((pkey, agg.result()) for pkey, agg in parts.items()),
                                bounds))
        return rows
